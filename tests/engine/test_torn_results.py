"""A job folder whose results.jsonl has a torn middle line or doubled records: `report`
warns in one line and counts nothing twice; `run --resume` re-runs the rounds whose record
is unreadable (an MT attempt from the round before the gap) and the figures then equal
those of a clean run. Real processes, the oracle on the counter task, the local sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from evoround.results import read_results
from tests.helpers import COUNTER

CLI = [sys.executable, "-m", "evoround.cli"]


def evoround(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "EVOROUND_HOME": str(home)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def _figures(job: Path, home: Path) -> dict[str, Any]:
    res = evoround("report", "--json", "--resamples", "0", str(job), home=home)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    job_data = data["jobs"][0] if "jobs" in data else data
    return {"metrics": job_data["metrics"], "records": job_data["records"]}


def _warnings(job: Path, home: Path) -> list[str]:
    res = evoround("report", "--no-html", "--resamples", "0", str(job), home=home)
    assert res.returncode == 0, res.stderr
    return [ln for ln in res.stdout.splitlines() if ln.startswith("warning:")]


def test_torn_and_doubled_records(tmp_path: Path) -> None:
    home, runs = tmp_path / "h", tmp_path / "runs"
    res = evoround("run", str(COUNTER), "--out", str(runs), "--job", "clean", home=home)
    assert res.returncode == 0, res.stderr
    clean = _figures(runs / "clean", home)
    assert clean["metrics"]["mt_at_k"] == 1.0 and clean["records"] == 8
    assert _warnings(runs / "clean", home) == []

    doubled = tmp_path / "doubled"  # every record twice, as two concurrent runs left them
    shutil.copytree(runs / "clean", doubled)
    text = (doubled / "results.jsonl").read_text()
    (doubled / "results.jsonl").write_text(text + text)
    (warning,) = _warnings(doubled, home)
    assert "8 duplicate record(s) (line 9, 10, 11, 12, 13 and 3 more) counted once" in warning
    assert _figures(doubled, home) == clean

    torn = runs / "clean"  # torn in place: a resume continues the job of its own name
    results = torn / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    order = [(json.loads(ln)["mode"], json.loads(ln)["round"]) for ln in lines]
    mt2, sr3 = order.index(("mt", 2)), order.index(("sr", 3))
    lines[mt2] = lines[mt2][:60] + "\n"
    lines[sr3] = lines[sr3][:60] + "\n"
    results.write_text("".join(lines))
    (warning,) = _warnings(torn, home)
    assert "2 unreadable line(s)" in warning and "--resume re-runs" in warning, warning
    assert _figures(torn, home)["metrics"] != clean["metrics"]  # MT@k 25: r2 "missing"

    res = evoround("run", "--resume", str(torn), home=home)
    assert res.returncode == 0, res.stderr
    assert "moved 2 unreadable line(s), 2 record(s) after a missing round" in res.stderr
    assert _warnings(torn, home) == []
    assert _figures(torn, home) == clean
    records, problems = read_results(results)
    assert problems == [] and set(Counter(r.key for r in records).values()) == {1}
    resumed = {r.round: r.resumed_from for r in records if r.mode.value == "mt"}
    assert resumed == {1: None, 2: 1, 3: None, 4: None}  # continued after round 1
    assert len((torn / "results.set-aside.jsonl").read_text().splitlines()) == 4
