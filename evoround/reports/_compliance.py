"""Process-compliance metrics over RoundResult records (pure: records in, numbers out).

- CSR = passed checks / scored checks (micro, pooled over every check result).
- ISR = share of units whose every scored check passed; units are rounds
  (``isr_round``), attempts (``isr_attempt``: all rounds of one attempt) and
  tasks (``isr_task``: every round of every attempt). A unit with no scored
  check is not a unit.
- ``not_applicable`` results are excluded from both; ``error`` results (judge
  failures, bad rule params) are excluded from both and counted apart, so a
  flaky judge can neither pass nor fail an agent.
- Compliance decay: CSR and ISR by round index.
- Conflict checks (a check naming ``wins_over``) are counted in CSR/ISR like any
  instruction and also reported apart, per losing source.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from evoround.results import CheckOutcome, CheckResult, Mode, RoundResult, dedupe


@dataclass(slots=True)
class Tally:
    """Counts of one group's check results. A plain dataclass, not a pydantic model: the
    bootstrap adds millions of results per report, and pydantic's checked attribute
    assignment made that most of the report's time."""

    passed: int = 0
    failed: int = 0
    not_applicable: int = 0
    error: int = 0

    @property
    def scored(self) -> int:
        return self.passed + self.failed

    @property
    def csr(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    def add(self, c: CheckResult) -> None:
        result = c.result  # compared by value, as the match statement before did
        if result == CheckOutcome.passed:
            self.passed += 1
        elif result == CheckOutcome.failed:
            self.failed += 1
        elif result == CheckOutcome.not_applicable:
            self.not_applicable += 1
        elif result == CheckOutcome.error:
            self.error += 1

    def merge(self, other: Tally) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.not_applicable += other.not_applicable
        self.error += other.error


class ComplianceRow(BaseModel):
    key: str
    csr: float | None
    isr: float | None = None
    passed: int
    failed: int
    not_applicable: int
    error: int
    units: int = 0


class CheckError(BaseModel):
    task: str
    attempt: int
    round: int
    check: str
    detail: str


class Compliance(BaseModel):
    mode: str
    checks: int
    csr: float | None
    isr_round: float | None
    isr_attempt: float | None
    isr_task: float | None
    totals: ComplianceRow
    by_category: list[ComplianceRow] = Field(default_factory=list)
    by_round: list[ComplianceRow] = Field(default_factory=list)
    """Compliance decay: CSR and round-ISR by round index."""
    by_task: list[ComplianceRow] = Field(default_factory=list)
    by_check: list[ComplianceRow] = Field(default_factory=list)
    conflicts: list[ComplianceRow] = Field(default_factory=list)
    """Conflict checks, keyed ``check (wins over SOURCE)``."""
    errors: list[CheckError] = Field(default_factory=list)


def _row(key: str, t: Tally, isr: float | None = None, units: int = 0) -> ComplianceRow:
    return ComplianceRow(
        key=key,
        csr=t.csr,
        isr=isr,
        passed=t.passed,
        failed=t.failed,
        not_applicable=t.not_applicable,
        error=t.error,
        units=units,
    )


def _isr(units: Iterable[Tally]) -> tuple[float | None, int]:
    """Share of units (with >= 1 scored check) in which every scored check passed.

    A unit is given as the tally of its checks: it has a scored check when its tally does,
    and every scored check passed when none failed."""
    scored = [t for t in units if t.scored]
    if not scored:
        return None, 0
    return sum(t.failed == 0 for t in scored) / len(scored), len(scored)


@dataclass(frozen=True)
class Rates:
    """The scalar compliance figures: CSR and ISR by round, attempt and task (None: no
    scored check), with the ISR round units counted."""

    csr: float | None
    isr_round: float | None
    isr_attempt: float | None
    isr_task: float | None
    total: Tally
    round_units: int


def _tallied(records: Iterable[RoundResult], mode: Mode) -> list[tuple[RoundResult, Tally]]:
    """The mode's deduplicated records in order, each with the tally of its checks."""
    recs = sorted(
        (r for r in dedupe(records) if r.mode is mode),
        key=lambda r: (r.task, r.attempt, r.round),
    )
    out = []
    for r in recs:
        own = Tally()
        for c in r.checks:
            own.add(c)
        out.append((r, own))
    return out


def _rates(tallied: list[tuple[RoundResult, Tally]]) -> Rates:
    total = Tally()
    attempts: dict[tuple[str, int], Tally] = defaultdict(Tally)
    tasks: dict[str, Tally] = defaultdict(Tally)
    for r, own in tallied:
        total.merge(own)
        attempts[(r.task, r.attempt)].merge(own)
        tasks[r.task].merge(own)
    isr_round, n_rounds = _isr(own for _, own in tallied)
    return Rates(
        csr=total.csr,
        isr_round=isr_round,
        isr_attempt=_isr(attempts.values())[0],
        isr_task=_isr(tasks.values())[0],
        total=total,
        round_units=n_rounds,
    )


def compliance_rates(records: Iterable[RoundResult], mode: Mode = Mode.mt) -> Rates:
    """CSR and the ISRs alone, by the code compute_compliance uses for them: what the
    bootstrap recomputes a thousand times, without the breakdowns it never reads."""
    return _rates(_tallied(records, mode))


@dataclass
class _Groups:
    """The breakdowns of one compute_compliance pass: tallies by group, and the round
    units (as tallies) of each round index and task for their ISR."""

    by_cat: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_round: dict[int, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_task: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_check: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    conflicts: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    rounds_by_index: dict[int, list[Tally]] = field(default_factory=lambda: defaultdict(list))
    rounds_by_task: dict[str, list[Tally]] = field(default_factory=lambda: defaultdict(list))
    errors: list[CheckError] = field(default_factory=list)


def _add_checks(g: _Groups, r: RoundResult, max_errors: int) -> None:
    """The record's checks into the per-check groups."""
    for c in r.checks:
        g.by_cat[c.category.value].add(c)
        g.by_check[f"{r.task}:{c.id}"].add(c)
        if c.conflict:
            g.conflicts[f"{c.id} ({c.category.value} wins over {c.wins_over})"].add(c)
        if c.result is CheckOutcome.error and len(g.errors) < max_errors:
            g.errors.append(
                CheckError(
                    task=r.task, attempt=r.attempt, round=r.round, check=c.id, detail=c.detail
                )
            )


def _add_record(g: _Groups, r: RoundResult, own: Tally, max_errors: int) -> None:
    """One record (``own``: the tally of its checks) into the breakdowns; a round index or
    task with no check gets no row."""
    _add_checks(g, r, max_errors)
    g.rounds_by_index[r.round].append(own)
    g.rounds_by_task[r.task].append(own)
    if r.checks:
        g.by_round[r.round].merge(own)
        g.by_task[r.task].merge(own)


def compute_compliance(
    records: Iterable[RoundResult], mode: Mode = Mode.mt, max_errors: int = 50
) -> Compliance:
    tallied = _tallied(records, mode)
    rates = _rates(tallied)
    g = _Groups()
    for r, own in tallied:
        _add_record(g, r, own, max_errors)
    return Compliance(
        mode=mode.value,
        checks=sum(len(r.checks) for r, _ in tallied),
        csr=rates.csr,
        isr_round=rates.isr_round,
        isr_attempt=rates.isr_attempt,
        isr_task=rates.isr_task,
        totals=_row("all", rates.total, rates.isr_round, rates.round_units),
        by_category=[_row(k, t) for k, t in sorted(g.by_cat.items())],
        by_round=[
            _row(str(i), t, *_isr(g.rounds_by_index[i])) for i, t in sorted(g.by_round.items())
        ],
        by_task=[_row(k, t, *_isr(g.rounds_by_task[k])) for k, t in sorted(g.by_task.items())],
        by_check=[_row(k, t) for k, t in sorted(g.by_check.items())],
        conflicts=[_row(k, t) for k, t in sorted(g.conflicts.items())],
        errors=g.errors,
    )
