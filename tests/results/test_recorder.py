"""A round is recorded once: the writer refuses a key the file holds (also one another
writer appended), the reader counts a key once and reports duplicates and torn lines."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from evoround.results import (
    DuplicateRecord,
    Mode,
    ResultsWriter,
    RoundResult,
    RoundStatus,
    problem_summary,
    read_results,
)


def _result(rnd: int, mode: Mode = Mode.mt, passed: bool = True) -> RoundResult:
    return RoundResult(
        job="j", task="t", task_digest="d", n_rounds=3, mode=mode, attempt=1, round=rnd,
        agent="a", sandbox="local", passed=passed,
        status=RoundStatus.passed if passed else RoundStatus.failed,
        started_at=datetime.now(UTC),
    )  # fmt: skip


def test_the_writer_refuses_a_recorded_key(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    w = ResultsWriter(path)
    w.append(_result(1))
    with pytest.raises(DuplicateRecord, match="t mt-01 round 1 is already recorded"):
        w.append(_result(1, passed=False))
    w.append(_result(1, mode=Mode.sr))  # another key
    w.close()
    w = ResultsWriter(path)  # a resumed job knows the file's keys
    with pytest.raises(DuplicateRecord):
        w.append(_result(1))
    w.close()
    records, problems = read_results(path)
    assert [(r.mode, r.round, r.passed) for r in records] == [
        (Mode.mt, 1, True),
        (Mode.sr, 1, True),
    ]
    assert problems == []


def test_the_writer_refuses_a_key_another_writer_appended(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    a, b = ResultsWriter(path), ResultsWriter(path)  # both opened on an empty file
    a.append(_result(1))
    with pytest.raises(DuplicateRecord):
        b.append(_result(1))
    b.append(_result(2))
    with pytest.raises(DuplicateRecord):
        a.append(_result(2))
    a.close()
    b.close()
    assert [r.round for r in read_results(path)[0]] == [1, 2]


def test_the_reader_counts_a_key_once_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first, again = _result(1), _result(1, passed=False)
    path.write_text(
        first.model_dump_json() + "\n"
        + '{"schema_version": 1, "job": "j", "ta\n'  # a torn line in the middle
        + _result(2).model_dump_json() + "\n"
        + again.model_dump_json() + "\n"
    )  # fmt: skip
    records, problems = read_results(path)
    assert [(r.round, r.passed) for r in records] == [(1, True), (2, True)]
    assert problems == [
        f"{path}:2: skipped unreadable record (1 errors)",
        f"{path}:4: skipped duplicate record of line 1 (t mt-01 round 1), counted once",
    ]
    summary = problem_summary(problems)
    assert summary == (
        f"{path}: 1 unreadable line(s) (line 2) not counted (evoround run --resume re-runs "
        "their rounds), 1 duplicate record(s) (line 4) counted once (report --json lists them)"
    )
