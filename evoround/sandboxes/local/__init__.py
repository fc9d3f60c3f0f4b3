"""The local backend: a directory per attempt, commands as host subprocesses, hardened
with bubblewrap or ``unshare`` where the host allows (see ``_isolation``), capped by a
cgroup per sandbox (``_cgroup``), with keyrings refused (``_seccomp``) and the engine's
own file access kept inside the sandbox (``_confine``).
"""

from evoround.sandboxes.local._isolation import choose_isolation
from evoround.sandboxes.local._provider import LocalProvider
from evoround.sandboxes.local._sandbox import LocalSandbox

__all__ = ["LocalProvider", "LocalSandbox", "choose_isolation"]
