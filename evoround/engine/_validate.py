"""``evoround tasks validate``: prove a task is gradeable before anyone is graded on it.

Every check runs the real engine (``run_job`` with the oracle and nop scaffolds,
reference snapshots, the task's own verifier) so a task that validates behaves the
same way in an evaluation. Checks, per round where they apply:

- ``schema``          the loader accepts the task (file and field named otherwise);
- ``oracle_mt``/``oracle_sr``  the reference passes every round, persistent and
  fast-forwarded;
- ``nop``             doing nothing fails round 1;
- ``discriminative``  each new or replaced test file fails on the reference state of
  the previous round (else the round tests nothing new);
- ``retired``         a retired file is absent from later suites and fails against the
  reference of the round that retired it (a warning if it still passes);
- ``determinism``     the oracle's per-test results are identical across runs (flaky
  tests are named);
- ``leaks``           hidden tests or solutions are not in ``workspace/`` and the
  reference's distinctive lines are not already in the starter files.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from evoround.engine._job import BaseImageUnavailable, run_job
from evoround.engine._reference import reference_snapshot
from evoround.results import Mode, RoundResult, TestOutcome, VerifierOutcome, read_results
from evoround.sandboxes import SandboxError, SandboxProvider, make_provider
from evoround.scaffolds import NopScaffold, OracleScaffold, RoundSetupError
from evoround.snapshots import SnapshotStore
from evoround.tasks import (
    ActiveTest,
    Round,
    Task,
    TaskFormatError,
    active_tests,
    is_test_module,
    load_task,
)
from evoround.verifiers import verify_suite

CHECKS = (
    "schema",
    "oracle_mt",
    "oracle_sr",
    "nop",
    "discriminative",
    "retired",
    "determinism",
    "leaks",
)


class Status(StrEnum):
    ok = "ok"
    fail = "fail"
    warn = "warn"
    skip = "skip"


@dataclass(frozen=True)
class Finding:
    """One check's verdict, for one round (or the whole task when ``round`` is None)."""

    check: str
    status: Status
    message: str = ""
    round: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "round": self.round,
            "status": self.status.value,
            "message": self.message,
        }


@dataclass
class TaskValidation:
    path: Path
    name: str
    n_rounds: int = 0
    findings: list[Finding] = field(default_factory=list)
    duration_sec: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(f.status is Status.fail for f in self.findings)

    def add(self, check: str, status: Status, message: str = "", rnd: int | None = None) -> None:
        self.findings.append(Finding(check, status, message, rnd))

    def cell(self, check: str, rnd: int | None) -> Status | None:
        """Worst status of ``check`` at ``rnd`` (task-wide findings count for every round)."""
        order = [Status.fail, Status.warn, Status.ok, Status.skip]
        got = [f.status for f in self.findings if f.check == check and f.round in (rnd, None)]
        return min(got, key=order.index) if got else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "ok": self.ok,
            "rounds": self.n_rounds,
            "duration_sec": round(self.duration_sec, 2),
            "findings": [f.as_dict() for f in self.findings],
        }


# ---- helpers ---------------------------------------------------------------------


def _outcomes(v: VerifierOutcome) -> dict[str, TestOutcome]:
    return {f"{t.file}::{t.name}": t.outcome for t in v.tests}


def _suite_for(task: Task, i: int, files: set[str]) -> list[ActiveTest]:
    """The tests in ``files`` at round ``i`` plus the suite's support files (conftest, data)."""
    suite = active_tests(task, i)
    if task.config.verifier.kind == "script":
        return suite
    return [t for t in suite if t.path in files or not is_test_module(t.path)]


def _verify_on(
    task: Task,
    provider: SandboxProvider,
    store: SnapshotStore,
    ref_round: int,
    tests: list[ActiveTest],
    round_index: int,
    label: str,
) -> VerifierOutcome:
    start = reference_snapshot(task, ref_round, provider, store)
    with provider.create(task, f"{task.name}/validate-{label}", start) as sb:
        return verify_suite(task, sb, tests, round_index)


def _file_failed(v: VerifierOutcome, rel: str) -> bool:
    """Did test file ``rel`` fail (any case not passed, or absent from the report)?"""
    cases = [t for t in v.tests if t.file == rel]
    return not cases or any(t.outcome is not TestOutcome.passed for t in cases)


# ---- engine checks ---------------------------------------------------------------


