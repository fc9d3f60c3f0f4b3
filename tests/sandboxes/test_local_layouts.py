"""Where the task folder and the install sit must not change the score (issue 33, item 6).

A newcomer's layout, ``python -m venv venv; pip install evoround; evoround tasks new t``,
puts the task folder beside the venv. A hardened local sandbox covers the task's parent
(other copies of the task live there), and with it the venv: the verifier's interpreter
could not start (exit 127), and every round was ``failed`` and charged to the agent. The
engine's Python is now put back read-only wherever a cover hides it (a task folder inside
it covered again), and a command the harness cannot start is the harness's error.

Each case runs a real venv (``--system-site-packages``: cheap, pytest comes from the base)
as the engine's interpreter, in a subprocess, under bubblewrap and under unshare.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, SandboxError
from evoround.sandboxes.local._isolation import bwrap_available, namespaces_available
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import evoround_cli

ROOT = Path(__file__).resolve().parents[2]
MECHANISMS = ("bwrap", "unshare")

# Run by the venv's interpreter: a sandbox of the task, the verifier's Python started in
# it (with pytest), and the task folder still out of sight.
PROBE = r"""
import json, sys
from pathlib import Path
from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
task, work = load_task(Path(sys.argv[1])), Path(sys.argv[2])
p = LocalProvider(SnapshotStore(work / "store"), work / "sb")
sb = p.create(task, "probe")
try:
    r = sb.exec([*sb.verifier_python().argv, "-c", "import pytest, sys; print(sys.prefix)"])
    seen = sb.exec(["sh", "-c", 'test -e "$0/task.toml" && echo visible || echo hidden',
                    str(task.path)])
    print(json.dumps({"isolation": p.isolation, "code": r.exit_code, "out": r.stdout,
                      "err": r.stderr, "task": seen.stdout.strip()}))
finally:
    sb.close()
    p.close()
"""


def _works(mechanism: str) -> bool:
    return bwrap_available() if mechanism == "bwrap" else namespaces_available()


def _need(mechanism: str) -> None:
    if not _works(mechanism) and os.environ.get("CI") != "true":
        pytest.skip(f"{mechanism} does not work here")


@pytest.fixture(scope="module")
def shm_dir() -> Iterator[Path]:
    """A folder on another mount than ``tmp_path`` (``/dev/shm``) when there is one."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        pytest.skip("no /dev/shm")
    d = Path(tempfile.mkdtemp(prefix="evoround-layout-", dir=shm))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _venv(where: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
        check=True,
        capture_output=True,
    )
    return where / "bin" / "python"


def _task(where: Path) -> Path:
    res = evoround_cli("tasks", "new", str(where))
    assert res.returncode == 0, res.stderr
    return where


def _env(tmp_path: Path, mechanism: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "EVOROUND_HOME": str(tmp_path / "home"),
        "EVOROUND_LOCAL_ISOLATION": mechanism,
    }


LAYOUTS = {
    "beside": ("proj/venv", "proj/t"),
    "one-deeper": ("proj/venv", "proj/tasks/t"),
    "task-inside-venv": ("proj/venv", "proj/venv/t"),
}
"""(venv, task folder) below ``tmp_path``. A venv inside the task folder is no task at all
(its links leave the folder: the loader refuses it)."""


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_verifier_python_starts_wherever_the_task_sits(
    tmp_path: Path, mechanism: str, layout: str
) -> None:
    _need(mechanism)
    venv_at, task_at = LAYOUTS[layout]
    task = _task(tmp_path / task_at)  # first: `tasks new` wants a new folder
    python = _venv(tmp_path / venv_at)
    out = _probe(python, task, tmp_path, mechanism)
    assert out["code"] == 0, out
    assert str(out["out"]).strip() == str(tmp_path / venv_at), out  # the venv's own interpreter
    assert out["task"] == "hidden", out  # the task folder (even inside the venv) stays covered


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_task_on_another_mount(tmp_path: Path, shm_dir: Path, mechanism: str) -> None:
    _need(mechanism)
    python = _venv(tmp_path / "venv")
    task = _task(shm_dir / f"t-{mechanism}")
    out = _probe(python, task, tmp_path, mechanism)
    assert out["code"] == 0 and out["task"] == "hidden", out


def _probe(python: Path, task: Path, tmp_path: Path, mechanism: str) -> dict[str, object]:
    res = subprocess.run(
        [str(python), "-c", PROBE, str(task), str(tmp_path / "work")],
        env=_env(tmp_path, mechanism),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["isolation"] == mechanism
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_oracle_scores_100_with_the_task_beside_the_venv(
    tmp_path: Path, mechanism: str
) -> None:
    """The newcomer's layout end to end: the oracle passes every round, exit 0."""
    _need(mechanism)
    proj = tmp_path / "proj"
    python = _venv(proj / "venv")
    _task(proj / "t")
    main = "import sys; from evoround.cli import main; sys.argv[0] = 'evoround'; main()"
    res = subprocess.run(
        [str(python), "-c", main, "run", "t", "-a", "oracle", "--mode", "mt", "--json"],
        cwd=proj,
        env={**_env(tmp_path, mechanism), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["isolation"] == mechanism
    assert summary["metrics"]["mt_at_k"] == 1.0, summary["metrics"]
    assert summary["metrics"]["failed_rounds_by_class"] == {}, summary["metrics"]


@pytest.fixture(params=MECHANISMS)
def provider(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalProvider]:
    _need(request.param)
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", request.param)
    p = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    yield p
    p.close()


def test_a_program_the_harness_cannot_start_is_its_error(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """A program out of the view (here: in the hidden task folder) cannot start: a
    ``SandboxError`` naming it (an infra error of the round), never an exit code charged to
    the command; a command that itself exits 127 keeps its 127."""
    task = load_task(_task(tmp_path / "proj" / "t"))
    prog = task.path / "tool"
    prog.write_text("#!/bin/sh\necho ran\n")
    prog.chmod(0o755)
    sb = provider.create(task, "x")
    try:
        with pytest.raises(SandboxError, match="could not start the command") as err:
            sb.exec([str(prog)])
        assert str(prog) in str(err.value) or provider.isolation == "bwrap", err.value
        assert sb.exec("exit 127").exit_code == 127
        assert sb.exec(["sh", "-c", "exec /nonexistent/x"]).exit_code == 127
    finally:
        sb.close()
