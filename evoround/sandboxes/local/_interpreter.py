"""The ``sys.path`` the host interpreter has with ``site``, so the verifier can start it
without ``site`` and lose no import.

Why: ``python -I`` runs ``site``, which executes every ``.pth`` file of the installation.
On a developer's or CI machine those include editable installs' import hooks and other
start-up code: here 27 ms of a 39 ms interpreter start, paid by every verification. The
verifier's runner is started with ``-I -S`` instead and puts these entries back after the
interpreter's own (``VerifierPython.path_last``), so the tested code imports what it
imported before: the directories ``site`` and the ``.pth`` files add. What ``-S`` leaves
out is the code a ``.pth`` line runs (import hooks, such as an editable install's finder)
and ``sitecustomize``; the builtins ``site`` defines (``exit``, ``quit``, ``help``,
``copyright``, ``credits``, ``license``) the runner defines itself. A virtual environment's
interpreter keeps ``site``: there ``site`` also sets ``sys.prefix``. Docker's commit mode
has always started its pristine interpreter without ``site``.
"""

from __future__ import annotations

import json
import subprocess
import threading

_PROBE = (
    "import json, sys\n"
    "venv = (sys.prefix, sys.exec_prefix) != (sys.base_prefix, sys.base_exec_prefix)\n"
    "print(json.dumps(None if venv else [p for p in sys.path if p]))"
)
_PATHS: dict[str, tuple[str, ...] | None] = {}
_LOCK = threading.Lock()


def site_path(python: str) -> tuple[str, ...] | None:
    """``sys.path`` of ``python -I`` (with ``site``), probed once per interpreter in this
    process; None when it cannot be read or ``python`` is a virtual environment's (there
    ``site`` also sets ``sys.prefix``, which code may read): the verifier then keeps
    ``site``."""
    with _LOCK:
        if python not in _PATHS:
            _PATHS[python] = _probe(python)
        return _PATHS[python]


def _probe(python: str) -> tuple[str, ...] | None:
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
        paths = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):  # or None
        return None
    return tuple(paths)
