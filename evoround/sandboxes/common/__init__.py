"""What every sandbox backend shares: the ``Sandbox`` and ``SandboxProvider`` contract
and its errors, the capped capture of command output, and host-written workspace folders
(their repair for reuse, who owns them, the sweep of those a killed engine left, and
the removal of whatever an agent wrote). It imports no
backend, so ``local`` and ``docker`` both reach it without a circle.
"""

from evoround.sandboxes.common._bytecode import PREPARE as PREPARE_BYTECODE
from evoround.sandboxes.common._bytecode import local_bytecode
from evoround.sandboxes.common._capture import CappedOutput
from evoround.sandboxes.common._folder import WrittenFolder
from evoround.sandboxes.common._orphans import orphaned, sweep_orphans
from evoround.sandboxes.common._owner import (
    LEGACY_OWNER_FILE,
    OWNER_LEASE_S,
    OWNER_RECORD,
    Here,
    OwnerRecord,
    owner_dead,
    process_start,
    this_owner,
    write_owner,
)
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
from evoround.sandboxes.common._remove import remove_tree

__all__ = [
    "LEGACY_OWNER_FILE",
    "OWNER_LEASE_S",
    "OWNER_RECORD",
    "PREPARE_BYTECODE",
    "READ_LIMIT",
    "CappedOutput",
    "ExecResult",
    "Here",
    "OwnerRecord",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailable",
    "UnsafeFile",
    "VerifierPython",
    "WrittenFolder",
    "check_content",
    "local_bytecode",
    "orphaned",
    "owner_dead",
    "process_start",
    "remove_tree",
    "sweep_orphans",
    "this_owner",
    "write_owner",
]
