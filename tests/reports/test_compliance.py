"""compute_compliance against the definitions of its module docstring, restated naively here
(one list of check results per unit, recounted from scratch for every row), on random jobs:
checks of every outcome and category, conflicts, errors past the cap, rounds and whole
attempts without checks, duplicate records, both modes. The fast path (per-record tallies,
``compliance_rates`` for the bootstrap) must give every field of the naive one.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime

import pytest

from evoround.reports import compute_compliance
from evoround.reports._compliance import Compliance, compliance_rates
from evoround.results import CheckOutcome, CheckResult, Mode, RoundResult, RoundStatus
from evoround.tasks import CheckCategory, CheckKind, CheckScope

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _check(rng: random.Random, i: int) -> CheckResult:
    conflict = rng.random() < 0.15
    return CheckResult(
        id=f"c{rng.randint(1, 6)}",
        category=rng.choice(list(CheckCategory)),
        kind=CheckKind.rule,
        scope=CheckScope.round,
        round=i,
        result=rng.choice(list(CheckOutcome)),
        wins_over=rng.choice(list(CheckCategory)) if conflict else None,
        conflict=conflict,
        detail=f"d{rng.randint(0, 9)}",
    )


def _records(seed: int) -> list[RoundResult]:
    rng = random.Random(seed)
    out = []
    for t in range(rng.randint(1, 4)):
        for mode in Mode:
            for a in range(1, rng.randint(1, 3) + 1):
                bare = rng.random() < 0.2  # an attempt with no check at all
                for i in range(1, rng.randint(1, 5) + 1):
                    n = 0 if bare else rng.choice([0, 1, 2, 3, 5])
                    rec = RoundResult(
                        job="j", task=f"t{t}", task_digest="x", n_rounds=5, mode=mode,
                        attempt=a, round=i, agent="a", sandbox="local", passed=True,
                        status=RoundStatus.passed, started_at=NOW,
                        checks=[_check(rng, i) for _ in range(n)],
                    )  # fmt: skip
                    out.append(rec)
                    if rng.random() < 0.1:  # a later record of the same round replaces it
                        out.append(rec.model_copy(update={"checks": [_check(rng, i)]}))
    rng.shuffle(out)
    return out


def _latest(records: list[RoundResult], mode: Mode) -> list[RoundResult]:
    by_key = {}
    for r in records:
        by_key[(r.task, r.mode, r.attempt, r.round)] = r
    kept = [r for r in by_key.values() if r.mode is mode]
    return sorted(kept, key=lambda r: (r.task, r.attempt, r.round))


def _csr(cs: list[CheckResult]) -> float | None:
    scored = [c for c in cs if c.result in (CheckOutcome.passed, CheckOutcome.failed)]
    return sum(c.result is CheckOutcome.passed for c in scored) / len(scored) if scored else None


def _isr(units: list[list[CheckResult]]) -> tuple[float | None, int]:
    scored = [
        [c for c in u if c.result in (CheckOutcome.passed, CheckOutcome.failed)] for u in units
    ]
    scored = [u for u in scored if u]
    if not scored:
        return None, 0
    return sum(all(c.result is CheckOutcome.passed for c in u) for u in scored) / len(scored), len(scored)  # fmt: skip


def _counts(cs: list[CheckResult]) -> dict[str, int]:
    return {o.name: sum(c.result is o for c in cs) for o in CheckOutcome}


def _row(key: str, cs: list[CheckResult], isr: float | None = None, units: int = 0) -> dict:
    return {"key": key, "csr": _csr(cs), "isr": isr, **_counts(cs), "units": units}


def _grouped(pairs: list[tuple[str, CheckResult]]) -> dict[str, list[CheckResult]]:
    out: dict[str, list[CheckResult]] = defaultdict(list)
    for k, c in pairs:
        out[k].append(c)
    return out


def naive(records: list[RoundResult], mode: Mode, max_errors: int) -> dict:
    """Every field of ``Compliance``, from the definitions."""
    recs = _latest(records, mode)
    every = [c for r in recs for c in r.checks]
    rounds = [r.checks for r in recs]
    attempts = _grouped([(f"{r.task}/{r.attempt}", c) for r in recs for c in r.checks])
    tasks = _grouped([(r.task, c) for r in recs for c in r.checks])
    isr_round, n = _isr(rounds)
    by_round = _grouped([(str(r.round), c) for r in recs for c in r.checks])
    by_task = tasks
    conflicts = _grouped([
        (f"{c.id} ({c.category.value} wins over {c.wins_over})", c)
        for r in recs for c in r.checks if c.conflict
    ])  # fmt: skip
    errors = [
        {"task": r.task, "attempt": r.attempt, "round": r.round, "check": c.id, "detail": c.detail}
        for r in recs for c in r.checks if c.result is CheckOutcome.error
    ][:max_errors]  # fmt: skip
    return {
        "mode": mode.value,
        "checks": len(every),
        "csr": _csr(every),
        "isr_round": isr_round,
        "isr_attempt": _isr(list(attempts.values()))[0],
        "isr_task": _isr(list(tasks.values()))[0],
        "totals": _row("all", every, isr_round, n),
        "by_category": [
            _row(k, cs)
            for k, cs in sorted(_grouped([(c.category.value, c) for c in every]).items())
        ],
        "by_round": [
            _row(k, cs, *_isr([r.checks for r in recs if str(r.round) == k]))
            for k, cs in sorted(by_round.items(), key=lambda kv: int(kv[0]))
        ],
        "by_task": [
            _row(k, cs, *_isr([r.checks for r in recs if r.task == k]))
            for k, cs in sorted(by_task.items())
        ],
        "by_check": [
            _row(k, cs)
            for k, cs in sorted(
                _grouped([(f"{r.task}:{c.id}", c) for r in recs for c in r.checks]).items()
            )
        ],  # fmt: skip
        "conflicts": [_row(k, cs) for k, cs in sorted(conflicts.items())],
        "errors": errors,
    }


def _dump(comp: Compliance) -> dict:
    return comp.model_dump()


@pytest.mark.parametrize("seed", range(60))
def test_compliance_equals_its_definitions(seed: int) -> None:
    records = _records(seed)
    for mode in Mode:
        for cap in (0, 2, 50):
            assert _dump(compute_compliance(records, mode, max_errors=cap)) == naive(
                records, mode, cap
            )


@pytest.mark.parametrize("seed", range(20))
def test_the_bootstraps_rates_are_compute_compliances(seed: int) -> None:
    records = _records(seed)
    for mode in Mode:
        full = compute_compliance(records, mode)
        rates = compliance_rates(records, mode)
        got = (rates.csr, rates.isr_round, rates.isr_attempt, rates.isr_task)
        assert got == (full.csr, full.isr_round, full.isr_attempt, full.isr_task)


def test_no_records_and_no_checks_are_undefined_not_zero() -> None:
    assert compute_compliance([]).csr is None
    bare = _records(3)
    for r in bare:
        r.checks.clear()
    comp = compute_compliance(bare)
    assert (comp.csr, comp.isr_round, comp.isr_attempt, comp.checks) == (None, None, None, 0)
    assert comp.by_round == [] and comp.by_task == []
