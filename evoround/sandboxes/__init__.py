"""Where an attempt runs: the ``Sandbox`` protocol and its backends.

The contract both backends pass lives in the sub-room ``evoround.sandboxes.common``;
``local`` (a directory, for trusted agents) is ``evoround.sandboxes.local``; ``docker`` is
``evoround.sandboxes.docker``, imported on demand by :func:`make_provider`. Sandboxes know
nothing of agents, reports or the job that uses them.
"""

from evoround.sandboxes._providers import (
    docker_reachable,
    job_folder_key,
    make_provider,
    sweep_job_folder,
)
from evoround.sandboxes.common import (
    READ_LIMIT,
    ExecResult,
    Here,
    OwnerRecord,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxUnavailable,
    UnsafeFile,
    VerifierPython,
    owner_dead,
    process_start,
    this_owner,
)
from evoround.sandboxes.local import LocalProvider, LocalSandbox, choose_isolation

__all__ = [
    "READ_LIMIT",
    "ExecResult",
    "Here",
    "LocalProvider",
    "LocalSandbox",
    "OwnerRecord",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailable",
    "UnsafeFile",
    "VerifierPython",
    "choose_isolation",
    "docker_reachable",
    "job_folder_key",
    "make_provider",
    "owner_dead",
    "process_start",
    "sweep_job_folder",
    "this_owner",
]
