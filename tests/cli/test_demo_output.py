"""What a newcomer reads after ``evoround demo``: short, the leaderboard last and explained,
and the same number of agents in the README, in ``demo --help`` and in the run itself.

The demo runs on the counter fixture alone instead of the library (same code path, seconds
instead of minutes): its ``library_path`` is the only thing pointed elsewhere. One task is
enough: what is read here is the shape of the output (legend, leaderboard, folder names),
not figures that need several tasks; the library itself is validated by
``tests/engine/test_validate.py`` and played by the scripted agents in
``tests/tasks/test_library.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evoround.cli._run as run_module
from evoround.cli import app
from tests.helpers import copy_counter

README = Path(__file__).parents[2] / "README.md"
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    home = tmp_path_factory.mktemp("demo")
    out, library = home / "runs", home / "library"
    library.mkdir()
    copy_counter(library)  # all five fixture tasks took 191 s in CI; counter alone suffices
    mp = pytest.MonkeyPatch()
    mp.setattr(run_module, "library_path", lambda: library)
    mp.setenv("COLUMNS", "200")
    try:
        # what a newcomer reads on a terminal (captured here, auto would choose plain lines)
        res = CliRunner().invoke(app, ["demo", "--out", str(out), "--progress", "live"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    return res.output, out


def test_leaderboard_is_last_and_every_column_is_explained(demo: tuple[str, Path]) -> None:
    text, _ = demo
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) < 60, "the demo prints a screenful, not hundreds of lines"
    board = next(i for i, ln in enumerate(lines) if "Leaderboard" in ln)
    assert all(re.search("[│┃─━]", ln) or "95%" in ln for ln in lines[board + 1 :])
    header = next(ln for ln in lines[board:] if "MT@k" in ln)
    columns = [c.strip() for c in re.split(r"[│┃]", header) if c.strip()]
    legend = text[: text.index("Leaderboard")]
    for col in columns:
        if col in ("job", "agent"):
            continue
        name = col.split(" / ")[0]
        assert re.search(rf"^\s+{re.escape(name)}(?=\s)", legend, re.M) or f"/ {col}" in legend, col
    assert "running: -" not in text
    assert "below" not in lines[-1], "the last line points at nothing below it"


def test_agent_count_agrees_in_readme_help_and_run(demo: tuple[str, Path]) -> None:
    text, out = demo
    jobs = sorted(p for p in out.iterdir() if p.is_dir())
    n = len(jobs)
    help_text = CliRunner().invoke(app, ["demo", "--help"], env={"COLUMNS": "200"}).output
    said_help = re.search(r"with (\w+) agents", help_text)
    said_readme = re.search(r"with (\w+) agents", README.read_text())
    assert said_help and said_readme
    assert NUMBERS[said_help.group(1)] == n == NUMBERS[said_readme.group(1)], (
        said_help.group(0), said_readme.group(0), n)  # fmt: skip
    board = text[text.index("Leaderboard") :]
    for job in jobs:
        agent = job.name.split("__demo__", 1)[1]
        assert agent in board, agent


def test_attempt_folders_and_report_use_one_name(demo: tuple[str, Path]) -> None:
    _, out = demo
    job = next(p for p in out.iterdir() if p.name.endswith("__demo__nop"))
    assert (job / "counter" / "mt-01").is_dir()
    html = next(out.glob("*__demo__report.html")).read_text()
    assert "mt-01" in html and ">mt-1<" not in html and "mt-1:" not in html


def test_readme_example_script_does_what_it_says_on_the_counter_task(tmp_path: Path) -> None:
    """The README's script applies the reference, then only talks in round 3: it must pass
    rounds 1-2 and fail round 3 (it was once a no-op that failed round 1)."""
    from evoround.results import Mode, RoundStatus, read_results
    from tests.helpers import COUNTER

    text = README.read_text()
    block = re.search(r"A script is YAML.*?```yaml\n(.*?)```", text, re.S)
    assert block, "the README's example script"
    script = tmp_path / "s.yaml"
    script.write_text(block.group(1))
    res = CliRunner().invoke(app, ["run", str(COUNTER), "--agent", "scripted", "--script",
                                   str(script), "--mode", "mt", "--out", str(tmp_path / "runs"),
                                   "--job", "j"])  # fmt: skip
    assert res.exit_code == 0, res.output
    records = read_results(tmp_path / "runs" / "j" / "results.jsonl")[0]
    mt = sorted((r.round, r.status) for r in records if r.mode is Mode.mt)
    assert mt == [(1, RoundStatus.passed), (2, RoundStatus.passed), (3, RoundStatus.failed)]
