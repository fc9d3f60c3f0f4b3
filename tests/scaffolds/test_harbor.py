"""``--agent harbor:NAME``: Harbor's own agents through the bridge.

The pure parts (ATIF folding, how the bridge is started, error lines) need nothing.
The rest talks to the real Harbor in the interpreter ``evoround install-harbor`` built
(CI builds it in ``.ci/run``); without it those tests fail in CI and skip elsewhere,
like the Docker tests. Terminus-2's model calls go through litellm over HTTP to the
replay server; its tmux session runs in the counter fixture's container (which has
Debian's tmux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from evoround.results import EventType
from evoround.scaffolds import scaffold_from_name
from evoround.scaffolds.harbor import HarborNotInstalled, harbor_runtime
from evoround.scaffolds.harbor._atif import atif_events, context_usage
from evoround.scaffolds.harbor._install import HarborRuntime
from evoround.settings import evoround_home
from tests.conftest import in_ci
from tests.helpers import COUNTER

# ---- ATIF -> events ---------------------------------------------------------------------

ATIF = {
    "schema_version": "ATIF-v1.5",
    "session_id": "s",
    "agent": {"name": "terminus-2", "version": "2.0.0"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Add count_words",
         "timestamp": "2026-01-02T03:04:05+00:00"},
        {"step_id": 2, "source": "agent", "message": "old context", "is_copied_context": True},
        {
            "step_id": 3,
            "source": "agent",
            "message": [{"type": "text", "text": "Writing it."}, {"type": "image"}],
            "reasoning_content": "think",
            "tool_calls": [
                {"tool_call_id": "c1", "function_name": "bash_command",
                 "arguments": {"keystrokes": "ls\n", "duration": 0.1}}
            ],
            "observation": {"results": [{"source_call_id": "c1", "content": "counter.py"}]},
            "metrics": {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 5,
                        "cost_usd": 0.25},
        },
        {"step_id": 4, "source": "agent", "metrics": {"prompt_tokens": 7}},
    ],
}  # fmt: skip


def test_atif_steps_become_events_in_order():
    ev = atif_events(ATIF)
    kinds = [(e.type, e.role) for e in ev]
    assert kinds == [
        (EventType.message, "user"),
        (EventType.message, "assistant"),
        (EventType.tool_call, None),
        (EventType.tool_result, None),
        (EventType.message, "assistant"),  # a step with only metrics still costs tokens
    ]
    user, said, call, result, empty = ev
    assert user.content == "Add count_words" and user.timestamp.year == 2026
    assert said.content == "Writing it.\n[image]"
    assert said.arguments == {"reasoning_content": "think", "cost_usd": 0.25}
    assert said.usage == {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 5,
                          "total_tokens": 120}  # fmt: skip
    assert (call.tool_call_id, call.name, call.arguments["keystrokes"]) == (
        "c1",
        "bash_command",
        "ls\n",
    )
    assert (result.tool_call_id, result.content) == ("c1", "counter.py")
    assert empty.usage == {"prompt_tokens": 7, "total_tokens": 7}
    # copied context (already reported before a summarisation) is not counted again
    assert all(e.content != "old context" for e in ev)


def test_atif_tolerates_junk():
    assert atif_events({"steps": [None, 3, {"source": "agent", "tool_calls": ["x"]}]})[0].role == (
        "assistant"
    )
    assert atif_events({}) == []
    assert context_usage({"n_input_tokens": 10, "n_output_tokens": 2, "n_cache_tokens": None}) == {
        "prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}  # fmt: skip


def test_terminus_keystrokes_count_as_commands():
    """Checklist rules about commands see what Terminus-2 typed into its terminal."""
    from evoround.verifiers.checklist import RoundEvidence

    ev = RoundEvidence(
        task="t", round=1, system_prompt="", user_message="", events=atif_events(ATIF)
    )
    assert (2, "ls\n") in ev.commands()


# ---- starting the bridge -----------------------------------------------------------------


def test_runtime_argv_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "rootfs"
    (root / "etc/evoround").mkdir(parents=True)
    (root / "etc/evoround/host-ca.crt").write_text("ca")
    monkeypatch.setenv("PYTHONPATH", "/host/only")
    monkeypatch.setenv("PIP_INDEX_URL", "http://x")
    rt = HarborRuntime(python="/opt/harbor/bin/python", root=root)
    env = rt.env()
    assert "PYTHONPATH" not in env and "PIP_INDEX_URL" not in env
    assert env["SSL_CERT_FILE"] == "/etc/evoround/host-ca.crt"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    path = rt.place_bridge()
    assert path.startswith("/opt/evoround/evoround_harbor_bridge_")
    assert (root / path.lstrip("/")).read_text().startswith('"""evoround\'s Harbor bridge')
    assert rt.place_bridge() == path  # same content, same file
    if os.geteuid() == 0:
        assert rt.argv(path) == ["/opt/harbor/bin/python", path]  # chroot in preexec
    else:
        assert rt.argv(path)[:2] == ["unshare", "--map-root-user"]


