"""Where an agent runs when ``--sandbox`` is not given.

A model-backed agent runs code nobody has read: Docker by default, and with no engine to
reach the run stops (exit 2, one line naming both ways out) instead of falling back to the
host. ``--sandbox local`` still works for it, with one line saying local is for trusted
agents. Scripted, oracle and nop agents keep the local default. The CLI in-process, the
real replay server; "no engine" is a ``DOCKER_HOST`` that points nowhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evoround.cli._checks import UsageError, choose_sandbox
from evoround.scaffolds import serve
from tests.helpers import COUNTER, CliResult, evoround_cli

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
SILENT = {"rounds": [[{"text": "Nothing to do."}] for _ in range(4)]}


def evoround(*args: str, env: dict | None = None) -> CliResult:
    """The command in-process, through its entry point (tests/helpers.py)."""
    return evoround_cli(*args, env=env)


def test_choice_by_agent_kind_and_engine() -> None:
    asked: list[str] = []

    def probe(answer: bool):  # noqa: ANN202
        def reachable() -> bool:
            asked.append("probe")
            return answer

        return reachable

    assert choose_sandbox("evoround-agent", None, probe(True)) == "docker"
    assert choose_sandbox("harbor:terminus-2", None, probe(True)) == "docker"
    assert choose_sandbox("claude-code", "local", probe(True)) == "local"
    for agent in ("oracle", "nop", "scripted", "scripted:regressor"):
        assert choose_sandbox(agent, None, probe(False)) == "local"
    assert asked == ["probe", "probe"]  # the engine is probed only when it decides
    with pytest.raises(UsageError, match="--sandbox local"):
        choose_sandbox("mini-swe-agent", None, probe(False))


def test_model_agent_without_an_engine_exits_2_naming_both_ways(tmp_path: Path) -> None:
    res = evoround("run", str(COUNTER), "--agent", "evoround-agent", "--model", "openai/replay",
                   "--out", str(tmp_path / "runs"), env=NO_ENGINE)  # fmt: skip
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "--sandbox local" in lines[0] and "Docker" in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()


def test_model_agent_local_on_request_says_trusted_once(tmp_path: Path) -> None:
    with serve(SILENT) as srv:
        res = evoround("run", str(COUNTER), "--agent", "evoround-agent", "--model",
                       "openai/replay", "--api-base", srv.url, "--sandbox", "local", "--mode",
                       "mt", "--max-steps", "2", "--out", str(tmp_path / "runs"), "--job", "j",
                       env=NO_ENGINE)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    notes = [ln for ln in res.stderr.splitlines() if "trusted agents" in ln]
    assert len(notes) == 1 and "--sandbox local" in notes[0], res.stderr
    lock = json.loads((tmp_path / "runs" / "j" / "job.json").read_text())
    assert lock["sandbox"] == "local"


def test_model_free_agents_keep_the_local_default(tmp_path: Path) -> None:
    res = evoround("run", str(COUNTER), "--agent", "nop", "--mode", "mt", "--out",
                   str(tmp_path / "runs"), "--job", "j", env=NO_ENGINE)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "trusted agents" not in res.stderr
    lock = json.loads((tmp_path / "runs" / "j" / "job.json").read_text())
    assert lock["sandbox"] == "local"


def test_a_named_isolation_that_does_not_work_is_one_line(tmp_path: Path) -> None:
    """EVOROUND_LOCAL_ISOLATION=bwrap on a PATH without bwrap: exit 2 before anything runs."""
    res = evoround("run", str(COUNTER), "--agent", "nop", "--mode", "mt", "--out",
                   str(tmp_path / "runs"), env={"EVOROUND_LOCAL_ISOLATION": "bwrap",
                                                "PATH": str(tmp_path / "empty-bin")})  # fmt: skip
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "EVOROUND_LOCAL_ISOLATION=bwrap" in lines[0] and "bubblewrap" in lines[0]
    assert not (tmp_path / "runs").exists()
