"""A bytecode cache for the verifier's interpreter that the harness prepares and the agent
cannot write.

The verifier's runner starts with ``-X pycache_prefix=DIR -B``: Python then reads bytecode
only from ``DIR`` (never from a ``__pycache__`` beside a source, which the workspace could
hold) and writes none. Before, ``DIR`` was a fresh empty folder per run, so every
verification compiled the standard library, pytest and pluggy from source (about 1-2 s).
Now ``DIR`` is a cache that the harness fills once per interpreter (local) or task image
(Docker), outside any sandbox, with **checked-hash** bytecode (PEP 552) of the modules a
pytest session imports:

- Only files of the interpreter's own installation are compiled (its prefixes and its
  ``sysconfig`` paths), never a workspace, task or temporary file.
- A checked-hash ``.pyc`` is used only when the hash of the source it sits for matches the
  source read at import: a changed source is compiled afresh, never replaced by the
  cache's code. A cache entry therefore can only ever stand for the very source beside it.
- The agent cannot write the cache: local sandboxes bind it read-only into the view (it
  lives under ``EVOROUND_HOME``, which every hardened command has covered), Docker mounts
  its volume read-only. Nothing in a sandbox ever runs while it is filled, so an agent
  cannot poison it in one round to forge the next.

:data:`PREPARE` is the filler: ``python -I -c PREPARE TARGET [FROM=TO ...]`` runs a small
pytest session in a temporary folder, then compiles every imported module of the
installation into ``TARGET`` as ``pycache_prefix`` lays it out (and again under each
``TO`` for a source under ``FROM``: the pristine ``/usr`` of Docker's commit mode).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from evoround.programs import program_text

PREPARE = program_text("evoround.sandboxes.common", "bytecode_fill.py")
"""The filler (see the module docstring); prints how many files it compiled."""

PREPARE_TIMEOUT = 300.0


def cache_key(python: str) -> str:
    """The cache's name for an interpreter: its resolved path and version, and the
    versions of pytest and pluggy beside it (sources are checked by hash at every import,
    so a stale entry costs a compile, never a wrong answer)."""
    probe = subprocess.run(
        [
            python,
            "-I",
            "-c",
            "import sys, importlib.util, importlib.metadata as m\n"
            "v = lambda n: next(iter([d.version for d in m.distributions(name=n)]), '-')\n"
            "print(sys.version, importlib.util.MAGIC_NUMBER.hex(), v('pytest'), v('pluggy'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    text = f"{os.path.realpath(python)}\n{probe.stdout.strip()}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


_MADE: dict[tuple[str, Path], Path | None] = {}
_LOCK = threading.Lock()


def local_bytecode(python: str, home: Path) -> Path | None:
    """:func:`_local_bytecode`, once per interpreter and home in this process."""
    with _LOCK:
        if (python, home) not in _MADE:
            _MADE[(python, home)] = _local_bytecode(python, home)
        return _MADE[(python, home)]


def _local_bytecode(python: str, home: Path) -> Path | None:
    """The bytecode cache of the host interpreter ``python`` under ``home`` (made on first
    use: filled in a temporary folder, made read-only, renamed into place); None when it
    cannot be made (the verifier then compiles from source as before)."""
    try:
        key = cache_key(python)
        final = home / "bytecode" / key
        if final.is_dir():
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".filling-", dir=final.parent))
        try:
            done = subprocess.run(
                [python, "-I", "-B", "-c", PREPARE, str(tmp)],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=PREPARE_TIMEOUT,
                check=False,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
            if done.returncode != 0:
                return None
            _read_only(tmp)
            with contextlib.suppress(OSError):  # another process filled it first: keep that
                tmp.rename(final)
        finally:
            if tmp.exists():
                _writable_again(tmp)
                shutil.rmtree(tmp, ignore_errors=True)
        return final if final.is_dir() else None
    except (OSError, subprocess.SubprocessError):
        return None


def _read_only(root: Path) -> None:
    for d, dirs, files in os.walk(root):
        for f in files:
            os.chmod(os.path.join(d, f), 0o444)
        for sub in dirs:
            os.chmod(os.path.join(d, sub), 0o555)
    os.chmod(root, 0o555)


def _writable_again(root: Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(root, 0o755)
    for d, dirs, _files in os.walk(root):
        for sub in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(d, sub), 0o755)
