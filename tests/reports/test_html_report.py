"""report.html and the figure data behind it, on real (tiny) runs of the counter fixture."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from evoround.reports import NO_CHECKS, NOT_RECORDED, build_report, render_html, write_html_report
from evoround.results import CheckResult, Evidence, JobView, load_job
from evoround.scaffolds import OracleScaffold, ScriptedScaffold, load_script
from tests.engine.test_controller import REGRESSOR
from tests.helpers import run


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> list[JobView]:
    """One oracle job and one regressor job (fails MT round 3, passes it under SR)."""
    tmp = tmp_path_factory.mktemp("jobs")
    script = tmp / "regressor.yaml"
    script.write_text(yaml.safe_dump(REGRESSOR))
    oracle = run(tmp, OracleScaffold(), name="oracle")
    regressor = run(tmp, ScriptedScaffold(load_script(script)), name="regressor")
    return [oracle, regressor]


def test_figures_carry_the_gap_and_first_failure(views: list[JobView]):
    data = build_report(views)
    sr_mt = data["figures"]["sr_vs_mt_by_round"]
    reg = sr_mt["series"][1]
    assert reg["mt"] == [1.0, 1.0, 0.0, 0.0] and reg["sr"] == [1.0, 1.0, 1.0, 1.0]
    ff = data["figures"]["first_failure"]["series"]
    assert ff[0]["completed"] == 1 and ff[0]["by_round"] == {}
    assert ff[1]["by_round"] == {"3": 1}
    assert ff[1]["normalised_bins"][3] == {"bin": "(0.6, 0.8]", "attempts": 1}  # 3/4
    classes = data["figures"]["failure_classes"]["series"]
    assert classes[2]["failed_rounds"] == {"regression": 1}  # regressor, MT
    sp = data["figures"]["state_penalty"]["series"][1]
    assert sp["state_penalty"] == 1.0 and sp["solvable_under_sr"] == ["counter r3"]
    json.dumps(data, allow_nan=False)  # --json must be plain JSON


def test_unrecorded_data_says_so_and_invents_nothing(views: list[JobView]):
    data = build_report(views)
    for row in data["leaderboard"]:
        assert row["tokens"] == row["cost_usd"] == NOT_RECORDED
        assert row["CSR"] == row["ISR"] == NO_CHECKS  # the counter task declares no checks
    for name in ("compliance_by_round", "tokens_per_round"):
        fig = data["figures"][name]
        assert fig["available"] is False and fig["note"] == NOT_RECORDED and fig["plotly"] is None


def _check(cid: str, result: str) -> CheckResult:
    return CheckResult(
        id=cid, category="system_prompt", kind="rule", scope="round", result=result,
        evidence=[Evidence(kind="command", excerpt=f"evidence of {cid}")],
    )  # fmt: skip


def test_checks_and_usage_appear_when_recorded(views: list[JobView]):
    oracle = views[0]
    checks = {
        1: [_check("a", "pass"), _check("b", "fail")],
        2: [_check("a", "pass"), _check("c", "not_applicable"), _check("d", "error")],
    }
    records = []
    for r in oracle.records:
        if r.mode.value == "mt" and r.round in checks:
            r = r.model_copy(update={"checks": checks[r.round]})
            traj = oracle.path / r.artifacts / "trajectory.jsonl"
            traj.write_text(
                traj.read_text()
                + json.dumps({"type": "message", "role": "assistant", "content": "hi",
                              "usage": {"input_tokens": 100, "output_tokens": 20 * r.round}})
                + "\n"
            )  # fmt: skip
        records.append(r)
    view = dataclasses.replace(oracle, records=records)
    data = build_report([view], trajectories=True)
    row = data["leaderboard"][0]
    assert row["CSR"] == 2 / 3  # n/a and error are left out
    assert row["ISR"] == 1 / 2  # round 1 had a failed check, round 2 none
    assert row["check_errors"] == 1
    assert row["tokens"] == 120 + 140
    comp = data["figures"]["compliance_by_round"]
    assert comp["available"] and comp["series"][0]["by_round"][0]["csr"] == 0.5
    assert data["figures"]["tokens_per_round"]["series"][0]["passing"]["mean"] == 130
    shown = [c for rows in data["rounds"].values() for x in rows for c in x["checks"] or []]
    assert {"status": "fail", "evidence": "command evidence of b"}.items() <= shown[1].items()
    assert "evo-rounds" in render_html(data, inline_js="")


def test_html_is_self_contained_and_has_every_section(views: list[JobView], tmp_path: Path):
    path = write_html_report(views, tmp_path / "report.html")
    html = path.read_text()
    # no network: no external scripts, styles or fonts
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"?(https?:)?//", html)
    assert "plotly.js v" in html or "Plotly" in html  # the bundle is inlined
    assert 'id="leaderboard"' in html and "<code>regressor</code>" in html
    for name in ("sr_vs_mt_by_round", "first_failure", "failure_classes", "state_penalty"):
        assert f'data-figure="{name}"' in html
    assert "Compliance decay" in html and NOT_RECORDED in html
    assert 'class="grid"' in html and "Count characters" in html  # round title from task.toml
    assert "count_lines" in html  # round 2 instruction text
    assert 'class="c-regression"' in html
    details = json.loads(
        re.search(r'<script id="evo-rounds" type="application/json">(.*?)</script>', html, re.S)[1]
    )
    failing = [d for d in details.values() if d["failing_tests"]]
    assert failing and failing[0]["failing_tests"][0]["failure_class"] == "regression"
    assert all(d["trajectory"] for d in details.values())


def test_script_data_cannot_break_out_of_its_tag(views: list[JobView]):
    data = build_report(views[:1], trajectories=True)
    data["rounds"][views[0].path.name][0]["trajectory"] = [
        {"type": "message", "content": "</script><script>alert(1)</script>"}
    ]
    html = render_html(data, inline_js="")
    assert "</script><script>alert(1)" not in html


def test_cli_report_writes_html_and_json(views: list[JobView], tmp_path: Path):
    from typer.testing import CliRunner

    from evoround.cli import app

    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(views[1].path), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert out.is_file() and "report:" in res.output
    res = CliRunner().invoke(app, ["report", str(views[1].path), "--json", "--no-html"])
    data = json.loads(res.stdout)
    assert set(data["report"]["figures"]) >= {"sr_vs_mt_by_round", "compliance_by_round"}
    assert load_job(views[1].path).records  # untouched
