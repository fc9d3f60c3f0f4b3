"""The viewer over HTTP: pages, filters, live updates, blame, and hostile content.

Real server, real HTTP (urllib), synthetic job folders written with the real record
models (tests/view/jobs.py)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.results import FileChange, RoundChanges
from evoround.view import JobIndex, ViewError, ViewServer
from tests.view.jobs import (
    UNICODE,
    calc_change,
    hostile_names_job,
    job_config,
    record,
    regression,
    synthetic_job,
    write_round,
)

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'


def get(server: ViewServer, path: str, host: str | None = None) -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(server.url + path.lstrip("/"))
    if host:
        req.add_header("Host", host)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return synthetic_job(tmp_path, "small", tasks=2, rounds=3, events=5)


@pytest.fixture
def served(small: Path) -> Iterator[ViewServer]:
    with ViewServer(JobIndex([small])) as s:
        yield s


def test_pages_of_a_job(served: ViewServer) -> None:
    code, body, headers = get(served, "/")
    assert code == 200 and "small" in body and "MT@k" in body
    assert "script-src" not in headers["Content-Security-Policy"]  # default-src 'none': no script
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    code, grid, _ = get(served, "/job/0")
    assert code == 200 and grid.count('class="cell') == 2 * 2 * 3  # 2 tasks x MT/SR x 3 rounds
    code, failed, _ = get(served, "/job/0?status=failed")
    assert code == 200 and failed.count("<tr><td>t0") == 2  # the two MT attempts only


def test_round_page_shows_diff_failures_blame_and_trajectory(served: ViewServer) -> None:
    code, body, _ = get(served, "/job/0/round/t000/mt/1/3")
    assert code == 200
    assert '<span class="add">+def f3():</span>' in body  # the round's unified diff
    assert "test_calc.py::test_f1" in body and "regression" in body
    assert "rounds whose edits touched a file in its traceback" in body
    assert 'href="/job/0/round/t000/mt/1/1#changes">round 1</a>' in body  # blame -> the edit
    assert "echo step 2" in body  # trajectory
    code, searched, _ = get(served, "/job/0/round/t000/mt/1/3?q=step+2")
    assert searched.count("<details") < body.count("<details")
    code, cmp, _ = get(served, "/compare?a=0/t000/mt/1/3&b=0/t000/sr/1/3")
    assert code == 200 and cmp.count("tests 3/3") == 1 and cmp.count("tests 2/3") == 1


@pytest.mark.parametrize(
    "path",
    [
        "/job/1",
        "/job/0/round/..%2F..%2Fetc/mt/1/1",
        "/job/0/round/t000/mt/1/99",
        "/job/0/round/t000/xx/1/1",
        "/../../etc/passwd",
        "/compare?a=0/../../etc/mt/1/1&b=0/t000/mt/1/1",
        "/compare?a=junk",
        "/job/-1",
    ],
)
def test_no_page_outside_the_jobs(served: ViewServer, path: str) -> None:
    code, body, _ = get(served, path)
    assert code == 404 and "root:" not in body


def test_record_pointing_outside_the_job_reads_nothing(tmp_path: Path) -> None:
    job = tmp_path / "j"
    job.mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "trajectory.jsonl").write_text(
        json.dumps({"type": "message", "content": "TOPSECRET"})
    )
    (job / "job.json").write_text(job_config("j", {"t": 1}).model_dump_json())
    rec = record("j", "t", "mt", 1, 1, 1, artifacts="../secret")
    (job / "results.jsonl").write_text(rec.model_dump_json() + "\n")
    with ViewServer(JobIndex([job])) as s:
        code, body, _ = get(s, "/job/0/round/t/mt/1/1")
    assert code == 200 and "TOPSECRET" not in body


def test_foreign_host_header_is_refused(served: ViewServer) -> None:
    assert get(served, "/", host="evil.example:8765")[0] == 421
    assert get(served, "/", host="localhost:1")[0] == 200


def test_hostile_agent_output_is_escaped(tmp_path: Path) -> None:
    job = tmp_path / "h"
    job.mkdir()
    (job / "job.json").write_text(job_config("h", {"t": 1}).model_dump_json())
    name = f"{HOSTILE}.py"
    ch = RoundChanges(added=[FileChange(path=name, size=10)])
    patch = f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{HOSTILE}\n"
    extra = regression(name, HOSTILE, HOSTILE, 1)
    rec = record("h", "t", "mt", 1, 1, 1, passed=False, error=HOSTILE, **extra)
    events = [
        {"type": "message", "role": "user", "content": HOSTILE},
        {"type": "tool_call", "name": HOSTILE, "arguments": {"cmd": HOSTILE}},
        {"type": "command", "content": "x" * 100_000},
    ]
    checks = [{"id": HOSTILE, "result": "fail", "detail": HOSTILE, "evidence": [HOSTILE]}]
    write_round(job, rec, events=events, changes=ch, patch=patch, checks=checks)
    bodies = {}
    with ViewServer(JobIndex([job])) as s:
        for path in ("/", "/job/0", "/job/0/round/t/mt/1/1", f"/job/0/round/t/mt/1/1?q={HOSTILE}"):
            code, body, _ = get(s, urllib.request.quote(path, safe="/?=&"))
            assert code == 200, path
            assert "<script>" not in body and "<img src=x" not in body, path
            bodies[path] = body
    page = bodies["/job/0/round/t/mt/1/1"]
    assert page.count("&lt;script&gt;") >= 6  # message, call, diff, file name, test, check
    assert "characters not shown" in page  # a 100 kB output is capped


def test_live_job_shows_new_rounds_and_running(small: Path) -> None:
    with ViewServer(JobIndex([small])) as s:
        before = get(s, "/job/0")[1]
        assert 'http-equiv="refresh"' not in before
        (small / "job.lock").write_text("{}")
        ch, patch = calc_change(1)
        write_round(small, record("small", "t009", "mt", 1, 1, 3), changes=ch, patch=patch)
        after = get(s, "/job/0")[1]
    assert "t009" in after and "t009" not in before
    assert 'http-equiv="refresh"' in after


def test_not_a_job_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match="no job.json"):
        JobIndex([tmp_path])
    (tmp_path / "job.json").write_text("{not json")
    with pytest.raises(ViewError, match=r"job\.json: not valid JSON"):
        JobIndex([tmp_path])


def test_intervals_arrive_without_blocking_the_page(served: ViewServer) -> None:
    code, first, _ = get(served, "/")
    assert code == 200 and "66.7" in first  # MT@k point estimate at once (2 of 3 rounds)
    deadline = time.monotonic() + 120
    while "66.7 [" not in first and time.monotonic() < deadline:
        time.sleep(0.5)
        first = get(served, "/")[1]
    assert "66.7 [66.7, 66.7]" in first  # identical tasks: a zero-width interval


def test_ansi_unicode_and_markup_in_file_names_render_readably(tmp_path: Path) -> None:
    with ViewServer(JobIndex([hostile_names_job(tmp_path)])) as s:
        code, page, _ = get(s, "/job/0/round/t/mt/1/1")
    assert code == 200
    assert "\x1b" not in page and "[0m" not in page.replace("␛[0m", "")  # no escape noise
    assert '<span class="a-red a-b">FAILED</span>' in page  # colour kept, as a fixed class
    assert '<span class="a-green">assert</span> 0 == 1' in page
    assert "progress 100%" in page and "progress 10%" not in page  # the \r redraw
    assert "window title" not in page and "done red256" in page
    assert page.count(UNICODE) >= 3  # message, tool arguments (not \\u escapes), diff
    assert "<svg" not in page and "&lt;svg onload=alert(1)&gt;" in page  # the file name
    assert "⟦U+202E⟧yp.exe␛[31m.py" in page  # override and escape byte made visible
    assert "␛[31mred␛[0m" in page  # the diff shows a file's escape bytes as they are
    assert "FAILED tests/test_calc.py::test_f1 - assert 0 == 1" in page  # test message, plain
    assert "characters not shown" in page and "y" * 100 in page and "z" * 100 in page
    assert '<span class="a-green">' + "y" * 100 in page  # the cut keeps the colour


def test_model_calls_show_tokens_cost_and_latency_or_not_recorded(tmp_path: Path) -> None:
    job = tmp_path / "m"
    job.mkdir()
    (job / "job.json").write_text(job_config("m", {"t": 1}).model_dump_json())
    events = [
        {
            "type": "model_call",
            "name": "openai/gpt-x",
            "usage": {"prompt_tokens": 1200, "completion_tokens": 34},
            "arguments": {"call_id": "c1", "status": "success", "duration_sec": 2.5},
        },
        {
            "type": "message",
            "role": "assistant",
            "content": "hi",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 2},
            "arguments": {"cost_usd": 0.0123},
        },
        {
            "type": "model_call",
            "name": "m2",
            "arguments": {"status": "failure", "status_code": 429},
        },
        {"type": "command", "content": "ls"},
    ]
    usage = {"prompt_tokens": 1215, "completion_tokens": 36, "total_tokens": 1251}
    rec = record("m", "t", "mt", 1, 1, 1, usage=usage)
    write_round(job, rec, events=events, changes=None, checks=[])
    with ViewServer(JobIndex([job])) as s:
        page = get(s, "/job/0/round/t/mt/1/1")[1]
    assert "1,234 tokens (in 1,200, out 34) · cost not recorded · 2.50 s" in page
    assert "17 tokens (in 15, out 2) · $0.0123 · latency not recorded" in page
    assert "tokens not recorded · cost not recorded · latency not recorded" in page
    assert "failure 429" in page
    assert page.count('class="model"') == 3  # the command has no model figures
    assert "model: 1,251 tokens (in 1,215, out 36), cost not recorded" in page


def test_jobs_page_filters_by_agent(tmp_path: Path) -> None:
    a = synthetic_job(tmp_path, "ja", tasks=1, rounds=1, events=1, agent="claude-code")
    b = synthetic_job(tmp_path, "jb", tasks=1, rounds=1, events=1, agent="<b>codex</b>")
    with ViewServer(JobIndex([a, b])) as s:
        everything = get(s, "/")[1]
        one = get(s, "/?agent=claude-code")[1]
        none = get(s, "/?agent=nobody")[1]
    assert '<option value="claude-code">' in everything and ">ja</a>" in everything
    assert '<option value="&lt;b&gt;codex&lt;/b&gt;">' in everything and ">jb</a>" in everything
    assert ">ja</a>" in one and ">jb</a>" not in one and "1 job(s) of agent claude-code" in one
    assert '<option value="claude-code" selected>' in one
    assert "0 job(s) of agent nobody" in none