def _check_runs(report: TaskValidation, task: Task, records: list[RoundResult], nop: list) -> None:
    for mode, check in ((Mode.mt, "oracle_mt"), (Mode.sr, "oracle_sr")):
        mine = {r.round: r for r in records if r.mode is mode}
        for i in range(1, task.n_rounds + 1):
            r = mine.get(i)
            if r is None:
                report.add(check, Status.skip, "not reached (an earlier round failed)", i)
            elif r.passed:
                report.add(check, Status.ok, "", i)
            else:
                why = r.error or "; ".join(
                    [f"{t.file}::{t.name} {t.outcome.value}" for t in r.failing_tests[:3]]
                    + r.integrity_evidence[:2]
                    + r.verifier_problems[:2]
                )
                report.add(check, Status.fail, f"oracle {r.status.value}: {why}", i)
    first = [r for r in nop if r.round == 1]
    if first and not first[0].passed:
        report.add("nop", Status.ok, "", 1)
    elif first:
        report.add("nop", Status.fail, "the nop agent passes round 1: the tests check nothing", 1)
    else:
        report.add("nop", Status.fail, "the nop run recorded no round 1", 1)


def _check_discriminative(
    report: TaskValidation, task: Task, provider: SandboxProvider, store: SnapshotStore
) -> None:
    for rnd in task.rounds:
        status, message = _discriminates(task, rnd, provider, store)
        report.add("discriminative", status, message, rnd.index)


def _discriminates(
    task: Task, rnd: Round, provider: SandboxProvider, store: SnapshotStore
) -> tuple[Status, str]:
    """Whether round ``rnd``'s new or replaced tests fail on the state before it (else the
    round tests nothing new): run on the previous round's reference state."""
    script = task.config.verifier.kind == "script"
    i = rnd.index
    new = [p for p in rnd.test_files if script or is_test_module(p)]
    if not new:
        return _no_new_tests(rnd, script)
    v = _verify_on(task, provider, store, i - 1, _suite_for(task, i, set(new)), i, f"d{i}")
    if script:
        passing = [] if not v.passed else [task.config.verifier.script]
    else:
        passing = [p for p in new if not _file_failed(v, p)]
    if not passing:
        return Status.ok, ""
    before = "the initial workspace" if i == 1 else f"the reference state of round {i - 1}"
    return Status.fail, (
        f"{', '.join(passing)} already pass(es) on {before}: the round tests nothing new"
    )


def _no_new_tests(rnd: Round, script: bool) -> tuple[Status, str]:
    """A round without new tests: a mistake when it has test files pytest ignores."""
    ignored = [p for p in rnd.test_files if p.endswith(".py") and not is_test_module(p)]
    if ignored and not script:
        return Status.fail, (
            f"the round's new tests collect nothing: pytest ignores {', '.join(ignored)} "
            "(name test files test_*.py or *_test.py)"
        )
    return Status.warn, "the round adds or replaces no tests"


def _check_retired(
    report: TaskValidation, task: Task, provider: SandboxProvider, store: SnapshotStore
) -> None:
    for rnd in task.rounds:
        j = rnd.index
        for rel in rnd.spec.retires:
            later = [
                k
                for k in range(j, task.n_rounds + 1)
                if rel in {t.path for t in active_tests(task, k)}
            ]
            if later:
                report.add(
                    "retired",
                    Status.warn,
                    f"{rel} is retired in round {j} but active again from round {later[0]} "
                    "(a later round re-introduces it)",
                    j,
                )
            if task.config.verifier.kind == "script" or not is_test_module(rel):
                report.add("retired", Status.ok, f"{rel} retired (not run: support file)", j)
                continue
            old = [t for t in active_tests(task, j - 1)]
            suite = [t for t in old if t.path == rel or not is_test_module(t.path)]
            v = _verify_on(task, provider, store, j, suite, j - 1, f"r{j}")
            if _file_failed(v, rel):
                report.add("retired", Status.ok, f"{rel} fails on the round-{j} reference", j)
            else:
                report.add(
                    "retired",
                    Status.warn,
                    f"{rel} still passes on the reference of round {j}: nothing it checks "
                    "changed; retire it only if it constrains the change some other way",
                    j,
                )


