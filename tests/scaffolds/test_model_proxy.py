"""``--proxy``: the real LiteLLM proxy on loopback between real agents and the replay server.

Nothing is mocked: the proxy is LiteLLM's own server (installed into its venv on first
use), the call logger runs inside it, the agents are the built-in one (litellm,
OpenAI wire format) and the real ``claude`` binary (Anthropic SSE).
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from evoround.engine import run_job
from evoround.results import Mode, RoundStatus, load_job
from evoround.scaffolds import ModelOptions, scaffold_from_name, serve
from evoround.scaffolds.proxy import ModelProxy
from evoround.settings import evoround_home
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import COUNTER
from tests.scaffolds import test_claude_code, test_llm_agent


def _events(job_dir: Path, rec) -> list[dict]:
    path = job_dir / rec.artifacts / "trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(tmp_path: Path, agent: str, model: str, srv, sandbox: str = "local"):
    job_dir = tmp_path / "runs" / f"proxy-{uuid.uuid4().hex[:8]}"
    base = srv.url if agent != "claude-code" else srv.url.removesuffix("/v1")
    opts = ModelOptions(model=model, api_base=base)
    with ModelProxy(
        workdir=job_dir / "proxy",
        model=model,
        upstream=base,
        default_provider="anthropic" if agent == "claude-code" else "openai",
    ) as proxy:
        scaffold = scaffold_from_name(agent, models=opts.via_proxy(proxy.url, proxy.master_key))
        run_job(
            [load_task(COUNTER)], scaffold, job_dir=job_dir, modes=[Mode.mt], attempts=1,
            sandbox=sandbox, store=SnapshotStore(tmp_path / "store"), models=opts, proxy=proxy,
        )  # fmt: skip
        raw = [json.loads(line) for line in proxy.log_path.read_text().splitlines()]
    return job_dir, load_job(job_dir), raw


def test_builtin_agent_calls_once_each_with_round_tag_usage_and_a_retried_500(tmp_path: Path):
    script = {**test_llm_agent.SCRIPT, "faults": [{"at": 2, "status": 500}]}
    with serve(script) as srv:
        job_dir, view, raw = _run(tmp_path, "evoround-agent", "openai/replay", srv)
        upstream = srv.requests
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert by_round[1].model == "openai/replay"  # the user's model, not the proxy's route

    # the logger wrote each (call, outcome) once, though LiteLLM fires sync and async hooks
    keys = Counter((r["call_id"], r["event"]) for r in raw)
    assert keys and max(keys.values()) == 1

    seen: Counter[str] = Counter()
    for rnd, rec in by_round.items():
        calls = [e for e in _events(job_dir, rec) if e["type"] == "model_call"]
        seen.update(c["arguments"]["call_id"] for c in calls)
        lines = (job_dir / rec.artifacts / "model_calls.jsonl").read_text().splitlines()
        assert len(lines) == len(calls)
        for line in lines:
            tag = json.loads(line)["tag"]
            assert (tag["job"], tag["task"], tag["attempt"], tag["round"]) == (
                job_dir.name, "counter", "mt-01", str(rnd),
            )  # fmt: skip
        ok = [c for c in calls if c["arguments"]["status"] == "success"]
        assert all(c["usage"]["total_tokens"] > 0 for c in ok) and (ok or rnd == 3)
        assert rec.model_usage is not None and rec.model_usage.calls == len(calls)
        assert rec.model_usage.total_tokens == sum(c["usage"]["total_tokens"] for c in ok)

    # every call the server got appears in exactly one round's trajectory, once
    assert sorted(by_round) == [1, 2, 3] and max(seen.values()) == 1
    assert sum(seen.values()) == len([r for r in upstream if r["_path"].endswith("completions")])

    # the injected 500 (2nd request) is a failed call, and the agent's retry a new call
    r1 = [e for e in _events(job_dir, by_round[1]) if e["type"] == "model_call"]
    assert [c["arguments"]["status"] for c in r1] == ["success", "failure", "success", "success"]
    assert r1[1]["arguments"]["status_code"] == 500
    assert by_round[1].model_usage.failed == 1
    # tool-call ids and block order survive: the replay's ids, text before the tool call
    assert r1[0]["arguments"]["blocks"] == ["text", "tool_use"]
    assert r1[0]["arguments"]["tool_call_ids"] == ["call_r1t0_0"]


def test_claude_code_through_the_proxy_streams_and_is_recorded(tmp_path: Path):
    with serve(test_claude_code.SCRIPT) as srv:
        job_dir, view, raw = _run(tmp_path, "claude-code", "claude-sonnet-4-5", srv)
        upstream = [r for r in srv.requests if r.get("tools")]
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert all(r["stream"] for r in upstream if r["_round"] in (1, 2))
    r1 = [e for e in _events(job_dir, by_round[1]) if e["type"] == "model_call"]
    tool_ids = [i for c in r1 for i in c["arguments"]["tool_call_ids"]]
    assert tool_ids == ["toolu_r1t0_0"]
    assert all(c["arguments"]["api"] == "anthropic_messages" for c in r1)
    # no stray calls to a model the endpoint does not serve (Claude Code's small model)
    assert all(c["arguments"]["status"] == "success" for c in r1)
    assert {c["name"] for c in r1} == {"claude-sonnet-4-5"}
    assert by_round[1].model_usage.total_tokens > 0
    # one session: round 2's first call carries round 1's conversation (through the proxy)
    first_r2 = next(r for r in upstream if r["_round"] == 2)
    assert "count_words" in json.dumps(first_r2["messages"])
    # round 3 is not scripted: the replay server answers an error, which Claude Code reports
    # as an API error after its retries, so the round is the model's failure, not the agent's
    assert by_round[3].status is RoundStatus.model_api


@pytest.mark.docker
def test_claude_code_in_docker_reaches_the_proxy_only(docker_client, tmp_path: Path):
    with serve(test_claude_code.SCRIPT) as srv:
        job_dir, view, _ = _run(tmp_path, "claude-code", "claude-sonnet-4-5", srv, "docker")
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert by_round[1].sandbox == "docker" and by_round[2].model_usage.calls >= 1
    left = docker_client.api.containers(all=True, filters={"label": f"evoround.job={job_dir.name}"})
    assert left == []


def test_collect_waits_for_open_calls_and_keeps_unfinished_ones(tmp_path: Path):
    """The engine side alone, on a log file as the logger writes it."""
    proxy = ModelProxy(workdir=tmp_path, model="openai/replay", home=evoround_home())
    tag = ModelProxy.tag("j", "t", "mt-01", 1)
    other = {**tag, "run": "another"}
    lines = [
        {"event": "start", "call_id": "a", "tag": tag, "start": 1.0},
        {
            "event": "success",
            "call_id": "a",
            "tag": tag,
            "start": 1.0,
            "usage": {"total_tokens": 5},
        },
        {"event": "success", "call_id": "a", "tag": tag, "start": 1.0},  # a late echo
        {"event": "start", "call_id": "b", "tag": tag, "start": 2.0},  # killed mid-stream
        {"event": "start", "call_id": "c", "tag": other, "start": 3.0},  # a retried run
    ]
    proxy.log_path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"half')
    calls = proxy.collect(tag, wait_sec=0.3)
    assert [(c.call_id, c.status) for c in calls] == [("a", "success"), ("b", "incomplete")]


def _proxy_pids(config: Path) -> list[int]:
    """Live processes started with this job's proxy config."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                state = (d / "stat").read_text().split()[2]
            except OSError:
                continue
            if str(config).encode() in cmd and state != "Z":
                pids.append(int(d.name))
    return pids


