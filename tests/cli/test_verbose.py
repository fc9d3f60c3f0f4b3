"""``-v/--verbose`` and ``--debug`` show the engine's log on stderr; without them it is quiet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import COUNTER


def _run(tmp_path: Path, *flags: str, before: tuple[str, ...] = ()) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "evoround.cli", *before, "run", str(COUNTER), "--mode", "mt",
         "--out", str(tmp_path / "runs"), *flags],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stderr


def test_verbose_and_debug_show_the_engine_log(tmp_path: Path) -> None:
    quiet = _run(tmp_path / "q")
    assert "INFO" not in quiet and "round 1: passed" not in quiet
    verbose = _run(tmp_path / "v", "-v")
    assert "INFO" in verbose and "counter mt-01 all rounds round 1: passed" in verbose
    assert "DEBUG" not in verbose
    debug = _run(tmp_path / "d", before=("--debug",))  # also before the command
    assert "DEBUG" in debug and "agent turn" in debug
