"""The judge model's sampling settings: sent with every judge call, locked in job.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evoround.scaffolds import serve
from evoround.verifiers.checklist import score_checks
from tests.helpers import COUNTER
from tests.verifiers.test_judge import PASS, cfg, evidence, spec


def test_judge_model_args_reach_every_call_and_the_cache_key(tmp_path: Path) -> None:
    with serve({"default": PASS}) as srv:
        score_checks([spec("a", "A.")], evidence(), cfg(srv.url, tmp_path, temperature=0.3,
                     model_args={"top_p": 0.5, "seed": 7}))  # fmt: skip
        # other settings are another judge: not answered from the first one's cache
        score_checks([spec("a", "A.")], evidence(), cfg(srv.url, tmp_path, temperature=0.3))
        reqs = srv.requests
    assert len(reqs) == 2
    assert reqs[0]["top_p"] == 0.5 and reqs[0]["seed"] == 7 and reqs[0]["temperature"] == 0.3
    assert "top_p" not in reqs[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evoround.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})  # fmt: skip


def test_judge_settings_are_locked_in_job_json(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with serve({"default": PASS}) as srv:
        base = ["run", str(COUNTER), "--mode", "mt", "--judge-model", "openai/replay-judge",
                "--judge-api-base", srv.url]  # fmt: skip
        res = _cli(*base, "--judge-temperature", "0.2", "--judge-model-arg", "top_p=0.5",
                   "--out", str(out), "--job", "j")  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
        lock = json.loads((out / "j" / "job.json").read_text())
        assert lock["judge_model_args"] == {"temperature": 0.2, "top_p": 0.5}
        res = _cli(*base, "--judge-model-arg", "top_p=0.9", "--resume", str(out / "j"))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "judge settings" in lines[0], res.stderr


def test_judge_settings_without_a_judge_are_refused(tmp_path: Path) -> None:
    res = _cli("run", str(COUNTER), "--judge-temperature", "0.5", "--out", str(tmp_path / "r"))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert (
        "--judge-temperature/--judge-reasoning-effort/--judge-model-arg need --judge-model"
        in lines[0]
    )
    assert not (tmp_path / "r").exists()
