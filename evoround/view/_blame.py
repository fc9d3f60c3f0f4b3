"""Regression blame: which earlier rounds' edits touched what a failing test ran through.

A regression or stale failure names the round whose requirement broke (``origin_round``);
what a reader wants next is the edit that broke it. The traceback names files; the rounds
of the same attempt whose recorded change touched one of them are the suspects, newest
first. When the traceback names no workspace file (an assertion in the test itself), the
suspects are the rounds after the requirement's round that changed any file, said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from evoround.results import RoundChanges, RoundResult, TestResult
from evoround.view._round import read_changes, round_folder

BLAMED = frozenset({"regression", "stale_behaviour"})
_PATHS = re.compile(r"([\w./-]+\.[A-Za-z0-9]+)(?::\d+|\", line \d+)")


@dataclass(frozen=True)
class Suspect:
    round: int
    files: tuple[str, ...]


@dataclass(frozen=True)
class Blame:
    test: str
    failure_class: str
    origin_round: int | None
    suspects: tuple[Suspect, ...]
    basis: str
    """Why these rounds: ``traceback`` (they touched a file the traceback names), ``name``
    (a file named like the test's subject, ``test_core.py`` -> ``core.py``) or ``since``
    (every round after the requirement's round that changed a file)."""


def traceback_files(message: str) -> set[str]:
    return {m.group(1).lstrip("./") for m in _PATHS.finditer(message or "")}


def _touches(changed: set[str], named: set[str]) -> set[str]:
    return {
        p for p in changed for n in named if p == n or n.endswith("/" + p) or p.endswith("/" + n)
    }


def subject_files(test_file: str) -> set[str]:
    """``tests/test_core.py`` -> {``core.py``}: what a test file is usually about."""
    stem = test_file.rsplit("/", 1)[-1]
    for prefix in ("test_", "tests_"):
        if stem.startswith(prefix):
            return {stem[len(prefix) :]}
    return {stem[: -len("_test.py")] + ".py"} if stem.endswith("_test.py") else set()


def _suspects(history: list[tuple[int, RoundChanges]], named: set[str]) -> list[Suspect]:
    return [
        Suspect(r, tuple(sorted(_touches(ch.paths, named))))
        for r, ch in history
        if _touches(ch.paths, named)
    ]


def _one(t: TestResult, history: list[tuple[int, RoundChanges]]) -> Blame:
    suspects, basis = _suspects(history, traceback_files(t.message or "")), "traceback"
    if not suspects:
        suspects, basis = _suspects(history, subject_files(t.file)), "name"
    if not suspects:
        start = t.origin_round or 0
        suspects = [
            Suspect(r, tuple(sorted(ch.paths))[:20]) for r, ch in history if r > start and ch.paths
        ]
        basis = "since"
    return Blame(
        test=f"{t.file}::{t.name}",
        failure_class=str(t.failure_class or ""),
        origin_round=t.origin_round,
        suspects=tuple(sorted(suspects, key=lambda s: -s.round)),
        basis=basis,
    )


def blame(job_dir: Path, rec: RoundResult, attempt: list[RoundResult]) -> list[Blame]:
    """One :class:`Blame` per failing test of ``rec`` classed regression or stale."""
    blamed = [t for t in rec.failing_tests if str(t.failure_class or "") in BLAMED]
    if not blamed:
        return []
    history = _history(job_dir, rec, attempt)
    return [_one(t, history) for t in blamed]


def _history(
    job_dir: Path, rec: RoundResult, attempt: list[RoundResult]
) -> list[tuple[int, RoundChanges]]:
    """(round, its recorded change) of the attempt up to and including ``rec``'s round."""
    out: list[tuple[int, RoundChanges]] = []
    for r in attempt:
        folder = round_folder(job_dir, r) if r.round <= rec.round else None
        ch = read_changes(folder) if folder is not None else None
        if ch is not None:
            out.append((r.round, ch))
    return sorted(out, key=lambda x: x[0])
