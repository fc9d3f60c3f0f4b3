"""compare: per task and per round differences between two jobs."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from evoround.cli import app
from evoround.reports import compare_jobs
from evoround.results import Mode
from evoround.scaffolds import OracleScaffold, ScriptedScaffold, load_script
from tests.engine.test_controller import REGRESSOR
from tests.helpers import run


def test_compare_finds_the_flipped_rounds(tmp_path: Path):
    script = tmp_path / "regressor.yaml"
    script.write_text(yaml.safe_dump(REGRESSOR))
    a = run(tmp_path, OracleScaffold(), modes=(Mode.mt,), name="a")
    b = run(tmp_path, ScriptedScaffold(load_script(script)), modes=(Mode.mt,), name="b")
    c = compare_jobs(a, b)
    assert [(f.round, f.a, f.b, f.direction) for f in c.flips] == [
        (3, "passed", "regression", "broken"),
        (4, "passed", "not_run", "broken"),  # fail-stop: never reached counts as failed
    ]
    assert c.summary["mt_at_k"] == {"a": 1.0, "b": 0.5, "delta": -0.5}
    assert c.tasks[0].broken == 2 and not c.tasks[0].digest_changed
    back = compare_jobs(b, a)
    assert {f.direction for f in back.flips} == {"fixed"}

    res = CliRunner().invoke(app, ["compare", str(a.path), str(b.path), "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["flips"]) == 2
    res = CliRunner().invoke(app, ["compare", str(a.path), str(b.path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "Flipped rounds (2)" in res.output


def _windowed(tmp_path: Path, name: str, recs, window) -> Path:
    from tests.reports.test_export import make_job

    job = make_job(tmp_path, name, recs, {"t": 3}, 1, "continue")
    cfg = json.loads((job / "job.json").read_text())
    cfg["rounds_window"] = window
    (job / "job.json").write_text(json.dumps(cfg))
    return job


def test_compare_honours_the_rounds_window_and_refuses_different_ones(tmp_path: Path):
    import pytest

    from evoround.reports import CompareError
    from evoround.results import load_job
    from tests.reports.test_export import rec

    # Both jobs ran rounds 2-3 only (round 1 fast-forwarded); A fails 2, B fails 3.
    a = _windowed(tmp_path, "a", [rec("t", 1, 2, False, 3), rec("t", 1, 3, True, 3)], [2, 3])
    b = _windowed(tmp_path, "b", [rec("t", 1, 2, True, 3), rec("t", 1, 3, False, 3)], [2, 3])
    c = compare_jobs(load_job(a), load_job(b), resamples=0)
    # Round 1 lies outside the window: never a "not_run" flip, never in the figures.
    assert sorted((f.round, f.direction) for f in c.flips) == [(2, "fixed"), (3, "broken")]
    assert c.paired.figures["MT@k"].a == pytest.approx(0.5)  # 1 of the window's 2 rounds
    assert c.paired.figures["MT@k"].b == pytest.approx(0.5)
    whole = _windowed(tmp_path, "whole", [rec("t", 1, 1, True, 3)], None)
    with pytest.raises(CompareError, match="a covers rounds 2-3 but whole covers all rounds"):
        compare_jobs(load_job(a), load_job(whole))
    res = CliRunner().invoke(app, ["compare", str(a), str(whole)])
    assert res.exit_code == 2 and "same window" in res.output
    assert "Traceback" not in res.output
