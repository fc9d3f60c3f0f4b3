"""``evoround tasks lint``: style problems that are not errors.

A task can load and validate and still measure the wrong thing: an instruction
that dictates the implementation tests obedience, not engineering; a correction
round that replaces no test checks nothing about the correction. Lint findings
are warnings, so authors can keep a deliberate exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from evoround.tasks._model import ChangeType, Round, Task
from evoround.tasks._overlay import is_test_module

SUPPORT_MODULES = frozenset({"conftest.py", "__init__.py"})
"""Python files in a suite that pytest loads without collecting them as tests."""

MAX_INSTRUCTION_WORDS = 600
MAX_NEW_TEST_FILES = 8
MAX_CODE_LINES = 8

HOW_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\b(on|at|in) line \d+", "points at a line number"),
    (r"\bstep \d+\s*[:.)]", "gives numbered implementation steps"),
    (
        r"\b(first|then|next|finally),? (open|edit|add|change|create|replace|insert)\b",
        "prescribes an editing sequence",
    ),
    (r"\breplace `[^`]+` with `[^`]+`", "dictates a textual replacement"),
    (r"\b(use|call) (a |an |the )?(for|while)[- ]loop\b", "prescribes control flow"),
    (r"\bimplement (it|this) (by|using|with)\b", "prescribes the implementation"),
)


@dataclass(frozen=True)
class LintFinding:
    code: str
    message: str
    round: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "round": self.round, "message": self.message}


def _code_lines(text: str) -> int:
    """Longest code block that contains an implementation (bodies, not signatures/output)."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    impl = [b for b in blocks if re.search(r"^\s+(return|for|while|if) ", b, flags=re.M)]
    return max((len(b.strip().splitlines()) for b in impl), default=0)


def lint_task(task: Task) -> list[LintFinding]:
    """Task-wide findings first, then each round's, rule by rule in ``ROUND_RULES`` order."""
    out: list[LintFinding] = []
    if not task.config.task.system_prompt.strip():
        out.append(LintFinding("L006", "no system prompt: agents get only the instructions"))
    if not task.config.task.description.strip():
        out.append(LintFinding("L007", "no task description"))
    for rnd in task.rounds:
        for rule in ROUND_RULES:
            out += rule(task, rnd)
    return out


def _says_how(task: Task, rnd: Round) -> list[LintFinding]:
    """L001: the instruction dictates the implementation (phrases, or a code block of it)."""
    i, text = rnd.index, rnd.instruction
    lowered = text.lower()
    out = [
        LintFinding("L001", f"instruction says HOW, not WHAT: it {why}", i)
        for pattern, why in HOW_PATTERNS
        if re.search(pattern, lowered)
    ]
    if _code_lines(text) > MAX_CODE_LINES:
        out.append(
            LintFinding(
                "L001",
                f"instruction says HOW, not WHAT: a code block of {_code_lines(text)} "
                "lines (show interfaces and examples, not the implementation)",
                i,
            )
        )
    return out


def _untested(task: Task, rnd: Round) -> list[LintFinding]:
    """L002: no tests at all; L008: Python test files pytest would never collect."""
    if not rnd.test_files:
        return [LintFinding("L002", "round without tests: nothing verifies it", rnd.index)]
    if task.config.verifier.kind != "pytest":
        return []
    ignored = [
        p
        for p in rnd.test_files
        if p.endswith(".py")
        and not is_test_module(p)
        and p.rsplit("/", 1)[-1] not in SUPPORT_MODULES
    ]
    if not ignored:
        return []
    collected = any(is_test_module(p) for p in rnd.test_files)
    unchecked = "" if collected else "; the round's new tests check nothing"
    message = (
        f"{', '.join(ignored)}: pytest does not collect it (name test files "
        f"test_*.py or *_test.py){unchecked}"
    )
    return [LintFinding("L008", message, rnd.index)]


def _no_change_types(task: Task, rnd: Round) -> list[LintFinding]:
    """L003: without change types, failures cannot be read against the kind of change."""
    if rnd.spec.change_types:
        return []
    return [LintFinding("L003", "missing change_types (extension|correction|conflict)", rnd.index)]


def _too_long(task: Task, rnd: Round) -> list[LintFinding]:
    """L004: a round too big to be one step of an evolution (words, or new test files)."""
    out = []
    words = len(rnd.instruction.split())
    if words > MAX_INSTRUCTION_WORDS:
        out.append(
            LintFinding("L004", f"very long round: {words} words (split it into rounds)", rnd.index)
        )
    if len(rnd.test_files) > MAX_NEW_TEST_FILES:
        out.append(
            LintFinding(
                "L004",
                f"very long round: {len(rnd.test_files)} new or replaced test files",
                rnd.index,
            )
        )
    return out


def _change_unchecked(task: Task, rnd: Round) -> list[LintFinding]:
    """L005: a correction or conflict that neither replaces nor retires an earlier test."""
    i = rnd.index
    changes = {ChangeType.correction, ChangeType.conflict} & set(rnd.spec.change_types)
    earlier = {p for r in task.rounds[: i - 1] for p in r.test_files}
    replaced = [p for p in rnd.test_files if p in earlier]
    if not changes or replaced or rnd.spec.retires:
        return []
    kinds = "/".join(sorted(c.value for c in changes))
    return [
        LintFinding(
            "L005",
            f"{kinds} round replaces and retires no earlier test file: the old "
            "behaviour is not checked as changed (failures cannot be classed stale)",
            i,
        )
    ]


ROUND_RULES: tuple[Callable[[Task, Round], list[LintFinding]], ...] = (
    _says_how,
    _untested,
    _no_change_types,
    _too_long,
    _change_unchecked,
)
"""The per-round rules, in the order their findings are listed."""
