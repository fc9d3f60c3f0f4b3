"""The built-in agent through litellm over real HTTP to the replay server (local sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

from evoround.results import Mode, RoundStatus
from evoround.scaffolds import STATE_DIR, ModelOptions, scaffold_from_name, serve
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import COUNTER, run

WORDS = "def count_words(text):\n    return len(text.split())\n"
LINES = "\n\ndef count_lines(text):\n    return len(text.splitlines())\n"

# Rounds 1-2 of the counter fixture, solved with every tool of the agent.
SCRIPT = {
    "rounds": [
        [
            {"text": "Creating counter.py.",
             "tool_calls": [{"name": "write_file", "arguments": {"path": "counter.py", "content": WORDS}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "python -c 'import counter; print(counter.count_words(\"a b\"))'"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "added count_words"}}]},
        ],
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "counter.py"}}]},
            {"tool_calls": [{"name": "str_replace", "arguments": {
                "path": "counter.py", "old_str": "len(text.split())\n",
                "new_str": "len(text.split())\n" + LINES}}]},
            {"text": "Added count_lines."},
        ],
    ]
}  # fmt: skip


def agent(url: str, **kw) -> object:
    return scaffold_from_name(
        "evoround-agent", models=ModelOptions(model="openai/replay", api_base=url, **kw)
    )


def test_solves_two_rounds_in_one_conversation(tmp_path: Path):
    with serve(SCRIPT) as srv:
        view = run(tmp_path, agent(srv.url), modes=(Mode.mt,))
        reqs = srv.requests
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert by_round[1].agent == "evoround-agent" and by_round[1].model == "openai/replay"
    # round 3 is not scripted: the server answers 404 and the attempt stops there
    assert by_round[3].status in (RoundStatus.agent_error, RoundStatus.model_api)
    assert 4 not in by_round

    r1 = [r for r in reqs if r["_round"] == 1]
    r2_first = next(r for r in reqs if r["_round"] == 2)
    assert len(r1) == 3
    # one session: round 2's first request carries all of round 1's conversation
    assert r2_first["messages"][: len(r1[-1]["messages"])] == r1[-1]["messages"]
    msgs = r2_first["messages"]
    assert msgs[0]["role"] == "system" and "Keep counter.py dependency-free" in msgs[0]["content"]
    assert [m["role"] for m in msgs].count("user") == 2
    assert "count_words" in msgs[1]["content"] and "count_lines" in msgs[-1]["content"]
    assert any(m.get("tool_call_id") == "call_r1t0_0" for m in msgs)

    # the trajectory: tool calls with ids, their results, token usage
    art = view.path / by_round[1].artifacts
    events = [json.loads(line) for line in (art / "trajectory.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["write_file", "bash", "finish"]
    assert calls[0]["tool_call_id"] == "call_r1t0_0"
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[1]["content"].startswith("exit code 0") and "2" in results[1]["content"]
    assert all(e["usage"]["total_tokens"] > 0 for e in events if e["role"] == "assistant")
    # the conversation is saved after each round
    saved = json.loads((art / STATE_DIR / "conversation.json").read_text())
    assert saved["messages"] == r1[-1]["messages"] + [saved["messages"][-2], saved["messages"][-1]]


def test_restore_continues_the_saved_conversation(tmp_path: Path):
    """A resumed attempt (new process, new sandbox) continues the same conversation."""
    from evoround.sandboxes import LocalProvider
    from evoround.scaffolds import RoundInput, round_message

    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with serve(SCRIPT) as srv:
        scaffold = agent(srv.url)
        with provider.create(task, "a") as sb:
            s1 = scaffold.start(task, sb)
            rnd = task.round(1)
            s1.run_round(RoundInput(task, rnd, round_message(task, rnd), 30, tmp_path / "r1"))
            saved = sb.read_file("counter.py")
        with provider.create(task, "b") as sb2:  # the "resumed" process: a fresh session
            sb2.write_file("counter.py", saved)
            s2 = scaffold.start(task, sb2)
            s2.restore_state(tmp_path / "r1" / STATE_DIR)
            rnd = task.round(2)
            trace = s2.run_round(RoundInput(task, rnd, round_message(task, rnd), 30, None))
            assert "count_lines" in sb2.read_file("counter.py").decode()
        reqs = srv.requests
    assert trace.status.value == "ok"
    r2 = [r for r in reqs if r["_round"] == 2]
    assert r2 and len(r2[0]["messages"]) == 9  # system, user, 3x(assistant+tool), user


def test_retries_server_errors_and_records_them(tmp_path: Path):
    script = {**SCRIPT, "faults": [{"at": 1, "status": 500}, {"at": 3, "status": 429}]}
    with serve(script) as srv:
        view = run(tmp_path, agent(srv.url), modes=(Mode.sr,))
    r1 = next(r for r in view.records if r.round == 1)
    assert r1.passed
    events = (view.path / r1.artifacts / "trajectory.jsonl").read_text()
    errors = [json.loads(x) for x in events.splitlines() if '"type":"error"' in x]
    assert len(errors) == 2 and "InternalServerError" in errors[0]["content"]


def test_agent_timeout(make_task, tmp_path: Path):
    task_dir = make_task(rounds=2, environment="agent_timeout_sec = 3\n")
    script = {
        "rounds": [[{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]}]]
    }
    with serve(script) as srv:
        view = run(tmp_path, agent(srv.url), tasks=[load_task(task_dir)], modes=(Mode.mt,))
    assert [r.status for r in view.records] == [RoundStatus.agent_timeout]
    assert view.records[0].timings.agent_sec < 15


def test_model_hangs_past_the_deadline(make_task, tmp_path: Path):
    task_dir = make_task(rounds=1, environment="agent_timeout_sec = 2\n")
    with serve({"rounds": [[{"text": "thinking", "delay_sec": 10}]]}) as srv:
        view = run(tmp_path, agent(srv.url), tasks=[load_task(task_dir)], modes=(Mode.mt,))
    assert [r.status for r in view.records] == [RoundStatus.agent_timeout]


def test_step_limit(tmp_path: Path):
    loop = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}] * 5
    with serve({"rounds": [loop]}) as srv:
        view = run(tmp_path, agent(srv.url, max_steps=2), modes=(Mode.sr,))
        n1 = len([r for r in srv.requests if r.get("_round") == 1])
        tagged = {r["_headers"].get("x-evoround-round") for r in srv.requests}
    r1 = next(r for r in view.records if r.round == 1)
    assert n1 == 2 and not r1.passed  # the step limit: 2 calls in round 1
    # SR: each round is a fresh session with one user turn, yet it is addressed by the
    # round it is (its x-evoround-round header), not replayed round 1's answers
    assert tagged >= {"1", "2"}
    traj = (view.path / r1.artifacts / "trajectory.jsonl").read_text()
    assert "step limit 2 reached" in traj


def test_sr_rounds_get_their_own_scripted_answers(tmp_path: Path):
    with serve(SCRIPT) as srv:
        view = run(tmp_path, agent(srv.url), modes=(Mode.sr,))
        firsts = {}
        for r in srv.requests:
            firsts.setdefault(r["_round"], r)
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    # round 2's fresh session got round 2's first turn (read_file), not round 1's write
    assert sorted(firsts)[:2] == [1, 2]
    assert len(firsts[2]["messages"]) == 2  # system + the round's one user turn


def test_cli_run_with_model_and_api_base(tmp_path: Path):
    import subprocess
    import sys

    with serve(SCRIPT) as srv:
        res = subprocess.run(
            [sys.executable, "-m", "evoround.cli", "run", str(COUNTER), "--agent", "evoround-agent",
             "--model", "openai/replay", "--api-base", srv.url, "--mode", "mt", "--job", "j",
             "--sandbox", "local", "--out", str(tmp_path / "runs"), "--json"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    # round 3 is not scripted: a model_api round, so exit 1 with one line saying so
    assert res.returncode == 1, res.stderr
    assert "1 of 3 rounds could not be evaluated (1 model_api)" in res.stderr
    out = json.loads(res.stdout)  # nothing else on stdout (litellm banners are suppressed)
    assert out["config"]["model"] == "openai/replay"
    assert out["records"] == 3  # rounds 1-2 pass; round 3 is not scripted and stops it
    lines = (tmp_path / "runs" / "j" / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["status"] for x in lines][:2] == ["passed", "passed"]


def test_token_budget_ends_the_round_early(tmp_path: Path):
    """``--max-tokens``: the round stops after the call that crossed the budget."""
    with serve(SCRIPT) as srv:
        view = run(tmp_path, agent(srv.url, max_tokens=1), modes=(Mode.mt,))
        calls = [r.get("_round") for r in srv.requests]
    r1 = next(r for r in view.records if r.round == 1)
    events = (view.path / r1.artifacts / "trajectory.jsonl").read_text()
    assert "token limit 1 reached" in events
    # write_file ran, then the budget was spent; the verifier still judges the work
    assert r1.passed
    # the budget is per round: round 2 gets its own first call (and only that one)
    assert calls[:2] == [1, 2]


def test_cli_model_settings_reach_every_call_and_are_locked(tmp_path: Path):
    """--temperature, --reasoning-effort and --model-arg go with each model call (seen by
    the server over HTTP) and into job.json; a resume with other settings is refused."""
    import subprocess
    import sys

    cli = [sys.executable, "-m", "evoround.cli", "run", str(COUNTER), "--agent",
           "evoround-agent", "--model", "openai/replay", "--mode", "mt", "--job", "j",
           "--sandbox", "local", "--out", str(tmp_path / "runs")]  # fmt: skip
    with serve(SCRIPT) as srv:
        res = subprocess.run(
            [*cli, "--api-base", srv.url, "--temperature", "0.3", "--model-arg", "top_p=0.5",
             "--model-arg", "seed=7"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        bodies = [r for r in srv.requests if r.get("tools")]
    assert res.returncode == 1, res.stderr  # round 3 is not scripted: model_api
    assert bodies and all(
        (b.get("temperature"), b.get("top_p"), b.get("seed")) == (0.3, 0.5, 7) for b in bodies
    ), bodies[0]
    lock = json.loads((tmp_path / "runs" / "j" / "job.json").read_text())
    assert lock["model_args"] == {"temperature": 0.3, "top_p": 0.5, "seed": 7}
    again = subprocess.run(
        [sys.executable, "-m", "evoround.cli", "run", "--resume", str(tmp_path / "runs" / "j"),
         "--temperature", "0.9"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 2 and "job.json" in again.stderr and "0.9" in again.stderr
    assert len([ln for ln in again.stderr.splitlines() if ln.strip()]) == 1