def _check_determinism(
    report: TaskValidation,
    task: Task,
    provider: SandboxProvider,
    store: SnapshotStore,
    records: list[RoundResult],
    repeat: int,
) -> None:
    for i in range(1, task.n_rounds + 1):
        samples = [
            _outcomes(_verify_on(task, provider, store, i, active_tests(task, i), i, f"det{i}-{n}"))
            for n in range(repeat)
        ]
        empty = _collect_nothing(task, i, set().union(*samples))
        if empty:
            report.add(
                "discriminative",
                Status.fail,
                f"{', '.join(empty)} collect(s) no tests on the reference of round {i}: "
                "the round's new tests check nothing",
                i,
            )
        flaky = _flaky(samples, [r for r in records if r.round == i])
        if flaky:
            names = ", ".join(sorted(flaky)[:5])
            report.add("determinism", Status.fail, f"flaky across oracle runs: {names}", i)
        elif any(any(o is not TestOutcome.passed for o in s.values()) for s in samples):
            report.add("determinism", Status.ok, "consistent (but not all passing)", i)
        else:
            report.add("determinism", Status.ok, f"{repeat + 2} identical runs", i)


def _collect_nothing(task: Task, i: int, keys: set[str]) -> list[str]:
    """Round ``i``'s new test modules that collect no case (pytest only): they verify
    nothing (an empty file, or tests pytest does not see: a class not named Test*,
    functions not test_*)."""
    if task.config.verifier.kind != "pytest":
        return []
    new = [p for p in task.round(i).test_files if is_test_module(p)]
    return [p for p in new if not any(k.startswith(f"{p}::") for k in keys)]


def _flaky(samples: list[dict[str, TestOutcome]], oracle: list[RoundResult]) -> set[str]:
    """Tests whose outcome differs across the samples. The oracle's own runs of the round
    are samples too: a test that failed there but passes here is flaky."""
    keys: set[str] = set().union(*samples)
    flaky = {k for k in keys if len({s.get(k) for s in samples}) > 1}
    for r in oracle:
        for t in r.failing_tests:
            k = f"{t.file}::{t.name}"
            if any(s.get(k) is TestOutcome.passed for s in samples):
                flaky.add(k)
    return flaky


# ---- leaks (static) ----------------------------------------------------------------

_BORING = re.compile(r"^(#|//|\"\"\"|'''|import |from |return |def __init__|pass$|else:|try:)")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []


def distinctive(lines: list[str], min_len: int = 20) -> set[str]:
    """Lines specific enough that finding them elsewhere is not a coincidence."""
    out = set()
    for raw in lines:
        s = raw.strip()
        if len(s) >= min_len and not _BORING.match(s) and len(set(s)) > 6:
            out.add(s)
    return out


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


Problem = tuple[int | None, str]
"""A leak: the round it concerns (None: the task) and what leaked where."""


@dataclass(frozen=True)
class _Workspace:
    """The task's starter files, read once for every leak check."""

    root: Path
    files: list[Path]
    lines: dict[Path, set[str]]
    """Each file's distinctive lines."""

    @classmethod
    def of(cls, task: Task) -> _Workspace:
        files = _files(task.workspace_dir)
        return cls(task.workspace_dir, files, {p: distinctive(_lines(p)) for p in files})

    def rel(self, p: Path) -> str:
        return p.relative_to(self.root).as_posix()


def check_leaks(report: TaskValidation, task: Task) -> None:
    """Static leak checks: no engine needed, so they also run when a task fails to build."""
    ws = _Workspace.of(task)
    problems = [*_solutions_in(ws), *_hidden_tests_in(ws, task), *_reference_in(ws, task)]
    for rnd_index, msg in problems:
        report.add("leaks", Status.fail, msg, rnd_index)
    if not problems:
        report.add("leaks", Status.ok, "")


def _solutions_in(ws: _Workspace) -> list[Problem]:
    """Starter files that look like a reference solution (by folder or name)."""
    out: list[Problem] = []
    for p in ws.files:
        rel = p.relative_to(ws.root)
        if {"solution", "rounds"} & set(rel.parts[:-1]) or p.name == "solve.sh":
            out.append((None, f"workspace/{rel.as_posix()} looks like a reference solution"))
    return out


def _hidden_tests_in(ws: _Workspace, task: Task) -> list[Problem]:
    """Hidden test files that are in the workspace: byte for byte, by name, or mostly."""
    by_bytes = {p.read_bytes(): p for p in ws.files}
    by_name = {p.name: p for p in ws.files}
    out: list[Problem] = []
    for rnd in task.rounds:
        for rel in rnd.test_files:
            src = rnd.tests_dir / rel
            where = by_bytes.get(src.read_bytes())
            if where is None and is_test_module(rel) and src.name in by_name:
                where = by_name[src.name]
            if where is None:
                where = _mostly_in(ws, distinctive(_lines(src)))
            if where is not None:
                msg = f"hidden test {rel} is in the workspace as workspace/{ws.rel(where)}"
                out.append((rnd.index, msg))
    return out


