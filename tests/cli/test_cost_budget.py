"""Token cost per round/attempt/job from litellm's price map, budgets that stop new work,
and the lean install (no litellm) that still runs the oracle.

Real parts: the replay server over HTTP answers evoround-agent through litellm, the
verifier runs real pytest, the CLI runs in-process through its entry point (the lean
install in a subprocess of its own: it hides litellm from a fresh interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evoround import api
from evoround.results import read_results
from evoround.scaffolds import ModelOptions, serve
from tests.helpers import COUNTER, CliResult, evoround_cli

# every round (the counter task has 4): one plain answer, no tool call, so the agent stops
SILENT = {"rounds": [[{"text": "Nothing to do."}] for _ in range(4)]}


def evoround(*args: str, env: dict | None = None) -> CliResult:
    """The command in-process, through its entry point (tests/helpers.py)."""
    return evoround_cli(*args, env=env)


def test_cost_is_priced_per_round_attempt_and_job(tmp_path: Path) -> None:
    """A priced model (gpt-4o) gets USD from litellm's map; the sums add up per attempt."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled map, offline
    import litellm

    with serve(SILENT) as srv:
        res = api.run([COUNTER], agent="evoround-agent", out=tmp_path, job="j", modes=["sr"],
                      model=ModelOptions(model="openai/gpt-4o", api_base=srv.url, max_steps=2))  # fmt: skip
    records, _ = read_results(tmp_path / "j" / "results.jsonl")
    assert len(records) == 4 and all(r.usage is not None for r in records)
    for r in records:
        u = r.usage
        assert u is not None and u.prompt_tokens > 0 and u.completion_tokens > 0
        want = sum(litellm.cost_per_token(model="openai/gpt-4o", prompt_tokens=u.prompt_tokens,
                                          completion_tokens=u.completion_tokens))  # fmt: skip
        assert u.cost_usd is not None and abs(u.cost_usd - want) < 1e-12
    assert res.cost.known and abs(res.cost.usd - sum(r.usage.cost_usd for r in records)) < 1e-9
    assert res.cost.tokens == sum(r.usage.total_tokens for r in records)
    (attempt,) = res.attempts  # SR attempt 1 holds the 4 rounds
    assert attempt.rounds == 4 and attempt.cost == res.cost
    assert str(res.cost).startswith("$")


def test_a_model_without_a_price_is_unknown_never_zero(tmp_path: Path) -> None:
    with serve(SILENT) as srv:
        res = api.run([COUNTER], agent="evoround-agent", out=tmp_path, job="j", modes=["sr"],
                      model=ModelOptions(model="openai/replay", api_base=srv.url, max_steps=2))  # fmt: skip
    records, _ = read_results(tmp_path / "j" / "results.jsonl")
    assert all(r.usage and r.usage.total_tokens > 0 and r.usage.cost_usd is None for r in records)
    assert res.cost.usd is None and str(res.cost) == "unknown"
    assert res.cost.tokens > 0
    from evoround.reports import build_report

    board = build_report([load(tmp_path / "j")])["leaderboard"][0]
    assert board["cost_usd"] == "unknown"


def load(path: Path):
    from evoround.results import load_job

    return load_job(path)


def test_max_tokens_total_stops_new_rounds_and_a_resume_finishes(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    with serve(SILENT) as srv:
        base = ["run", str(COUNTER), "--agent", "evoround-agent", "--model", "openai/replay",
                "--api-base", srv.url, "--mode", "sr", "--max-steps", "2", "--sandbox", "local"]  # fmt: skip
        res = evoround(*base, "--out", out, "--job", "j", "--max-tokens-total", "1")
        assert res.returncode == 1, res.stderr[-2000:]
        assert "budget stopped the job: --max-tokens-total 1 reached" in res.stderr
        assert "--max-tokens-total N" in res.stderr and "Traceback" not in res.stderr
        records, _ = read_results(tmp_path / "runs" / "j" / "results.jsonl")
        assert len(records) == 1  # the round in flight finished; no new round started
        again = evoround(*base, "--resume", str(tmp_path / "runs" / "j"),
                         "--max-tokens-total", "100000000")  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    records, _ = read_results(tmp_path / "runs" / "j" / "results.jsonl")
    assert len(records) == 4


def test_max_cost_stops_once_spent(tmp_path: Path) -> None:
    with serve(SILENT) as srv:
        res = api.run([COUNTER], agent="evoround-agent", out=tmp_path, job="j", modes=["sr"],
                      model=ModelOptions(model="openai/gpt-4o", api_base=srv.url, max_steps=2),
                      max_cost=1e-9)  # fmt: skip
    assert res.rounds == 1 and res.budget_stop and "--max-cost" in res.budget_stop
    assert res.exit_code == 1


def test_a_budget_reached_by_the_last_round_stopped_nothing(tmp_path: Path) -> None:
    """Exit 0 when the budget is reached only as the last attempt ends: nothing was left."""
    with serve(SILENT) as srv:
        model = ModelOptions(model="openai/replay", api_base=srv.url, max_steps=2)
        full = api.run([COUNTER], agent="evoround-agent", out=tmp_path, job="a", modes=["sr"],
                       model=model)  # fmt: skip
        res = api.run([COUNTER], agent="evoround-agent", out=tmp_path, job="b", modes=["sr"],
                      model=model, max_tokens_total=full.cost.tokens)  # fmt: skip
    assert res.cost.tokens == full.cost.tokens and res.rounds == 4
    assert res.budget_stop is None and res.exit_code == 0


def test_max_cost_needs_a_model_with_a_price(tmp_path: Path) -> None:
    res = evoround("run", str(COUNTER), "--agent", "evoround-agent", "--model", "openai/replay",
                   "--api-base", "http://127.0.0.1:9", "--max-cost", "1", "--sandbox", "local",
                   "--out", str(tmp_path / "runs"))  # fmt: skip
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "--max-cost 1: litellm's price map has no price for --model openai/replay" in lines[0]
    assert not (tmp_path / "runs").exists()


def _without_litellm(*args: str) -> subprocess.CompletedProcess:
    """The CLI as if litellm were not installed (``pip install evoround`` without extras)."""
    code = "import sys; sys.modules['litellm'] = None; from evoround.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})  # fmt: skip


def test_lean_install_runs_the_oracle_and_names_the_models_extra(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    res = _without_litellm("run", str(COUNTER), "--agent", "oracle", "--mode", "mt", "--out", out)
    assert res.returncode == 0, res.stderr[-2000:]
    for args in (["--agent", "evoround-agent", "--model", "openai/x"],
                 ["--judge-model", "openai/x"]):  # fmt: skip
        res = _without_litellm("run", str(COUNTER), *args, "--out", str(tmp_path / "r2"))
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2 and len(lines) == 1, res.stderr
        assert "pip install 'evoround[models]'" in lines[0]
    assert not (tmp_path / "r2").exists()
