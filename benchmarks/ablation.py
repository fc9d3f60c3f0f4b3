"""Ablation of the tamper evidence: which attacks each mechanism alone stops.

Every attack of ``tests/adversarial`` that runs at verifier level (the counter task's
in-process forgeries of ``attacks.py``, ``conditional.py`` and ``targeted.py``; the script
verifier's of ``test_script_verifier.py``, ``test_script_pytest_guard.py`` and
``test_script_twins.py``) and a few honest workspaces (reference solutions, stubs, honestly
wrong code) are graded by :func:`evoround.verifiers.verify_suite` on the LOCAL backend
(bubblewrap where it works), once as shipped and once per mechanism with that mechanism
switched off **in this process only** (``pytest.MonkeyPatch`` on a host-side function, or on
the runner's source text before it is copied into the sandbox; product code has no
switch). Each workspace is snapshotted and verified in a clone, as the engine does (the
script verifier's canary gets a second clone of the same snapshot).

Printed per mechanism: attacks run; attacks forged (graded ``passed``) with every mechanism
on and with this one off; attacks flagged (``integrity`` evidence) on and off; honest
workspaces whose verdict changed or that were flagged with it off; and the attacks that
only this mechanism stops. A mechanism whose removal lets no attack through "catches
nothing unique" in this suite (it may still turn a plain failure into an
``integrity_violation``, shown by the flagged columns)::

    python benchmarks/ablation.py                   # everything (about 6 min, 1 worker)
    python benchmarks/ablation.py --only fresh,twins --kinds pytest
    python benchmarks/ablation.py --list            # the mechanisms and where they live
    python benchmarks/ablation.py --kinds pytest --only twins+controls   # two at once
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

import pytest  # noqa: E402  (after the checkout is on sys.path)

from evoround.results import TestOutcome  # noqa: E402
from evoround.verifiers import _pytest as P  # noqa: E402
from evoround.verifiers import _script as S  # noqa: E402
from evoround.verifiers import _script_guard as SG  # noqa: E402
from evoround.verifiers._twins import TwinPlan  # noqa: E402

FIXTURES = HERE / "tests" / "fixtures"


@dataclass(frozen=True)
class Case:
    """One workspace to grade: ``files`` written over the task's workspace (None: the
    reference solutions of rounds 1..``rnd`` applied), graded at round ``rnd``."""

    name: str
    task: str
    """A key of the task table (see :func:`_tasks`)."""
    files: dict[str, str] | None
    rnd: int = 1
    honest: bool = False
    passes: bool = False
    """(honest cases) the verdict an honest grading gives."""


@dataclass(frozen=True)
class Mechanism:
    name: str
    kind: str
    """``pytest`` or ``script``: the verifier whose attacks it is run against."""
    where: str
    off: Callable[[pytest.MonkeyPatch], None]


def _runner(mp: pytest.MonkeyPatch, *edits: tuple[str, str]) -> None:
    """Edit the pytest verifier's runner source (what is copied into the sandbox)."""
    text = P.RUNNER
    for old, new in edits:
        assert text.count(old) == 1, f"runner text not found once: {old!r}"
        text = text.replace(old, new)
    mp.setattr(P, "RUNNER", text)


def _without_checks(mp: pytest.MonkeyPatch, *checks: Callable[..., None]) -> None:
    mp.setattr(P, "_FINISHED_CHECKS", tuple(c for c in P._FINISHED_CHECKS if c not in checks))


def _noop(*_a: object, **_k: object) -> None:
    return None


# ---- the pytest verifier -------------------------------------------------------------


def _off_controls(mp: pytest.MonkeyPatch) -> None:
    """No control tests: an empty control file, and a pass is every test of the task
    passed with pytest's exit code agreeing with the channel (0, or 1 when a failing
    twin, which is not counted, failed)."""
    make = P.make_controls

    def empty(taken: Any, imports: Any = ()) -> Any:
        return dataclasses.replace(make(taken, imports), source="import pytest\n")

    def passed(ch: Any, controls: Any, res: Any, results: Any) -> bool:
        ok = bool(results) and all(r.outcome is TestOutcome.passed for r in results)
        rc_ok = ch.end_rc in (0, P.EXIT_TESTS_FAILED) and res.exit_code == ch.end_rc
        return rc_ok and not res.timed_out and ok

    mp.setattr(P, "make_controls", empty)
    mp.setattr(P, "_passed", passed)
    mp.setattr(P, "_failing_control_passed", _noop)
    _without_checks(mp, P._controls_missing, P._zero_despite_failing_control)


