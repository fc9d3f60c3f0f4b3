"""Running unattended (issue 30): a CI log, ``> log 2>&1``, ``nohup``, ``cmd &`` in a script.

Plain progress when stderr is not a terminal (a log never looks hung), SIGINT honoured even
when the job inherited it ignored, and ``--version``. Real subprocesses, real jobs.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from evoround.results import read_results
from tests.helpers import COUNTER

CLI = [sys.executable, "-m", "evoround.cli"]
ROUND_LINE = re.compile(
    r"^\[\d\d:\d\d:\d\d\] oracle: counter (mt|sr)-01 round (\d) passed \((\d)/8\)$"
)


def test_stderr_to_a_file_gets_one_line_per_round_a_heartbeat_and_the_summary(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    with log.open("w") as f:  # `> log 2>&1`: neither stream is a terminal
        res = subprocess.run(
            [*CLI, "run", str(COUNTER), "--agent", "oracle", "--out", str(tmp_path / "runs"),
             "--job", "j"],
            stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300,
            env={**os.environ, "EVOROUND_HEARTBEAT_SEC": "0.5"},
        )  # fmt: skip
    text = log.read_text()
    assert res.returncode == 0, text[-3000:]
    lines = text.splitlines()
    rounds = [m for line in lines if (m := ROUND_LINE.match(line))]
    assert len(rounds) == 8, text[:3000]  # 4 MT rounds and 4 SR rounds, one line each
    assert sorted(int(m.group(3)) for m in rounds) == list(range(1, 9))  # done/total climbs
    assert {(m.group(1), m.group(2)) for m in rounds} == {
        (mode, str(r)) for mode in ("mt", "sr") for r in range(1, 5)
    }
    assert lines[0].endswith("oracle: job started: 8 rounds in 5 units"), lines[0]
    assert any(" oracle: alive: " in line and "rounds · running: " in line for line in lines)
    end = next(
        i
        for i, line in enumerate(lines)
        if "oracle: ended: 8/8 rounds settled, 8 recorded (passed=8)" in line
    )
    assert any("Leaderboard" in line for line in lines[end:])  # the report follows the progress
    assert "\x1b[" not in text  # no terminal control codes in a log
    again = subprocess.run(
        [*CLI, "run", "--resume", str(tmp_path / "runs" / "j"), "--progress", "plain"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    # a resumed finished job: nothing ran, every round settled once (was 8/16)
    assert "job started: 8 rounds in 5 units (5 of 5 units done already)" in again.stderr
    assert "ended: 8/8 rounds settled, 0 recorded (none)" in again.stderr, again.stderr


def test_progress_none_prints_no_progress(tmp_path: Path) -> None:
    res = subprocess.run(
        [*CLI, "run", str(COUNTER), "--agent", "oracle", "--out", str(tmp_path / "runs"),
         "--mode", "sr", "--progress", "none"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "round" not in res.stderr and "alive" not in res.stderr, res.stderr
    assert "Leaderboard" in res.stdout


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` in a script does


def test_sigint_stops_a_job_that_inherited_it_ignored_and_resume_completes(
    tmp_path: Path,
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "slow.yaml"
    slow = f"touch {marks}/r2; [ -e {marks}/go ] || sleep 60"
    script.write_text(yaml.safe_dump({"tasks": {"counter": {
        "1": ["oracle"], "2": ["oracle", {"run": slow}], "*": ["oracle"]}}}))  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    # the agent signals through marker files on the host: no local isolation here
    env = {**os.environ, "COLUMNS": "400", "EVOROUND_LOCAL_ISOLATION": "none"}
    proc = subprocess.Popen(
        [*CLI, "run", str(COUNTER), "--agent", "scripted", "--script", str(script),
         "--mode", "mt", "--job", "j", "--grace", "0"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=_ignore_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (marks / "r2").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    records, bad = read_results(work / "runs" / "j" / "results.jsonl")
    assert [r.round for r in records] == [1] and records[0].passed and not bad, err[-2000:]
    printed = err.split("continue with: ", 1)[1].strip().splitlines()[0]
    argv = shlex.split(printed)
    assert argv[:4] == ["evoround", "run", "--resume", "runs/j"], printed
    (marks / "go").touch()
    res = subprocess.run([*CLI, *argv[1:]], cwd=work, capture_output=True, text=True,
                         timeout=300, env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    records = read_results(work / "runs" / "j" / "results.jsonl")[0]
    assert [r.round for r in records] == [1, 2, 3, 4] and all(r.passed for r in records)


def test_version_prints_the_installed_version_fast() -> None:
    from importlib.metadata import version

    t0 = time.monotonic()
    res = subprocess.run([*CLI, "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"evoround {version('evoround')}\n"
    assert time.monotonic() - t0 < 10