def test_cli_proxy_run_and_a_killed_engine_leave_no_proxy_behind(tmp_path: Path):
    import signal
    import subprocess
    import sys
    import time

    import yaml

    cli = [sys.executable, "-m", "evoround.cli", "run", str(COUNTER), "--agent", "evoround-agent",
           "--model", "openai/replay", "--mode", "mt", "--proxy", "--sandbox", "local",
           "--out", str(tmp_path)]  # fmt: skip
    # --proxy needs a model agent and a model: one line, exit 2, nothing started
    bad = subprocess.run([*cli[:5], "--proxy", "--out", str(tmp_path)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "--proxy" in bad.stderr, bad.stderr
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(test_llm_agent.SCRIPT))
    with serve(script) as srv:
        # a broken proxy install: one line naming it, exit 2, no traceback
        broken = subprocess.run([*cli, "--api-base", srv.url, "--job", "x"],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "EVOROUND_PROXY_PYTHON": "/nonexistent/python"})  # fmt: skip
        assert broken.returncode == 2 and "EVOROUND_PROXY_PYTHON" in broken.stderr, broken.stderr
        assert "Traceback" not in broken.stderr
        # the default, relative --out: the proxy runs in its own folder and must still
        # find its config (exit 1: round 3 is not scripted, a model_api round)
        rel = [*cli[: cli.index("--out")], "--api-base", srv.url, "--job", "ok"]
        done = subprocess.run(rel, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 1, done.stderr[-2000:]
        assert "1 of 3 rounds could not be evaluated (1 model_api)" in done.stderr
    view = load_job(tmp_path / "runs" / "ok")
    assert [r.passed for r in view.records][:2] == [True, True]
    assert view.records[0].model_usage is not None and view.records[0].model_usage.calls == 3
    assert _proxy_pids(tmp_path / "runs" / "ok" / "proxy" / "config.yaml") == []

    # an engine SIGKILLed mid-round takes its proxy with it (no orphan on loopback)
    hang = {**test_llm_agent.SCRIPT, "faults": [{"at": 1, "delay_sec": 120}]}
    script.write_text(yaml.safe_dump(hang))
    with serve(script) as srv:
        proc = subprocess.Popen([*cli, "--api-base", srv.url, "--job", "killed"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        calls = tmp_path / "killed" / "proxy" / "calls.jsonl"
        deadline = time.monotonic() + 180
        while not (calls.exists() and calls.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        config = tmp_path / "killed" / "proxy" / "config.yaml"
        assert _proxy_pids(config), "the proxy never took a call"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _proxy_pids(config) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _proxy_pids(config) == []


def test_the_proxy_extra_is_spelled_out_from_litellms_own_metadata():
    from evoround.scaffolds.proxy._install import litellm_version, proxy_requirements

    reqs = proxy_requirements()
    names = {r.split("=")[0].split(">")[0].split("<")[0].split("[")[0] for r in reqs}
    assert reqs[0] == f"litellm=={litellm_version()}"
    assert {"uvicorn", "fastapi"} <= names  # the proxy's server stack
    assert "mlflow" not in names and "prisma" not in names  # other extras stay out
    assert not any(";" in r for r in reqs)


def test_a_requirement_missing_from_the_index_is_dropped_and_the_rest_installed(
    tmp_path: Path, capfd, monkeypatch
):
    """pip stand-in that fails as pip does while ``litellm-proxy`` is asked for; any
    other failure is still an error."""
    from evoround.scaffolds.proxy import ProxyError, _install

    calls = tmp_path / "calls"
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'case "$*" in *litellm-proxy==*) '
        'echo "ERROR: No matching distribution found for litellm-proxy==9.9.9" >&2; exit 1;; '
        '*broken*) echo "ERROR: resolution impossible" >&2; exit 1;; '
        "esac\nexit 0\n"
    )
    fake.chmod(0o755)
    reqs = ["litellm==9.9.9", "litellm-proxy==9.9.9", "uvicorn<1.0,>=0.33"]
    monkeypatch.setattr(_install, "proxy_requirements", lambda: reqs)
    _install._pip_install_proxy(fake, "9.9.9")
    runs = calls.read_text().splitlines()
    assert len(runs) == 2 and "litellm-proxy==" in runs[0]
    assert "litellm-proxy==" not in runs[1] and "uvicorn" in runs[1]
    assert "litellm-proxy==9.9.9 (from litellm[proxy]) is not on" in capfd.readouterr().err

    monkeypatch.setattr(_install, "proxy_requirements", lambda: [*reqs[:1], "broken==1"])
    with pytest.raises(ProxyError, match="resolution impossible"):
        _install._pip_install_proxy(fake, "9.9.9")


def test_the_install_says_each_step_with_its_time_and_beats_while_pip_runs(tmp_path: Path):
    """A slow pip (a stand-in that sleeps) in a CI log: a line when a step starts, a line
    every heartbeat while it runs, a line with its duration when it ends; each line
    stamped with the time since the install began."""
    from evoround.scaffolds.proxy._install import Steps

    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nsleep 1.2\necho done\n")
    slow.chmod(0o755)
    lines: list[str] = []
    res = Steps(lines.append, heartbeat=0.5).run([str(slow)], "step 2/3: pip install")
    assert res.returncode == 0 and res.stdout == "done\n"  # the output is all there
    assert lines[0] == "evoround: [0:00] step 2/3: pip install ..."
    beats = [ln for ln in lines if "still running" in ln]
    assert len(beats) >= 2 and all(ln.startswith("evoround: [0:0") for ln in beats), lines
    assert re.fullmatch(r"evoround: \[0:01\] step 2/3: pip install: done in 1\.\d s", lines[-1])


def test_install_proxy_says_when_there_was_nothing_to_do(tmp_path: Path):
    """Installed already (EVOROUND_PROXY_PYTHON names one): no step, one line, exit 0."""
    from tests.helpers import evoround_cli

    res = evoround_cli("install-proxy", env={"EVOROUND_PROXY_PYTHON": sys.executable})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"LiteLLM proxy ready (already installed): {sys.executable}"
    assert res.stderr.strip() == ""
