"""What every sandbox backend shares: the ``Sandbox`` and ``SandboxProvider`` contract
and its errors, the capped capture of command output, and host-written workspace folders
(their repair for reuse, and the sweep of those a killed engine left). It imports no
backend, so ``local`` and ``docker`` both reach it without a circle.
"""

from evoround.sandboxes.common._capture import CappedOutput
from evoround.sandboxes.common._folder import WrittenFolder
from evoround.sandboxes.common._orphans import OWNER_FILE, sweep_orphans
from evoround.sandboxes.common._protocol import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxUnavailable,
    UnsafeFile,
    VerifierPython,
    check_content,
)

__all__ = [
    "OWNER_FILE",
    "READ_LIMIT",
    "CappedOutput",
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailable",
    "UnsafeFile",
    "VerifierPython",
    "WrittenFolder",
    "check_content",
    "sweep_orphans",
]
