"""Synthetic job folders for the viewer's tests and benchmark: the files a job writes
(job.json, results.jsonl, round folders with trajectory, checks and recorded changes),
built from the real record models, so a 2,000-round job takes a second, not a day."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from evoround.results import (
    CHANGES_FILE,
    PATCH_FILE,
    FileChange,
    JobConfig,
    Mode,
    RoundChanges,
    RoundResult,
    RoundStatus,
    TaskRef,
    TestOutcome,
    TestResult,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def job_config(
    name: str, tasks: dict[str, int], agent: str = "scripted:synth", attempts: int = 1
) -> JobConfig:
    return JobConfig(
        job=name,
        agent=agent,
        attempts=attempts,
        modes=[Mode.mt, Mode.sr],
        sandbox="local",
        tasks={
            t: TaskRef(digest="0" * 64, n_rounds=n, path=f"/nonexistent/{t}")
            for t, n in tasks.items()
        },
    )


def write_round(
    job: Path,
    rec: RoundResult,
    *,
    events: list[dict[str, object]] | None = None,
    changes: RoundChanges | None = None,
    patch: str = "",
    checks: list[dict[str, object]] | None = None,
    append: bool = True,
) -> None:
    """One round's folder and its line in results.jsonl."""
    assert rec.artifacts
    folder = job / rec.artifacts
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(e) for e in (events or [])]
    (folder / "trajectory.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if changes is not None:
        (folder / PATCH_FILE).write_text(patch, encoding="utf-8")
        (folder / CHANGES_FILE).write_text(changes.model_dump_json(), encoding="utf-8")
    if checks is not None:
        (folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    if append:
        with open(job / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(rec.model_dump_json() + "\n")


def record(
    job: str,
    task: str,
    mode: str,
    attempt: int,
    rnd: int,
    n: int,
    *,
    passed: bool = True,
    **kw: object,
) -> RoundResult:
    fields: dict[str, object] = {
        "job": job,
        "task": task,
        "task_digest": "0" * 64,
        "n_rounds": n,
        "mode": Mode(mode),
        "attempt": attempt,
        "round": rnd,
        "agent": "scripted:synth",
        "sandbox": "local",
        "passed": passed,
        "status": RoundStatus.passed if passed else RoundStatus.failed,
        "tests_passed": rnd if passed else rnd - 1,
        "tests_total": rnd,
        "started_at": T0,
        "finished_at": T0,
        "artifacts": f"{task}/{mode}-{attempt:02d}/round-{rnd:02d}",
    }
    fields.update(kw)
    return RoundResult.model_validate(fields)


def regression(file: str, name: str, message: str, origin: int) -> dict[str, object]:
    """The record fields of a round failed by one regression."""
    t = TestResult(
        file=file,
        name=name,
        outcome=TestOutcome.failed,
        message=message,
        failure_class="regression",  # type: ignore[arg-type]  # validated by pydantic
        origin_round=origin,
    )
    return {"failing_tests": [t], "failure_classes": {"regression": 1}}


def calc_change(rnd: int) -> tuple[RoundChanges, str]:
    """Round ``rnd`` appends ``f{rnd}`` to calc.py (round 1 creates it)."""
    kind = "added" if rnd == 1 else "modified"
    before = "".join(f"def f{i}():\n    return {i}\n" for i in range(1, rnd))
    head = "--- /dev/null\n" if rnd == 1 else "--- a/calc.py\n"
    n_old = 2 * (rnd - 1)
    patch = (
        f"{head}+++ b/calc.py\n@@ -{n_old},0 +{n_old + 1},2 @@\n+def f{rnd}():\n+    return {rnd}\n"
    )
    ch = RoundChanges(
        parent=None if rnd == 1 else f"snap-{rnd - 1}",
        **{kind: [FileChange(path="calc.py", size=len(before) + 30)]},
    )
    return ch, patch


def synthetic_job(
    root: Path,
    name: str,
    tasks: int,
    rounds: int,
    attempts: int = 1,
    events: int = 40,
    agent: str = "scripted:synth",
) -> Path:
    """A finished job of ``tasks`` x ``attempts`` x ``rounds`` in MT and SR, every round
    with a trajectory of ``events`` events (command output in ANSI colour) and a recorded
    change; the last MT round of
    each attempt fails by a regression of round 1 in calc.py."""
    job = root / name
    job.mkdir(parents=True)
    names = {f"t{i:03d}": rounds for i in range(tasks)}
    (job / "job.json").write_text(
        job_config(name, names, agent=agent, attempts=attempts).model_dump_json(),
        encoding="utf-8",
    )
    evs = [
        {"type": "message", "role": "user", "content": "Add f{i}() to calc.py."},
        *[
            {  # coloured as a terminal program writes it
                "type": "command",
                "content": f"echo step {j}\n\x1b[32mstep {j}\x1b[0m",
                "exit_code": 0,
            }
            for j in range(events - 2)
        ],
        {
            "type": "model_call",
            "name": "gpt",
            "usage": {"prompt_tokens": 900, "completion_tokens": 80},
        },
    ]
    for task in names:
        for a in range(1, attempts + 1):
            for mode in ("mt", "sr"):
                for r in range(1, rounds + 1):
                    fail = mode == "mt" and r == rounds
                    extra = (
                        regression(
                            "test_calc.py", "test_f1", "calc.py:2: in f1\nE  assert 0 == 1", 1
                        )
                        if fail
                        else {}
                    )
                    rec = record(name, task, mode, a, r, rounds, passed=not fail, **extra)
                    ch, patch = calc_change(r)
                    write_round(job, rec, events=evs, changes=ch, patch=patch, checks=[])
    return job


ANSI_OUT = (
    "\x1b[1m\x1b[31mFAILED\x1b[0m tests/test_calc.py::test_f1 - \x1b[32massert\x1b[39m 0 == 1\r\n"
    "progress 10%\rprogress 100%\n\x1b]0;window title\x07done \x1b[38;5;196mred256\x1b[0m"
)
UNICODE = "héllo ✓ 日本語 🚀 مرحبا"
NAMED = 'src/"><svg onload=alert(1)>\u202eyp.exe\x1b[31m.py'


def hostile_names_job(tmp_path: Path) -> Path:
    """A round whose output is coloured, whose text is unicode and whose file names hold
    markup, a right-to-left override and an escape byte."""
    job = tmp_path / "u"
    job.mkdir()
    (job / "job.json").write_text(job_config("u", {"t": 1}).model_dump_json())
    ch = RoundChanges(added=[FileChange(path=NAMED, size=10)])
    patch = f"--- /dev/null\n+++ b/{NAMED}\n@@ -0,0 +1,2 @@\n+{UNICODE}\n+\x1b[31mred\x1b[0m\n"
    extra = regression(NAMED, "test_x", ANSI_OUT, 1)
    rec = record("u", "t", "mt", 1, 1, 1, passed=False, **extra)
    events = [
        {"type": "message", "role": "user", "content": f"Fix {UNICODE}"},
        {"type": "tool_call", "name": "bash", "arguments": {"cmd": f"cat {UNICODE}"}},
        {"type": "command", "content": ANSI_OUT, "exit_code": 1},
        {"type": "command", "content": "\x1b[32m" + "y" * 50_000 + "\x1b[0m" + "z" * 50_000},
    ]
    checks = [{"id": "c1", "result": "fail", "detail": "\x1b[31mbad\x1b[0m", "evidence": []}]
    write_round(job, rec, events=events, changes=ch, patch=patch, checks=checks)
    return job
