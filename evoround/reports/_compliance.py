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

from pydantic import BaseModel, Field

from evoround.results import CheckOutcome, CheckResult, Mode, RoundResult, dedupe


class Tally(BaseModel):
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
        match c.result:
            case CheckOutcome.passed:
                self.passed += 1
            case CheckOutcome.failed:
                self.failed += 1
            case CheckOutcome.not_applicable:
                self.not_applicable += 1
            case CheckOutcome.error:
                self.error += 1


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


def _isr(units: dict[object, list[CheckResult]]) -> tuple[float | None, int]:
    """Share of units (with >= 1 scored check) in which every scored check passed."""
    scored = [[c for c in cs if c.scored] for cs in units.values()]
    scored = [cs for cs in scored if cs]
    if not scored:
        return None, 0
    return sum(all(c.result is CheckOutcome.passed for c in cs) for cs in scored) / len(
        scored
    ), len(scored)


def compute_compliance(
    records: Iterable[RoundResult], mode: Mode = Mode.mt, max_errors: int = 50
) -> Compliance:
    recs = sorted(
        (r for r in dedupe(records) if r.mode is mode),
        key=lambda r: (r.task, r.attempt, r.round),
    )
    total = Tally()
    by_cat: dict[str, Tally] = defaultdict(Tally)
    by_round: dict[int, Tally] = defaultdict(Tally)
    by_task: dict[str, Tally] = defaultdict(Tally)
    by_check: dict[str, Tally] = defaultdict(Tally)
    conflicts: dict[str, Tally] = defaultdict(Tally)
    round_units: dict[object, list[CheckResult]] = {}
    attempt_units: dict[object, list[CheckResult]] = defaultdict(list)
    task_units: dict[object, list[CheckResult]] = defaultdict(list)
    round_units_by_index: dict[int, dict[object, list[CheckResult]]] = defaultdict(dict)
    task_round_units: dict[str, dict[object, list[CheckResult]]] = defaultdict(dict)
    errors: list[CheckError] = []
    n = 0
    for r in recs:
        round_units[r.key] = r.checks
        round_units_by_index[r.round][r.key] = r.checks
        task_round_units[r.task][r.key] = r.checks
        attempt_units[(r.task, r.attempt)].extend(r.checks)
        task_units[r.task].extend(r.checks)
        for c in r.checks:
            n += 1
            total.add(c)
            by_cat[c.category.value].add(c)
            by_round[r.round].add(c)
            by_task[r.task].add(c)
            by_check[f"{r.task}:{c.id}"].add(c)
            if c.conflict:
                conflicts[f"{c.id} ({c.category.value} wins over {c.wins_over})"].add(c)
            if c.result is CheckOutcome.error and len(errors) < max_errors:
                errors.append(
                    CheckError(
                        task=r.task, attempt=r.attempt, round=r.round, check=c.id, detail=c.detail
                    )
                )
    isr_round, n_rounds = _isr(round_units)
    isr_attempt, _ = _isr(attempt_units)
    isr_task, _ = _isr(task_units)
    return Compliance(
        mode=mode.value,
        checks=n,
        csr=total.csr,
        isr_round=isr_round,
        isr_attempt=isr_attempt,
        isr_task=isr_task,
        totals=_row("all", total, isr_round, n_rounds),
        by_category=[_row(k, t) for k, t in sorted(by_cat.items())],
        by_round=[
            _row(str(i), t, *_isr(round_units_by_index[i])) for i, t in sorted(by_round.items())
        ],
        by_task=[_row(k, t, *_isr(task_round_units[k])) for k, t in sorted(by_task.items())],
        by_check=[_row(k, t) for k, t in sorted(by_check.items())],
        conflicts=[_row(k, t) for k, t in sorted(conflicts.items())],
        errors=errors,
    )
