"""The thin subprocess leg of the CLI sweeps: a real interpreter behaves as the in-process runs.

tests/cli/test_malformed_sweep.py and tests/cli/test_bad_input.py call ``evoround.cli.main``
in the test's own interpreter (``tests.helpers.evoround_cli``, ~0.2 s a case instead of ~4 s).
That is only as good as its likeness to a fresh process, so a handful of cases, one per path
through the entry point (a usage error from click, a task error from a command, a bad
``EVOROUND_*`` variable, no arguments, help, a job that runs), are run both ways here and must
give the same exit code and the same output. One case goes through the installed ``evoround``
script, the way a user starts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import COUNTER, evoround_cli

CLI = [sys.executable, "-m", "evoround.cli"]


def _subprocess(argv: list[str], args: list[str], env: dict[str, str], cwd: Path):
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
    )


def _same(text: str) -> list[str]:
    """Output lines as both forms print them; ``python -m`` names itself in a usage hint."""
    return [ln.rstrip() for ln in text.replace("python -m evoround.cli", "evoround").splitlines()]


def _bad_toml(tmp: Path) -> list[str]:
    task = tmp / "counter"
    shutil.copytree(COUNTER, task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("activity =", "activty ="))
    return ["run", str(task), "--agent", "nop", "--mode", "mt", "--out", str(tmp / "runs")]


def _nop_run(tmp: Path) -> list[str]:
    return ["tasks", "list", str(COUNTER)]


# (id, argv made in the case's folder, extra environment, exit code both must give)
CASES = [
    ("usage-error", lambda t: ["run", str(COUNTER), "--sandbox", "vm"], {}, 2),
    ("no-such-command", lambda t: ["runn"], {}, 2),
    ("task-error", _bad_toml, {}, 2),
    ("settings-error", lambda t: ["config"], {"EVOROUND_INFRA_RETRIES": "abc"}, 2),
    ("no-arguments", lambda t: [], {}, 2),
    ("help", lambda t: ["run", "--help"], {}, 0),
    ("success", _nop_run, {}, 0),
]


@pytest.mark.parametrize(("make", "env", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_fresh_interpreter_and_the_in_process_run_agree(
    tmp_path: Path, make, env: dict[str, str], code: int
) -> None:
    args = make(tmp_path)
    env = {"EVOROUND_HOME": str(tmp_path / "home"), **env}
    real = _subprocess(CLI, args, env, tmp_path)
    inproc = evoround_cli(*args, env=env, cwd=tmp_path)
    assert real.returncode == code, real.stderr[-2000:]
    assert inproc.returncode == code, inproc.stderr[-2000:]
    assert _same(inproc.stderr) == _same(real.stderr)
    assert _same(inproc.stdout) == _same(real.stdout)


def test_the_installed_script_is_the_same_command(tmp_path: Path) -> None:
    """``evoround`` as pip installed it (the ``[project.scripts]`` entry), not ``python -m``."""
    script = shutil.which("evoround")
    if script is None:
        pytest.skip("no `evoround` script on PATH: pip install -e '.[dev]' installs it")
    args = _bad_toml(tmp_path)
    real = _subprocess([script], args, {}, tmp_path)
    inproc = evoround_cli(*args, cwd=tmp_path)
    assert real.returncode == inproc.returncode == 2, real.stderr
    assert _same(real.stderr) == _same(inproc.stderr)
    assert len(real.stderr.strip().splitlines()) == 1