def _off_end_record(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(P, "_unfinished", _noop)
    _without_checks(mp, P._exit_code_differs)


def _off_watch_internals(mp: pytest.MonkeyPatch) -> None:
    _runner(
        mp,
        ("        out = self._changed()\n", "        out = []\n"),
        ("            if self.exec_ is not None and getattr(", "            if False and getattr("),
    )


def _off_watch_plugins(mp: pytest.MonkeyPatch) -> None:
    _runner(
        mp,
        (
            "            for name, plugin in list(pm.list_name_plugin()):\n",
            "            for name, plugin in ():\n",
        ),
    )


def _off_watch_code(mp: pytest.MonkeyPatch) -> None:
    _runner(mp, ("        self._code_swapped(item)\n", ""))


def _off_twins(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(P, "plan_twins", lambda *a, **k: TwinPlan())


def _off_fresh(mp: pytest.MonkeyPatch) -> None:
    picked = "        picked = [i for i in session.items if self.late(i)]\n"
    _runner(mp, (picked, picked + "        yield\n        return\n"))
    mp.setattr(P, "_fresh_evidence", lambda *a, **k: [])
    mp.setattr(P, "_failed_fresh", lambda *a, **k: False)


def _off_os_exit(mp: pytest.MonkeyPatch) -> None:
    _runner(mp, ("    _os._exit(rc)\n\n\n# only as", "    _sys.exit(rc)\n\n\n# only as"))


def _off_junit(mp: pytest.MonkeyPatch) -> None:
    _without_checks(mp, P._junit_cross_check)


def _off_vanished(mp: pytest.MonkeyPatch) -> None:
    _without_checks(mp, P._tests_vanished)


def _off_unreported(mp: pytest.MonkeyPatch) -> None:
    _without_checks(mp, P._collected_unreported)


def _off_deselected(mp: pytest.MonkeyPatch) -> None:
    _without_checks(mp, P._deselected_unasked)


def _off_anomalies(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(P, "_absent_or_evidence", lambda anomalies, cut: ([], []))


def _off_spared(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(P, "_spared", lambda *a, **k: False)
    mp.setattr(P, "_failed_fresh", lambda *a, **k: False)


# ---- the script verifier -------------------------------------------------------------


def _off_case_conflict(mp: pytest.MonkeyPatch) -> None:
    parse = S.parse_cases
    mp.setattr(S, "parse_cases", lambda *a: dataclasses.replace(parse(*a), integrity=()))


def _off_reward_vs_cases(mp: pytest.MonkeyPatch) -> None:
    def evidence(unsafe: Any, cases: Any, guarded: Any, reading: Any) -> list[str]:
        out = unsafe + list(cases.integrity) + guarded.evidence
        return out + guarded.if_passing if reading.claims_pass else out

    mp.setattr(S, "_run_evidence", evidence)


def _off_canary(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(S, "_canary_findings", lambda *a, **k: [])


def _off_unsafe_reward(mp: pytest.MonkeyPatch) -> None:
    read = S._read_rewards
    mp.setattr(S, "_read_rewards", lambda *a: (*read(*a)[:2], []))


def _off_guard_reports(mp: pytest.MonkeyPatch) -> None:
    """Forced reports and replaced internals are recorded but not judged."""
    report = SG._RUN_RECORDS["r"]
    mp.setitem(SG._RUN_RECORDS, "tamper", lambda run, pid, rec, ev: None)
    mp.setitem(SG._RUN_RECORDS, "r", lambda run, pid, rec, ev: report(run, pid, rec, []))


def _off_guard_code(mp: pytest.MonkeyPatch) -> None:
    """The script guard's code watch: a test's code replaced after collection."""
    check = "        if rec is not None and rec[0] is item and rec[1].__code__ is not rec[2]:\n"
    assert SG.PLUGIN.count(check) == 1, "script plugin text not found once"
    mp.setattr(SG, "PLUGIN", SG.PLUGIN.replace(check, "        if False:\n"))


def _off_guard_ending(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(SG, "_unfinished", lambda run, exited: [])


def _off_script_twins(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(S, "plan_twins", lambda *a, **k: TwinPlan())


MECHANISMS = [
    Mechanism(
        "controls",
        "pytest",
        "_guard.make_controls; _pytest._passed, _failing_control_passed, "
        "_controls_missing, _zero_despite_failing_control",
        _off_controls,
    ),
    Mechanism(
        "end-record",
        "pytest",
        "_pytest._unfinished, _exit_code_differs (end record vs exit code)",
        _off_end_record,
    ),
    Mechanism(
        "watch-internals",
        "pytest",
        "RUNNER _Watch.check: identities of internals",
        _off_watch_internals,
    ),
    Mechanism(
        "watch-plugins",
        "pytest",
        "RUNNER _Watch.check: plugins from the workspace",
        _off_watch_plugins,
    ),
    Mechanism(
        "watch-code",
        "pytest",
        "RUNNER _Guard._code_swapped: a test function's code replaced after collection",
        _off_watch_code,
    ),
    Mechanism("twins", "pytest", "_twins.plan_twins; _pytest._twin_evidence", _off_twins),
    Mechanism(
        "fresh-copy",
        "pytest",
        "RUNNER _Guard.pytest_runtestloop fork; _pytest._fresh_evidence, _failed_fresh",
        _off_fresh,
    ),
    Mechanism(
        "os-exit", "pytest", "RUNNER _start: os._exit(rc) (no atexit hook runs)", _off_os_exit
    ),
    Mechanism("junit", "pytest", "_pytest._junit_cross_check", _off_junit),
    Mechanism("vanished", "pytest", "_pytest._tests_vanished", _off_vanished),
    Mechanism("unreported", "pytest", "_pytest._collected_unreported", _off_unreported),
    Mechanism("deselected", "pytest", "_pytest._deselected_unasked", _off_deselected),
    Mechanism(
        "anomalies",
        "pytest",
        "_guard.read_channel anomalies (_pytest._absent_or_evidence)",
        _off_anomalies,
    ),
    Mechanism(
        "twin-sparing",
        "pytest",
        "_pytest._spared, _failed_fresh (false-alarm guards, not detection)",
        _off_spared,
    ),
    Mechanism(
        "case-conflict", "script", "_script._case_results (a case both ways)", _off_case_conflict
    ),
    Mechanism(
        "reward-vs-cases",
        "script",
        "_script._run_evidence (full reward while a case failed)",
        _off_reward_vs_cases,
    ),
    Mechanism("canary", "script", "_script._canary_findings, _script_canary", _off_canary),
    Mechanism(
        "unsafe-reward", "script", "_script._read_rewards (a link/FIFO reward)", _off_unsafe_reward
    ),
    Mechanism(
        "guard-reports",
        "script",
        "_script_guard _on_report/_on_tamper (forced reports, replaced internals)",
        _off_guard_reports,
    ),
    Mechanism(
        "guard-code",
        "script",
        "script_plugin _Session.pytest_runtest_call: a test function's code replaced",
        _off_guard_code,
    ),
    Mechanism(
        "guard-ending",
        "script",
        "_script_guard._unfinished (early exit, atexit, exit 0 with failures)",
        _off_guard_ending,
    ),
    Mechanism(
        "script-twins", "script", "_script_twins (plan_twins, twin_evidence)", _off_script_twins
    ),
]

# ---- the workspaces ------------------------------------------------------------------

_STATEFUL = """_seen = [0]


def count_words(text):
    _seen[0] += 1
    return len(text.split()) + _seen[0] - 1


def count_lines(text):
    return len(text.splitlines())


def count_chars(text):
    return len(text)
"""


def _cases(kinds: set[str]) -> list[Case]:
    from tests.adversarial import test_script_pytest_guard as guard
    from tests.adversarial import test_script_twins as stwins
    from tests.adversarial import test_script_verifier as sverify
    from tests.adversarial.attacks import ATTACKS, STUB
    from tests.adversarial.conditional import CONDITIONAL, NEUTRALISE, SKIPPING
    from tests.adversarial.selective import GAPPY, SELECTIVE
    from tests.adversarial.targeted import TARGETED

    out: list[Case] = []
    if "pytest" in kinds:
        for group in (ATTACKS, CONDITIONAL, SKIPPING, TARGETED):
            out += [Case(n, "counter", {"counter.py": c}) for n, c in group.items()]
        out.append(Case("assert_helpers", "unitcalc", {"calc.py": NEUTRALISE}))
        for n in ("always_equal", "always_equal_typed"):
            for suite in ("counterclass", "counterunit", "counterleft"):
                out.append(Case(f"{n}.{suite}", suite, {"counter.py": CONDITIONAL[n]}))
        wrong = "def count_words(text):\n    return len(text.split(' '))\n"
        out += [
            Case("honest:stub", "counter", {"counter.py": STUB}, honest=True),
            Case("honest:solution-r3", "counter", None, 3, honest=True, passes=True),
            Case("honest:wrong-split", "counter", {"counter.py": wrong}, honest=True),
            Case("honest:stateful", "counter", {"counter.py": _STATEFUL}, honest=True),
            Case("honest:unitcalc", "unitcalc", None, honest=True, passes=True),
        ]
        for suite in ("counterclass", "counterunit", "counterleft"):
            out.append(Case(f"honest:{suite}", suite, None, honest=True, passes=True))
        # a suite wider than the twins reach: one test forged by its name
        out += [Case(n, "counterwide", {"counter.py": c}) for n, c in SELECTIVE.items()]
        out += [
            Case("honest:counterwide", "counterwide", None, honest=True, passes=True),
            Case("honest:counterwide-gappy", "counterwide", {"counter.py": GAPPY}, honest=True),
        ]
    if "script" in kinds:
        for n, c in sverify.ATTACKS.items():
            out.append(Case(f"tally:{n}", "tally", {"tally.py": c.replace("MARK", "ablation")}))
        for n, c in guard.ATTACKS.items():
            out.append(Case(f"guard:{n}", "stock", {"stock.py": c}))
        out.append(Case("guard:code-swap", "stock", {"stock.py": guard.CODE_SWAP}, 2))
        for n, c in stwins.ATTACKS.items():
            out.append(Case(f"stwins:{n}", "stock", {"stock.py": c}))
        out += [
            Case("honest:tally-oracle", "tally", None, honest=True, passes=True),
            Case("honest:tally-stub", "tally", {"tally.py": sverify.NOTHING}, honest=True),
            Case("honest:stock-oracle", "stock", None, 2, honest=True, passes=True),
            Case("honest:stock-stub", "stock", {"stock.py": guard.NOTHING}, honest=True),
        ]
    return out


def _tasks(tmp: Path) -> dict[str, Any]:
    from evoround.tasks import load_task
    from evoround.tasks.importers import import_tasks

    tasks = {n: load_task(FIXTURES / "tasks" / n) for n in ("counter", "unitcalc")}
    for n in ("counterclass", "counterunit", "counterleft", "counterwide"):
        tasks[n] = load_task(FIXTURES / "tasks" / n)
    for key, fixture in (("tally", "theme_d0_w0_word_tally"), ("stock", "pytest-reward")):
        [res] = import_tasks(FIXTURES / "harbor" / fixture, tmp / "imported" / key)
        tasks[key] = load_task(res.dest)
    return tasks


@dataclass(frozen=True)
class Verdict:
    passed: bool
    flagged: bool


class Grader:
    """Snapshots each case's workspace once, then grades it in fresh clones."""

    def __init__(self, tmp: Path) -> None:
        from evoround.sandboxes import LocalProvider
        from evoround.snapshots import SnapshotStore

        self.provider = LocalProvider(SnapshotStore(tmp / "store"), tmp / "sb")
        self.tasks = _tasks(tmp)
        self.snaps: dict[str, Any] = {}
        self.n = 0

    def _snapshot(self, case: Case) -> Any:
        from evoround.scaffolds import reference_apply
        from evoround.snapshots import SnapshotKind, SnapshotLabel

        if case.name not in self.snaps:
            task = self.tasks[case.task]
            with self.provider.create(task, f"abl/{len(self.snaps)}") as sb:
                if case.files is None:
                    for i in range(1, case.rnd + 1):
                        reference_apply(sb, task.round(i))
                else:
                    for path, text in case.files.items():
                        sb.write_file(path, text)
                label = SnapshotLabel(
                    task=task.name,
                    task_digest=task.digest,
                    kind=SnapshotKind.agent,
                    round=case.rnd,
                    attempt=f"abl{len(self.snaps)}",
                )
                self.snaps[case.name] = sb.snapshot(label)
        return self.snaps[case.name]

    def grade(self, case: Case) -> Verdict:
        from evoround.tasks import active_tests
        from evoround.verifiers import verify_suite

        task, snap = self.tasks[case.task], self._snapshot(case)

        @contextlib.contextmanager
        def fresh() -> Iterator[Any]:
            self.n += 1
            with self.provider.create(task, f"abl/f{self.n}", snap) as other:
                yield other

        self.n += 1
        with self.provider.create(task, f"abl/v{self.n}", snap) as sb:
            out = verify_suite(
                task, sb, active_tests(task, case.rnd), case.rnd, timeout=60, fresh=fresh
            )
        return Verdict(out.passed, bool(out.integrity))


def _grade_all(grader: Grader, cases: list[Case], mp_off: Mechanism | None) -> dict[str, Verdict]:
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        if mp_off is not None:
            mp_off.off(mp)
        for c in cases:
            out[c.name] = grader.grade(c)
    return out


def _row(m: Mechanism, cases: list[Case], on: dict[str, Verdict], off: dict[str, Verdict]) -> str:
    attacks = [c for c in cases if not c.honest]
    honest = [c for c in cases if c.honest]
    forged_on = {c.name for c in attacks if on[c.name].passed}
    forged_off = {c.name for c in attacks if off[c.name].passed}
    flagged_on = sum(on[c.name].flagged for c in attacks)
    flagged_off = sum(off[c.name].flagged for c in attacks)
    false = [c.name for c in honest if off[c.name].flagged or off[c.name].passed != c.passes]
    unique = sorted(forged_off - forged_on)
    verdict = ", ".join(unique) if unique else "catches nothing unique"
    return (
        f"| {m.name} | {len(attacks)} | {len(forged_on)} | {len(forged_off)} | "
        f"{flagged_on} | {flagged_off} | {len(false)} of {len(honest)}"
        f"{' (' + ', '.join(false) + ')' if false else ''} | {verdict} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default="pytest,script", help="verifiers: pytest, script")
    ap.add_argument("--only", default="", help="comma-separated mechanisms (default: all)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mechanisms and exit")
    ap.add_argument("--json", type=Path, help="also write every verdict here (JSON)")
    args = ap.parse_args()
    if args.list:
        for m in MECHANISMS:
            print(f"{m.name:16s} {m.kind:7s} {m.where}")
        return
    kinds = set(args.kinds.split(","))
    only = set(filter(None, args.only.split(",")))
    wanted = set(filter(None, args.cases.split(",")))
    os.environ.setdefault("EVOROUND_LOCAL_ISOLATION", "auto")
    with tempfile.TemporaryDirectory() as tmp:
        grader = Grader(Path(tmp))
        rows = []
        dump: dict[str, dict[str, dict[str, list[bool]]]] = {}
        for kind in ("pytest", "script"):
            if kind not in kinds:
                continue
            cases = [
                c
                for c in _cases({kind})
                if not wanted or c.name in wanted or (c.honest and "honest" in wanted)
            ]
            start = time.monotonic()
            on = _grade_all(grader, cases, None)
            dump.setdefault("on", {}).update(_verdicts(on))
            print(f"[{kind}] all on: {len(cases)} cases in {time.monotonic() - start:.0f} s")
            for c in cases:
                v = on[c.name]
                if (c.honest and (v.flagged or v.passed != c.passes)) or (
                    not c.honest and v.passed
                ):
                    print(f"  on: {c.name}: passed={v.passed} flagged={v.flagged}")
            for m in [*MECHANISMS, *_combined(only)]:
                if m.kind != kind or (only and m.name not in only):
                    continue
                start = time.monotonic()
                off = _grade_all(grader, cases, m)
                dump[m.name] = _verdicts(off)
                rows.append(_row(m, cases, on, off))
                print(f"[{kind}] {m.name} off: {time.monotonic() - start:.0f} s")
                print("  " + rows[-1], flush=True)
        print()
        print(
            "| mechanism off | attacks | forged on | forged off | flagged on | flagged off "
            "| honest misgraded off | attacks only it stops |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(r)
        if args.json:
            args.json.write_text(json.dumps(dump, indent=1), encoding="utf-8")


def _combined(names: set[str]) -> list[Mechanism]:
    """Mechanisms named ``a+b`` on the command line: both switched off at once (what each
    one alone leaves to the other)."""
    by_name = {m.name: m for m in MECHANISMS}
    out = []
    for name in sorted(n for n in names if "+" in n):
        parts = [by_name[p] for p in name.split("+")]

        def off(mp: pytest.MonkeyPatch, parts: list[Mechanism] = parts) -> None:
            for p in parts:
                p.off(mp)

        out.append(Mechanism(name, parts[0].kind, " + ".join(p.where for p in parts), off))
    return out


def _verdicts(by_case: dict[str, Verdict]) -> dict[str, list[bool]]:
    """case -> [passed, flagged]"""
    return {n: [v.passed, v.flagged] for n, v in by_case.items()}


if __name__ == "__main__":
    main()
