"""Shared test helpers: fixture tasks on disk, a one-call job runner and the CLI in-process."""

from __future__ import annotations

import io
import logging
import os
import shutil
import signal
import sys
import tempfile
import traceback
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from evoround.engine import run_job
from evoround.results import JobView, Mode, load_job
from evoround.scaffolds import Scaffold
from evoround.snapshots import SnapshotStore
from evoround.tasks import Task, load_task

FIXTURES = Path(__file__).parent / "fixtures"
COUNTER = FIXTURES / "tasks" / "counter"


def copy_counter(tmp_path: Path) -> Path:
    dest = tmp_path / "counter"
    shutil.copytree(COUNTER, dest)
    return dest


def run(
    tmp_path: Path,
    scaffold: Scaffold,
    tasks: list[Task] | None = None,
    modes: tuple[Mode, ...] = (Mode.mt, Mode.sr),
    attempts: int = 1,
    name: str = "job",
    sandbox: str = "local",
) -> JobView:
    job_dir = tmp_path / "runs" / name
    run_job(
        tasks or [load_task(COUNTER)],
        scaffold,
        job_dir=job_dir,
        attempts=attempts,
        modes=list(modes),
        sandbox=sandbox,
        store=SnapshotStore(tmp_path / "store"),
    )
    return load_job(job_dir)


@dataclass(frozen=True)
class CliResult:
    """What a finished ``evoround`` command left: the same three fields a subprocess gives."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def _fd_captured(fd: int) -> Iterator[Callable[[], str]]:
    """Bytes written to ``fd`` itself (a child process, C code) while the block runs."""
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(fd)
        os.dup2(sink.fileno(), fd)
        try:
            yield lambda: (sink.seek(0), sink.read())[1].decode(errors="replace")
        finally:
            os.dup2(saved, fd)
            os.close(saved)


@contextmanager
def _process_state(
    args: tuple[str, ...], env: Mapping[str, str], cwd: Path | None
) -> Iterator[None]:
    """The process-wide state a command may read or change, set as a fresh ``evoround`` would
    see it and put back afterwards: argv, the environment, the cwd, the SIGTERM handler,
    ``sys.excepthook`` (typer sets it), ``__main__`` and the root logger (pytest's capture handlers would
    swallow a warning that a real process prints on stderr through logging's last resort)."""
    saved_env, saved_argv, saved_cwd = os.environ.copy(), sys.argv, os.getcwd()
    saved_main = sys.modules["__main__"]
    saved_term, saved_hook = signal.getsignal(signal.SIGTERM), sys.excepthook
    root, evo = logging.getLogger(), logging.getLogger("evoround")
    saved_handlers, saved_levels = root.handlers[:], (root.level, evo.level)
    os.environ.update(env)
    sys.argv = ["evoround", *args]
    # click names the program from __main__: the installed script's (a file), not pytest's
    sys.modules["__main__"] = types.ModuleType("__main__")
    root.handlers = []
    root.setLevel(logging.WARNING)
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        root.handlers = saved_handlers
        root.setLevel(saved_levels[0])
        evo.setLevel(saved_levels[1])
        signal.signal(signal.SIGTERM, saved_term)
        sys.excepthook, sys.argv = saved_hook, saved_argv
        sys.modules["__main__"] = saved_main
        os.environ.clear()
        os.environ.update(saved_env)


@contextmanager
def _fresh_warnings(err: io.StringIO) -> Iterator[None]:
    """Warnings as a fresh interpreter shows them (Python's default filters), printed on
    stderr where it prints them, instead of into pytest's warning summary: a warning is a
    second stderr line the sweeps must see."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for quiet in (
            DeprecationWarning,
            PendingDeprecationWarning,
            ImportWarning,
            ResourceWarning,
        ):
            warnings.filterwarnings("ignore", category=quiet)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        try:
            yield
        finally:
            for w in caught:
                err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno))


def _exit_code(code: object, err: io.StringIO) -> int:
    """What the interpreter makes of ``sys.exit(code)``: None is 0, a non-int is printed, 1."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=err)
    return 1


def evoround_cli(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> CliResult:
    """``evoround ARGS`` in this interpreter, through the console entry point itself
    (``evoround.cli.main``: its one-line error handling and exit codes), in ~0.2 s where a
    fresh interpreter takes ~4 s. Environment as a subprocess of the suite would get it
    (``COLUMNS=200`` plus ``env``); stdout and stderr captured at both the Python and the
    file-descriptor level, so what a child process prints counts too, and so do warnings
    (shown as a fresh interpreter shows them, not in pytest's summary). An exception that
    escapes ``main`` is a traceback on stderr and exit 1, as in a real process. The
    subprocess form stays in tests/cli/test_entry_point.py."""
    from evoround.cli import main

    out, err = io.StringIO(), io.StringIO()
    state = _process_state(args, {"COLUMNS": "200", **(env or {})}, cwd)
    with state, _fd_captured(1) as fd_out, _fd_captured(2) as fd_err:
        with redirect_stdout(out), redirect_stderr(err), _fresh_warnings(err):
            try:
                main()
                code = 0
            except SystemExit as e:
                code = _exit_code(e.code, err)
            except Exception:
                err.write(traceback.format_exc())
                code = 1
        return CliResult(code, out.getvalue() + fd_out(), err.getvalue() + fd_err())
