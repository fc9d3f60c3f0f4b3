"""Where an attempt runs: the ``Sandbox`` protocol and its backends.

``local`` (a directory, for trusted agents) is here; ``docker`` is the sub-room
``evoround.sandboxes.docker``, imported on demand by :func:`make_provider`. Sandboxes know
nothing of agents, reports or the job that uses them.
"""

from evoround.sandboxes._isolation import choose_isolation
from evoround.sandboxes._local import LocalProvider, LocalSandbox
from evoround.sandboxes._protocol import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxUnavailable,
    UnsafeFile,
    VerifierPython,
)
from evoround.sandboxes._providers import docker_reachable, make_provider

__all__ = [
    "READ_LIMIT",
    "ExecResult",
    "LocalProvider",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailable",
    "UnsafeFile",
    "VerifierPython",
    "choose_isolation",
    "docker_reachable",
    "make_provider",
]