def test_missing_bridge_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("EVOROUND_HARBOR_PYTHON", raising=False)
    with pytest.raises(HarborNotInstalled, match="evoround install-harbor"):
        harbor_runtime(tmp_path)
    monkeypatch.setenv("EVOROUND_HARBOR_PYTHON", str(tmp_path / "nope"))
    with pytest.raises(HarborNotInstalled, match="EVOROUND_HARBOR_PYTHON=.*not an executable"):
        harbor_runtime(tmp_path)


def test_harbor_python_too_old_is_reported(monkeypatch: pytest.MonkeyPatch):
    """A named interpreter without harbor (here: evoround's own 3.11) fails at hello."""
    monkeypatch.setenv("EVOROUND_HARBOR_PYTHON", sys.executable)
    with pytest.raises(ValueError, match=r"EVOROUND_HARBOR_PYTHON=.*(too old|cannot import)"):
        scaffold_from_name("harbor:terminus-2")
    with pytest.raises(ValueError, match="needs a Harbor agent name"):
        scaffold_from_name("harbor:")


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from evoround.cli import main; main()", *map(str, args)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200", **(env or {})},
    )  # fmt: skip


def test_cli_missing_bridge_exit_2(tmp_path: Path):
    res = cli(
        "run", COUNTER, "--agent", "harbor:terminus-2", "--model", "openai/replay",
        "--sandbox", "local", "--out", tmp_path, env={"EVOROUND_HOME": str(tmp_path / "home"), "EVOROUND_HARBOR_PYTHON": ""},
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "install-harbor" in lines[0], res.stderr
    assert "Traceback" not in res.stderr


# ---- with Harbor ------------------------------------------------------------------------


# Terminus-2 records its terminal with asciinema and, finding none, installs it in its
# set-up: in these offline sandboxes apt-get (twice, 7.5 s each) and pip (twice, 7.8 s
# each) fail, about 30 s of every attempt (measured on the local sandbox). The tests below
# that run attempts are not about recording: they turn it off through the agent's own
# argument (``fresh_session`` with its own), but test_terminus2_two_rounds_one_session_in_docker
# runs Harbor's default set-up, install attempts included.
NO_RECORDING = '{"record_terminal_session": false}'
UNRECORDED = {
    "test_terminus2_kill9_then_resume_continues_the_conversation",
    "test_terminus2_local_sandbox_two_rounds",
    "test_terminus2_round_deadline_is_kept",
    "test_bridge_killed_mid_round_ends_the_round_not_the_job",
}


@pytest.fixture(autouse=True)
def _no_recording(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.originalname in UNRECORDED:
        monkeypatch.setenv("EVOROUND_HARBOR_AGENT_KWARGS", NO_RECORDING)


@pytest.fixture(scope="session")
def harbor_ready() -> HarborRuntime:
    try:
        return harbor_runtime(evoround_home())
    except HarborNotInstalled as e:
        if in_ci():
            pytest.fail(f"Harbor is required in CI: {e}", pytrace=False)
        pytest.skip(str(e))


def test_cli_unknown_harbor_agent_exit_2(harbor_ready, tmp_path: Path):
    local = ("--sandbox", "local", "--out", tmp_path)
    res = cli("run", COUNTER, "--agent", "harbor:nonexistent", *local)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "harbor:nonexistent" in lines[0] and "terminus-2" in lines[0]  # names the known ones
    res = cli("run", COUNTER, "--agent", "harbor:no.such.module:Agent", *local)
    assert res.returncode == 2 and "cannot import no.such.module:Agent" in res.stderr
    res = cli("run", COUNTER, "--agent", "harbor:terminus-2", "--out", tmp_path)
    assert res.returncode == 2 and "needs --model" in res.stderr


def test_describe_and_catalogue(harbor_ready):
    from evoround.scaffolds.harbor import open_bridge

    bridge, info = open_bridge(harbor_ready)
    try:
        assert info["protocol"] == 1 and info["harbor"].startswith("0.")
        t2 = bridge.request("describe", timeout=120, agent="terminus-2")
        same = bridge.request("describe", timeout=120, agent="harbor.agents.terminus_2:Terminus2")
        agents = {a["spec"]: a for a in bridge.request("catalogue", timeout=300)["agents"]}
    finally:
        bridge.close()
    assert t2["continuation"] == "conversation" and not t2["installed"]
    assert "api_base" in t2["accepts"]
    assert same["import_path"] == t2["import_path"]
    assert agents["claude-code"]["installed"] and agents["claude-code"]["continuation"] == "native"
    assert agents["aider"]["installed"]


# Terminus-2's replies, by the last user message (it answers in its JSON format; a task is
# complete after task_complete twice: Harbor asks to confirm).
WRITE_R1 = "printf 'def count_words(text):\\n    return len(text.split())\\n' > counter.py\n"
WRITE_R2 = (
    "printf '\\n\\ndef count_lines(text):\\n    return len(text.splitlines())\\n' >> counter.py\n"
)


def reply(keys: str | None, done: bool) -> str:
    cmds = [{"keystrokes": keys, "duration": 0.3}] if keys else []
    return json.dumps({"analysis": "a", "plan": "p", "commands": cmds, "task_complete": done})


def terminus_script(round2_delay: float = 0.0) -> dict:
    script: dict = {
        "answers": [
            {"match": "Add a module counter.py", "content": reply(WRITE_R1, False)},
            {"match": "Add count_lines", "content": reply(WRITE_R2, False)},
        ],
        "default": reply(None, True),
    }
    if round2_delay:  # the 4th request is round 2's first (3 per round: act, done, confirm)
        script["faults"] = [{"at": 4, "delay_sec": round2_delay}]
    return script


def user_texts(req: dict) -> list[str]:
    return [str(m.get("content")) for m in req.get("messages") or [] if m.get("role") == "user"]


@pytest.mark.docker
def test_terminus2_two_rounds_one_session_in_docker(harbor_ready, docker_client, tmp_path: Path):
    from evoround.results import Mode, RoundStatus
    from evoround.scaffolds import serve
    from tests.helpers import run

    job = f"harbor-{uuid.uuid4().hex[:8]}"
    with serve(terminus_script()) as srv:
        scaffold = scaffold_from_name(
            "harbor:terminus-2",
            models=_models(srv.url),
        )
        view = run(tmp_path, scaffold, modes=(Mode.mt,), sandbox="docker", name=job)
        reqs = list(srv.requests)
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert by_round[1].agent == "harbor:terminus-2"
    assert by_round[3].status is RoundStatus.failed  # round 3 is not scripted
    # one session: round 2's first request carries round 1's whole conversation
    first_r2 = next(i for i, r in enumerate(reqs) if "Add count_lines" in user_texts(r)[-1])
    r1_last = reqs[first_r2 - 1]["messages"]
    r2_first = reqs[first_r2]["messages"]
    assert r2_first[: len(r1_last)] == r1_last
    assert "Add a module counter.py" in user_texts(reqs[first_r2])[0]
    # round 2 opens with the new instruction and the terminal, not the full template again
    assert user_texts(reqs[first_r2])[-1].startswith("Add count_lines")
    assert "Format your response as JSON" not in user_texts(reqs[first_r2])[-1]
    # trajectory: Harbor's ATIF folded in, with token usage and the typed commands
    art = tmp_path / "runs" / job / by_round[2].artifacts
    events = [json.loads(line) for line in (art / "trajectory.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert any("count_lines" in e["arguments"]["keystrokes"] for e in calls)
    assert sum((e.get("usage") or {}).get("total_tokens", 0) for e in events) > 0
    state = json.loads((art / "agent" / "state.json").read_text())
    assert state["scaffold"] == "harbor:terminus-2" and state["bridge"]["messages"]
    assert docker_client.api.containers(all=True, filters={"label": f"evoround.job={job}"}) == []


def _models(url: str):
    from evoround.scaffolds import ModelOptions

    return ModelOptions(model="openai/replay", api_base=url)


@pytest.mark.docker
def test_terminus2_kill9_then_resume_continues_the_conversation(
    harbor_ready, docker_client, tmp_path: Path
):
    """SIGKILL while round 2 waits for the model; ``--resume``: round 2 starts again in a
    new container with round 1's conversation restored from ``round-01/agent``."""
    import signal
    import time

    from evoround.results import read_results
    from evoround.scaffolds import serve

    job_name = f"harbor-kill-{uuid.uuid4().hex[:8]}"
    job = tmp_path / "runs" / job_name
    with serve(terminus_script(round2_delay=120)) as srv:
        args = ["--agent", "harbor:terminus-2", "--model", "openai/replay",
                "--api-base", srv.url, "--sandbox", "docker", "--mode", "mt"]  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", "from evoround.cli import main; main()", "run", str(COUNTER),
             *args, "--out", str(tmp_path / "runs"), "--job", job_name],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 600
            while len(srv.requests) < 4:  # round 1 recorded, round 2 waiting on the model
                assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
                assert time.monotonic() < deadline, "round 2 never asked the model"
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        before, _ = read_results(job / "results.jsonl")
        assert [(r.round, r.passed) for r in before] == [(1, True)]
        res = cli("run", "--resume", job, "--api-base", srv.url)
        reqs = list(srv.requests)
    cli("cleanup", "--job", job_name)  # the killed run's container
    assert res.returncode == 0, res.stderr[-3000:]
    assert "note: harbor:terminus-2 keeps one conversation across rounds" in res.stdout
    records, _ = read_results(job / "results.jsonl")
    r2 = next(r for r in records if r.round == 2)
    assert r2.passed and r2.resumed_from == 1, r2.error
    opens = [r["messages"] for r in reqs if user_texts(r)[-1].startswith("Add count_lines")]
    assert len(opens) == 2  # the killed run's round 2, and the resumed one
    killed, resumed = opens
    # the same conversation up to the new instruction: round 1's, restored from disk
    assert resumed[:-1] == killed[:-1]
    assert "Add a module counter.py" in str(resumed[0]["content"])
    assert any(m["role"] == "assistant" for m in resumed[:-1])


def test_terminus2_local_sandbox_two_rounds(harbor_ready, tmp_path: Path):
    """The local sandbox: Terminus-2's tmux runs on the host, in a tmux server of the
    attempt's own (TMUX_TMPDIR), which is gone when the attempt ends."""
    import shutil

    from evoround.results import Mode
    from evoround.scaffolds import serve
    from tests.helpers import run

    if shutil.which("tmux") is None:
        if in_ci():
            pytest.fail("tmux is required in CI (.ci/run installs it)", pytrace=False)
        pytest.skip("no tmux on this host")
    with serve(terminus_script()) as srv:
        scaffold = scaffold_from_name("harbor:terminus-2", models=_models(srv.url))
        view = run(tmp_path, scaffold, modes=(Mode.mt,), sandbox="local", name="local")
    by_round = {r.round: r for r in view.records}
    assert by_round[1].passed and by_round[2].passed, [r.error for r in view.records]
    assert _processes_with_env(f"TMUX_TMPDIR={tmp_path}") == [], "tmux outlived the attempt"


def _processes_with_env(prefix: str) -> list[int]:
    """Live processes whose environment has a variable starting with ``prefix``."""
    import time

    time.sleep(0.5)  # a killed server needs a moment to go
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if any(v.startswith(prefix.encode()) for v in env.read_bytes().split(b"\0")):
                stat = (env.parent / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":  # zombies are already gone
                    found.append(int(env.parent.name))
        except OSError:
            continue
    return found


def test_terminus2_round_deadline_is_kept(harbor_ready, tmp_path: Path):
    """A model that hangs: the round ends at the task's agent timeout as agent_timeout, and
    the bridge (with Terminus-2's partial trajectory) is still there to report it."""
    import shutil
    import time

    from evoround.results import Mode, RoundStatus
    from evoround.scaffolds import serve
    from evoround.tasks import load_task
    from tests.helpers import copy_counter, run

    if shutil.which("tmux") is None:
        if in_ci():
            pytest.fail("tmux is required in CI (.ci/run installs it)", pytrace=False)
        pytest.skip("no tmux on this host")
    task_dir = copy_counter(tmp_path)
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("agent_timeout_sec = 60", "agent_timeout_sec = 8"))
    script = terminus_script()
    script["faults"] = [{"at": 2, "delay_sec": 300}]  # round 1's second model call hangs
    with serve(script) as srv:
        scaffold = scaffold_from_name("harbor:terminus-2", models=_models(srv.url))
        t0 = time.monotonic()
        view = run(tmp_path, scaffold, [load_task(task_dir)], modes=(Mode.mt,), name="slow")
        took = time.monotonic() - t0
    (r1,) = view.records
    assert r1.status is RoundStatus.agent_timeout, r1.error
    assert took < 150, took  # not the model's 300 s: the round's 8 s (plus start and verify)
    art = tmp_path / "runs" / "slow" / r1.artifacts
    events = [json.loads(line) for line in (art / "trajectory.jsonl").read_text().splitlines()]
    assert any(e["type"] == "tool_call" for e in events)  # the work before the hang is kept


def test_fresh_session_is_said_not_hidden(
    harbor_ready, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Harbor's own Terminus-2 behaviour (a new chat per run()) on request: round 2's first
    request holds no round 1 message, its trajectory opens with a system event saying so,
    and the job's notes (printed with the report) say the session was not continued."""
    import shutil

    from evoround.results import Mode, load_job
    from evoround.scaffolds import serve
    from tests.helpers import run

    if shutil.which("tmux") is None:
        if in_ci():
            pytest.fail("tmux is required in CI (.ci/run installs it)", pytrace=False)
        pytest.skip("no tmux on this host")
    kwargs = '{"continue_conversation": false, "record_terminal_session": false}'
    monkeypatch.setenv("EVOROUND_HARBOR_AGENT_KWARGS", kwargs)
    with serve(terminus_script()) as srv:
        scaffold = scaffold_from_name("harbor:terminus-2", models=_models(srv.url))
        view = run(tmp_path, scaffold, modes=(Mode.mt,), name="fresh")
        reqs = list(srv.requests)
    by_round = {r.round: r for r in view.records}
    assert by_round[2].passed, [r.error for r in view.records]
    first_r2 = next(r for r in reqs if "Add count_lines" in user_texts(r)[-1])
    assert not any("Add a module counter.py" in t for t in user_texts(first_r2))
    art = tmp_path / "runs" / "fresh" / by_round[2].artifacts
    first = json.loads((art / "trajectory.jsonl").read_text().splitlines()[0])
    assert first["role"] == "system" and "fresh conversation" in first["content"]
    notes = load_job(tmp_path / "runs" / "fresh").config.agent_notes
    assert notes and "cannot continue a session" in notes[0]
    assert notes[1] == f"ran with agent arguments {kwargs}"


def test_named_harbor_python(harbor_ready, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """EVOROUND_HARBOR_PYTHON: any interpreter with harbor (here a wrapper that enters the
    installed root, standing in for a host Python 3.12+) runs the bridge; nothing is built."""
    from evoround.scaffolds.harbor import open_bridge

    if harbor_ready.root is None or os.geteuid() != 0:
        pytest.skip("needs the chroot interpreter and root to stand in for a host Python")
    wrapper = tmp_path / "python3.13"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'cp "$1" {harbor_ready.root}/tmp/named-bridge.py\n'
        f"exec chroot {harbor_ready.root} /opt/harbor/bin/python /tmp/named-bridge.py\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("EVOROUND_HARBOR_PYTHON", str(wrapper))
    runtime = harbor_runtime(tmp_path / "home")  # an empty home: no install needed
    assert runtime.root is None and runtime.python == str(wrapper)
    bridge, info = open_bridge(runtime)
    try:
        t2 = bridge.request("describe", timeout=300, agent="terminus-2")
    finally:
        bridge.close()
    assert info["protocol"] == 1 and t2["continuation"] == "conversation"
    assert list((tmp_path / "home" / "tools" / "harbor-bridge").glob("evoround_harbor_bridge_*.py"))
    res = cli("install-harbor", env={"EVOROUND_HARBOR_PYTHON": str(wrapper),
                                     "EVOROUND_HOME": str(tmp_path / "home")})  # fmt: skip
    assert res.returncode == 0 and f"Harbor {info['harbor']} ready" in res.stdout, res.stderr
    assert not list((tmp_path / "home" / "tools").glob("harbor-0*"))  # nothing built


def test_bridge_killed_mid_round_ends_the_round_not_the_job(harbor_ready, tmp_path: Path):
    """The real bridge SIGKILLed while Terminus-2 waits for its model: the round ends at
    once as the agent's error naming the bridge, and nothing hangs or is left behind."""
    import shutil
    import signal
    import threading
    import time

    from evoround.results import Mode, RoundStatus
    from evoround.scaffolds import serve
    from tests.helpers import run

    if shutil.which("tmux") is None:
        if in_ci():
            pytest.fail("tmux is required in CI (.ci/run installs it)", pytrace=False)
        pytest.skip("no tmux on this host")
    script = terminus_script()
    script["faults"] = [{"at": 2, "delay_sec": 300}]  # round 1's second call hangs

    def bridges() -> list[int]:
        out = []
        for cmd in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if b"evoround_harbor_bridge_" in cmd.read_bytes():
                    stat = (cmd.parent / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(stat[1]) == os.getpid() and stat[0] != "Z":
                        out.append(int(cmd.parent.name))
            except OSError:
                continue
        return out

    with serve(script) as srv:
        scaffold = scaffold_from_name("harbor:terminus-2", models=_models(srv.url))

        killed_at: list[float] = []

        def killer() -> None:
            while len(srv.requests) < 2:
                time.sleep(0.05)
            killed_at.append(time.monotonic())
            for pid in bridges():
                os.kill(pid, signal.SIGKILL)

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        t0 = time.monotonic()
        view = run(tmp_path, scaffold, modes=(Mode.mt,), name="killed")
        took = time.monotonic() - t0
    (r1,) = view.records
    assert r1.status is RoundStatus.agent_error, (r1.status, r1.error)
    assert "Harbor bridge" in (r1.error or "") and "-9" in (r1.error or "")
    # The round did not wait for the hung model (300 s); measured from the kill, so a slow
    # Harbor start on a loaded machine does not count against it.
    assert killed_at and took - (killed_at[0] - t0) < 120, (took, killed_at)
    assert bridges() == []
    assert _processes_with_env(f"TMUX_TMPDIR={tmp_path}") == []
