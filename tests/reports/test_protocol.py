"""The Protocol table: on-fail mode, round window, base-image substitutions, min_reward,
reward strategy and the agent's notes, the same in the text report, report.html and JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console

from evoround.reports import build_report, job_json, print_report, render_html
from evoround.results import load_job
from evoround.tasks.importers import import_tasks
from tests.helpers import FIXTURES
from tests.reports.test_export import make_job, rec


def _job(tmp_path: Path) -> Path:
    [res] = import_tasks(FIXTURES / "harbor" / "multi-step-greet", tmp_path / "greet")
    recs = [rec("greet", 1, 1, True, 3), rec("greet", 1, 2, False, 3, reward=0.75)]
    job = make_job(tmp_path, "proto", recs, {"greet": 3}, 1, "continue")
    cfg = json.loads((job / "job.json").read_text())
    cfg["tasks"]["greet"]["path"] = str(res.dest)
    cfg["rounds_window"] = [2, None]
    cfg["base_image_map"] = {"ubuntu:24.04": "evoround-base:bookworm"}
    cfg["base_images"] = {"greet": "ubuntu:24.04 -> evoround-base:bookworm (map)"}
    cfg["agent_notes"] = ["starts every round in a fresh session"]
    (job / "job.json").write_text(json.dumps(cfg))
    return job


def _expected(text: str) -> None:
    for part in (
        "continue (later rounds run in the same workspace",
        "2-end (rounds before 2 fast-forwarded",
        "ubuntu:24.04 -> evoround-base:bookworm (--base-image-map)",
        "ubuntu:24.04 -> evoround-base:bookworm (map)",
        "min_reward of greet",
        "reward >= 0.999; round 1: reward >= 1 is only an early stop, as in Harbor; "
        "round 2: reward >= 0.5 is only an early stop",
        "reward strategy",
        "starts every round in a fresh session",
    ):
        assert part in text, part


def test_protocol_in_text_html_and_json(tmp_path: Path):
    view = load_job(_job(tmp_path))
    console = Console(record=True, width=400)
    print_report([view], console, resamples=0)
    text = console.export_text()
    assert "Protocol" in text
    _expected(text)
    html = render_html(build_report([view], trajectories=True, resamples=0), inline_js="")
    assert 'id="protocol-h"' in html and 'class="agent-note"' in html
    _expected(html.replace("&gt;", ">"))
    rows = job_json(view, resamples=0)["protocol"]
    _expected(json.dumps(rows))


def test_default_protocol_says_fail_stop_and_the_benchmark_threshold(tmp_path: Path):
    [res] = import_tasks(FIXTURES / "harbor" / "theme_d0_w0_word_tally", tmp_path / "wt")
    job = make_job(tmp_path, "plain", [rec("wt", 1, 1, True, 3)], {"wt": 3}, 1, "stop")
    cfg = json.loads((job / "job.json").read_text())
    cfg["tasks"]["wt"]["path"] = str(res.dest)
    (job / "job.json").write_text(json.dumps(cfg))
    rows = dict((r["what"], r["value"]) for r in job_json(load_job(job), resamples=0)["protocol"])
    assert rows["on failed round"].startswith("stop (fail-stop")
    assert rows["rounds (window)"] == "all"
    assert rows["pass threshold"].startswith("reward >= 0.999")
    assert not any(k.startswith("min_reward") for k in rows)


def test_html_leaderboard_has_perfect_and_two_decimals(tmp_path: Path):
    view = load_job(_job(tmp_path))
    html = render_html(build_report([view], resamples=0), inline_js="")
    assert "<th>perfect</th>" in html
    # MT@1 over the window (rounds 2-3): round 2 failed, round 3 not run -> 0.00
    assert ">0.00<" in html


def test_several_jobs_share_one_protocol_table_a_column_each(tmp_path: Path):
    """At 1,280-1,400 px one table per job made the reader scroll; now each row reads
    across the jobs."""
    a = load_job(_job(tmp_path / "a"))
    [res] = import_tasks(FIXTURES / "harbor" / "theme_d0_w0_word_tally", tmp_path / "wt")
    job = make_job(tmp_path, "plain", [rec("wt", 1, 1, True, 3)], {"wt": 3}, 1, "stop")
    cfg = json.loads((job / "job.json").read_text())
    cfg["tasks"]["wt"]["path"] = str(res.dest)
    (job / "job.json").write_text(json.dumps(cfg))
    b = load_job(job)
    html = render_html(build_report([a, b], resamples=0), inline_js="")
    assert html.count('class="protocol"') == 1 and 'id="protocol-2"' not in html
    table = html.split('class="protocol"', 1)[1].split("</table>", 1)[0]
    row = re.search(r'<th class="l">on failed round</th>(.*?)</tr>', table, re.S)
    assert row is not None and row[1].count("<td") == 2
    assert "continue (later rounds" in row[1] and "stop (fail-stop" in row[1]
    # the jobs differ in their round window: both values on one line
    window = re.search(r'<th class="l">rounds \(window\)</th>(.*?)</tr>', table, re.S)
    assert window is not None and "2-end" in window[1] and ">all<" in window[1]