def _mostly_in(ws: _Workspace, hidden: set[str]) -> Path | None:
    """The first starter file holding most (60 %) of ``hidden``'s distinctive lines."""
    if len(hidden) < 3:
        return None
    for p, lines in ws.lines.items():
        if len(hidden & lines) >= 0.6 * len(hidden):
            return p
    return None


def _reference_in(ws: _Workspace, task: Task) -> list[Problem]:
    """Rounds whose reference solution's new distinctive lines are already in the starter
    files. "Before" is what each path held earlier (starter files, earlier solutions), so
    only the lines a round adds count."""
    before: dict[str, set[str]] = defaultdict(set)
    for p in ws.files:
        before[ws.rel(p)] |= ws.lines[p]
    all_ws: set[str] = set().union(*ws.lines.values())
    out: list[Problem] = []
    for rnd in task.rounds:
        added = _added_lines(rnd, before)
        found = added & all_ws
        if len(found) >= 5 and len(found) >= 0.5 * len(added):
            sample = sorted(found)[0][:60]
            out.append(
                (
                    rnd.index,
                    f"{len(found)} of {len(added)} distinctive lines of the round's reference "
                    f"solution are already in workspace/ (e.g. {sample!r})",
                )
            )
    return out


def _added_lines(rnd: Round, before: dict[str, set[str]]) -> set[str]:
    """Distinctive lines the round's solution (files and solve.sh) adds; ``before`` is
    updated with them for the rounds after."""
    added: set[str] = set()
    files_dir = rnd.solution_dir / "files"
    sources = [(p.relative_to(files_dir).as_posix(), p) for p in _files(files_dir)]
    solve = rnd.solution_dir / "solve.sh"
    if solve.is_file():
        sources.append(("<solve.sh>", solve))
    for key, p in sources:
        lines = distinctive(_lines(p))
        added |= lines - before[key]
        before[key] |= lines
    return added


# ---- entry point -------------------------------------------------------------------


def validate_task(
    path: Path,
    *,
    sandbox: str = "local",
    repeat: int = 2,
    work_dir: Path | None = None,
    base_image_map: dict[str, str] | None = None,
) -> TaskValidation:
    """Validate one task directory. ``repeat`` extra oracle verifications per round;
    ``base_image_map``: explicit ``FROM`` substitutions (docker), as ``run --base-image-map``."""
    t0 = time.monotonic()
    report = TaskValidation(path=Path(path), name=Path(path).name)
    try:
        task = load_task(path)
    except TaskFormatError as e:
        report.add("schema", Status.fail, str(e))
        report.duration_sec = time.monotonic() - t0
        return report
    report.name, report.n_rounds = task.name, task.n_rounds
    report.add("schema", Status.ok)
    check_leaks(report, task)
    own_dir = work_dir is None
    work = Path(work_dir or tempfile.mkdtemp(prefix="evoround-validate-"))
    store = SnapshotStore(work / "store")
    try:
        oracle_dir = run_job(
            [task],
            OracleScaffold(),
            job_dir=work / f"{task.name}-oracle",
            attempts=1,
            modes=[Mode.mt, Mode.sr],
            sandbox=sandbox,
            store=store,
            base_image_map=base_image_map,
        )
        nop_dir = run_job(
            [task],
            NopScaffold(),
            job_dir=work / f"{task.name}-nop",
            attempts=1,
            modes=[Mode.mt],
            sandbox=sandbox,
            store=store,
            base_image_map=base_image_map,
        )
        records, _ = read_results(oracle_dir / "results.jsonl")
        nop_records, _ = read_results(nop_dir / "results.jsonl")
        _check_runs(report, task, records, nop_records)
        provider = make_provider(
            sandbox, store, job=f"validate-{task.name}", base_image_map=base_image_map
        )
        try:
            _check_discriminative(report, task, provider, store)
            _check_retired(report, task, provider, store)
            _check_determinism(report, task, provider, store, records, repeat)
        finally:
            provider.close()
    except (SandboxError, RoundSetupError) as e:  # a reference (or set-up) that does not apply
        report.add("oracle_mt", Status.fail, f"{type(e).__name__}: {e}")
    except BaseImageUnavailable as e:  # nothing ran: the task's base image cannot be had
        report.add("oracle_mt", Status.fail, str(e))
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
    report.duration_sec = time.monotonic() - t0
    return report
