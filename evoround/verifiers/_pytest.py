"""Cumulative-test verifier: run the active suite with pytest in an isolated clone and
grade it from the guarded result channel (see :mod:`._guard`), never from what the process
under test writes.

One run (:func:`run_pytest`):
- **Lay out.** The suite is copied from the task directory on the host (the agent's copies of
  tests are never run) into a fresh, unguessably named folder in the clone's scratch, outside
  the workspace, in one archive with the harness's additions: the control test file (it
  opens with the suite's own imports), the failing twins appended to copies of their files
  (see :mod:`._twins`), the ini file and the runner. pytest runs with that ini (``-c``),
  ``--rootdir``/``--confcutdir`` at the suite (a ``conftest.py`` or ``pytest.ini`` in the
  workspace is not configuration), no third-party plugin autoload, and the JUnit report at
  an unguessable path.
- **Run.** The verifier's own Python (``-I``, bytecode only from a cache of its own) starts
  the runner; its arguments come on stdin. A task's own selection keeps the controls and
  twins.
- **Cross-check** (:func:`_cross_check`). The results come from the channel; its end record,
  the exit code, the controls, the twins, the runner's fresh copy of the test process, the
  tests the task's files certainly define, the collected tests and pytest's JUnit report
  must all agree with it. A disagreement that could turn a failure into a pass is
  ``integrity`` evidence; a finding that rests on a missing record is only a problem when the
  sandbox dropped output (the record may have been lost there).
- **Verdict.** A round passes only when pytest returned "some tests failed" both on the
  channel and as exit code (the failing control, alone), the controls came out right, every
  other test passed, and there is neither a problem nor any evidence; the exit code reported
  is then 0.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from evoround.results import TestOutcome, TestResult, VerifierOutcome
from evoround.sandboxes import ExecResult, Sandbox, SandboxError
from evoround.tasks import ActiveTest, failure_class_for, is_test_module
from evoround.verifiers._guard import (
    EXIT_TESTS_FAILED,
    MALFORMED,
    RUNNER,
    Channel,
    Controls,
    keep_controls,
    make_controls,
    phase_outcome,
    read_channel,
    runner_input,
    selects,
)
from evoround.verifiers._suite_text import expected_names, named_plugins
from evoround.verifiers._twins import Twin, TwinPlan, node_parts, plan_twins, shared_imports

REPORT_LIMIT = 64 << 20
"""Largest JUnit report read back (it is an artefact and a cross-check, not the verdict)."""

INI = """[pytest]
pythonpath = {workdir}
junit_family = xunit1
addopts = -p no:cacheprovider
"""
CONTROL_MARKER = "markers =\n    {marker}: evoround control test\n"


def copy_suite(
    sandbox: Sandbox,
    tests: list[ActiveTest],
    dest: str,
    extra: dict[str, str] | None = None,
    *,
    under: str = "",
) -> None:
    """Copy the active suite from the task directory on the host into ``dest/under`` in a
    sandbox, with ``extra`` files (paths relative to ``dest``) in the same single copy:
    one archive in, whatever the verifier needs beside the tests.

    Verifiers take tests from the task, never from the workspace, so nothing the agent
    wrote can stand in for them.
    """
    staging = Path(tempfile.mkdtemp(prefix="evoround-suite-"))
    try:
        for t in tests:
            target = staging / under / t.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(t.source, target)
        for rel, text in (extra or {}).items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_text(text, encoding="utf-8")
        sandbox.copy_in(str(staging), dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _case_outcome(case: TestCase) -> tuple[TestOutcome, str]:
    for r in case.result:
        if isinstance(r, Failure):
            return TestOutcome.failed, (r.message or "")[:500]
        if isinstance(r, Error):
            return TestOutcome.error, (r.message or "")[:500]
        if isinstance(r, Skipped):
            return TestOutcome.skipped, (r.message or "")[:500]
    return TestOutcome.passed, ""


def _case_file(case: TestCase, suite_root: str) -> str:
    """The suite-relative file of a JUnit case (xunit1 has a ``file`` attribute)."""
    f = case._elem.get("file") or ""
    if f.startswith(suite_root):
        f = f[len(suite_root) :].lstrip("/")
    if not f:
        # classname "pkg.test_mod.TestX" -> pkg/test_mod.py (best effort)
        f = (case.classname or "").split(".TestClass")[0].replace(".", "/") + ".py"
    return f


def parse_junit(
    xml: bytes, suite_root: str, tests: list[ActiveTest], round_index: int
) -> list[TestResult]:
    by_path = {t.path: t for t in tests}
    results: list[TestResult] = []
    root = JUnitXml.fromstring(xml.decode(errors="replace"))
    suites: list[TestSuite] = [root] if isinstance(root, TestSuite) else list(root)
    for suite in suites:
        for case in suite:
            outcome, message = _case_outcome(case)
            file = _case_file(case, suite_root)
            active = by_path.get(file)
            cls = None
            if outcome is not TestOutcome.passed and active is not None:
                cls = failure_class_for(active, round_index)
            results.append(
                TestResult(
                    file=file,
                    name=case.name or "",
                    outcome=outcome,
                    message=message,
                    failure_class=cls,
                    origin_round=active.origin_round if active else None,
                )
            )
    return results


def _safe_xml(sandbox: Sandbox, path: str) -> bytes:
    """pytest's JUnit report, read as an untrusted file (no links, no FIFOs, capped)."""
    try:
        return sandbox.read_file(path, limit=REPORT_LIMIT)
    except (OSError, KeyError, SandboxError):
        return b""


def _channel_results(
    ch: Channel, controls: Controls, tests: list[ActiveTest], round_index: int, twins: TwinPlan
) -> list[TestResult]:
    by_path = {t.path: t for t in tests}
    out: list[TestResult] = []

    def add(file: str, name: str, outcome: TestOutcome, message: str) -> None:
        active = by_path.get(file)
        cls = None
        if outcome is not TestOutcome.passed and active is not None:
            cls = failure_class_for(active, round_index)
        out.append(
            TestResult(
                file=file,
                name=name,
                outcome=outcome,
                message=message[:500],
                failure_class=cls,
                origin_round=active.origin_round if active else None,
            )
        )

    for nodeid, (outcome, msg) in ch.collect_errors.items():
        if split_nodeid(nodeid)[0] == controls.filename:
            continue
        kind = TestOutcome.skipped if outcome == "skipped" else TestOutcome.error
        add(split_nodeid(nodeid)[0], "", kind, msg or "collection failed")
    for nodeid, phases in ch.tests.items():
        if nodeid in controls.node_ids or twins.twin_of(nodeid):
            continue
        outcome, msg = phase_outcome(phases)
        add(*split_nodeid(nodeid), TestOutcome(outcome), msg)
    return out


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(file, test name) of a pytest node id; ``::`` inside a parameter id is not a separator."""
    head, bracket, params = nodeid.partition("[")
    parts = head.split("::")
    return parts[0], parts[-1] + bracket + params if len(parts) > 1 else ""


def _base(nodeid: str) -> tuple[str, str]:
    file, name = split_nodeid(nodeid)
    return file, name.split("[")[0]


@dataclass(frozen=True)
class _Run:
    """What one pytest run left behind, as the cross-checks read it."""

    ch: Channel
    controls: Controls
    tests: list[ActiveTest]
    exit_code: int
    timed_out: bool
    junit: list[TestResult] | None
    task_selects: bool
    twins: TwinPlan
    cut: int = 0


def _cross_check(run: _Run) -> tuple[list[str], list[str]]:
    """(integrity evidence, ordinary problems) of one run; see :mod:`._guard`.

    ``run.cut``: bytes the sandbox dropped from the middle of the output (see
    ``evoround.sandboxes.common._capture``). Records of the channel may be among them, so what is
    missing (or cut in two) is then no evidence: it fails the round as a problem instead.
    """
    ch, cut = run.ch, run.cut
    evidence, absent = _absent_or_evidence(ch.anomalies, cut)
    if ch.tampered:
        evidence.append(
            "the test runner's internals were changed during the run: " + ", ".join(ch.tampered[:5])
        )
    evidence += _twin_evidence(ch, run.twins, absent)
    evidence += _fresh_evidence(ch, run.controls, run.twins, absent)
    evidence, problems = _cross_check_rest(run, evidence, absent)
    if cut:
        problems += [f"{a} (but {cut} bytes of output were dropped)" for a in absent]
    else:
        evidence += absent
    return evidence, problems


def _absent_or_evidence(anomalies: list[str], cut: int) -> tuple[list[str], list[str]]:
    """A malformed record is a record cut in two when output was dropped."""
    if not cut:
        return list(anomalies), []
    torn = [a for a in anomalies if a == MALFORMED]
    return [a for a in anomalies if a != MALFORMED], torn


@dataclass
class _Findings:
    """What the cross-checks found so far: integrity evidence, findings that rest on a
    missing record (evidence only when no output was dropped) and ordinary problems."""

    evidence: list[str]
    absent: list[str]
    problems: list[str] = field(default_factory=list)


def _cross_check_rest(
    run: _Run, evidence: list[str], absent: list[str]
) -> tuple[list[str], list[str]]:
    """The checks of the controls, the exit code, the end record, the tests the task's
    files define and the JUnit report (see :data:`_FINISHED_CHECKS`), appended to
    ``evidence`` and ``absent`` in place."""
    found = _Findings(evidence, absent)
    _failing_control_passed(run, found)
    if run.ch.end_rc is None:
        _unfinished(run, found)
        return evidence, found.problems
    for check in _FINISHED_CHECKS:
        check(run, found)
    return evidence, found.problems


def _ran(ch: Channel) -> bool:
    """pytest ran the session to its end (not interrupted by collection errors or usage)."""
    return ch.end_rc in (0, EXIT_TESTS_FAILED)


def _failing_control(run: _Run) -> dict[str, dict[str, object]] | None:
    return run.ch.tests.get(run.controls.node_ids[1])


def _passing_control(run: _Run) -> dict[str, dict[str, object]] | None:
    return run.ch.tests.get(run.controls.node_ids[0])


def _failing_control_passed(run: _Run, found: _Findings) -> None:
    fail_ctl = _failing_control(run)
    if fail_ctl is not None and phase_outcome(fail_ctl)[0] == "passed":
        found.evidence.append(
            "the control test that must fail was reported passed: test outcomes are forged"
        )


def _unfinished(run: _Run, found: _Findings) -> None:
    """No end record: a timeout says why; an exit code of 0 without one is forged."""
    if run.timed_out:
        pass
    elif run.exit_code == 0:
        found.evidence.append(
            "the test process exited with code 0 before pytest finished "
            "(no end record on the result channel)"
        )
    else:
        found.problems.append(f"pytest did not finish (exit code {run.exit_code})")


def _deselected_unasked(run: _Run, found: _Findings) -> None:
    ch = run.ch
    if ch.deselected and not run.task_selects:
        found.evidence.append(
            "tests were deselected although the task selects none: "
            + ", ".join(sorted(ch.deselected)[:5])
        )


def _exit_code_differs(run: _Run, found: _Findings) -> None:
    if not run.timed_out and run.exit_code != run.ch.end_rc:
        found.evidence.append(
            f"exit code {run.exit_code} differs from pytest's return code {run.ch.end_rc} "
            "recorded on the result channel"
        )


def _controls_missing(run: _Run, found: _Findings) -> None:
    ran = _ran(run.ch)
    if _failing_control(run) is None and ran:
        found.absent.append("the control test that must fail never ran: tests were removed")
    if _passing_control(run) is None and ran:
        found.absent.append("the control test that must pass never ran: tests were removed")


def _zero_despite_failing_control(run: _Run, found: _Findings) -> None:
    fail_ctl = _failing_control(run)
    if run.ch.end_rc == 0 and fail_ctl is not None and phase_outcome(fail_ctl)[0] != "passed":
        found.evidence.append("pytest returned 0 although the failing control test failed")


def _tests_vanished(run: _Run, found: _Findings) -> None:
    """Tests the task's files certainly define must all come back (or be deselected by the
    task's own pytest_args, which pytest announces, or sit under a collection error)."""
    ch = run.ch
    reported = {_base(n) for n in ch.tests}
    deselected = {_base(n) for n in ch.deselected}
    broken = {split_nodeid(n)[0] for n in ch.collect_errors}
    ran_all = _ran(ch) and ch.collected is not None
    for t in run.tests:
        names = _defined_tests(t, broken)
        if names is None:
            continue
        gone = sorted(
            n for n in names if (t.path, n) not in reported and (t.path, n) not in deselected
        )
        if gone and ran_all:
            found.absent.append(f"{t.path}: tests vanished from the session: {', '.join(gone[:5])}")
        elif gone:
            found.problems.append(f"{t.path}: tests not run: {', '.join(gone[:5])}")


def _defined_tests(t: ActiveTest, broken: set[str]) -> set[str] | None:
    """The test names ``t``'s text certainly defines; None for a file that is no test
    module, failed collection or cannot be read."""
    if not is_test_module(t.path) or t.path in broken:
        return None
    try:
        return expected_names(Path(t.source).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _collected_unreported(run: _Run, found: _Findings) -> None:
    ch = run.ch
    if ch.collected is not None and _ran(ch):
        unreported = [n for n in ch.collected if n not in ch.tests]
        if unreported:
            found.absent.append(f"collected tests never reported: {', '.join(unreported[:5])}")


def _junit_cross_check(run: _Run, found: _Findings) -> None:
    """pytest's JUnit report, a second listener to the same reports, against the channel."""
    ch, junit = run.ch, run.junit
    if junit is None:
        return
    found.evidence += _junit_disagrees(ch, junit)
    channel = {(r.file, r.name, r.outcome) for r in _all_tests(ch)}
    for r in junit:
        if r.name == run.controls.failing and r.outcome is TestOutcome.passed:
            found.evidence.append("the JUnit report says the failing control test passed")
        elif (
            r.outcome is TestOutcome.passed
            and r.name
            and (r.file, r.name, r.outcome) not in channel
        ):
            found.absent.append(
                f"the JUnit report says {r.file}::{r.name} passed; the result channel does not"
            )
            break


_FINISHED_CHECKS: tuple[Callable[[_Run, _Findings], None], ...] = (
    _deselected_unasked,
    _exit_code_differs,
    _controls_missing,
    _zero_despite_failing_control,
    _tests_vanished,
    _collected_unreported,
    _junit_cross_check,
)
"""The cross-checks of a run with an end record, in the order their findings are listed."""


def _junit_disagrees(ch: Channel, junit: list[TestResult]) -> list[str]:
    """Tests the result channel says passed while pytest's own JUnit writer, a second
    listener to the same reports, saw only failures: one of the two was tampered with, and
    it is never the failure that is forged. (Same-named tests of several classes count
    only when every one of them agrees.)"""
    said: dict[tuple[str, str], set[TestOutcome]] = {}
    for r in _all_tests(ch):
        said.setdefault((r.file, r.name), set()).add(r.outcome)
    saw: dict[tuple[str, str], set[TestOutcome]] = {}
    for r in junit:
        if r.name:
            saw.setdefault((r.file, r.name), set()).add(r.outcome)
    bad = {TestOutcome.failed, TestOutcome.error}
    out = sorted(
        f"{f}::{n}"
        for (f, n), outcomes in saw.items()
        if said.get((f, n)) == {TestOutcome.passed} and outcomes & bad and not outcomes - bad
    )
    if not out:
        return []
    return [
        "the result channel says these passed, pytest's JUnit report says they failed: "
        + ", ".join(out[:5])
    ]


def _twin_evidence(ch: Channel, twins: TwinPlan, absent: list[str] | None = None) -> list[str]:
    """A failing twin reported passed (wherever it shows up: a class hands its twin down)
    where its original did not fail (see :func:`_spared`); or, in a completed run where its
    original ran, a twin that never ran in the original's class (or, when its
    parametrization is written out, lost some of the instances its original had there).
    Findings that rest on a missing record go to ``absent`` if given."""
    out: list[str] = []
    gone = out if absent is None else absent
    done = ch.end_rc in (0, EXIT_TESTS_FAILED) and ch.collected is not None
    for tw in twins.twins:
        mine, theirs = _twin_runs(ch, tw)
        forged = _forged_instances(ch, tw, mine)
        if forged:
            out.append(
                f"a failing twin of {_where(tw)} (an altered copy no honest run "
                f"can pass) was reported passed ({len(forged)} of {len(mine)} instances)"
            )
        elif done and _twin_lost(tw, mine, theirs):
            gone.append(f"the failing twin of {_where(tw)} never ran: tests were removed")
    return out


def _forged_instances(
    ch: Channel, tw: Twin, mine: dict[tuple[str, str, str], str]
) -> list[tuple[str, str, str]]:
    """The twin's instances reported passed where nothing excuses it."""
    return sorted(
        k
        for k, o in mine.items()
        if o == "passed" and not _spared(ch, tw, k) and not _failed_fresh(ch, tw, k)
    )


def _twin_lost(tw: Twin, mine: dict[tuple[str, str, str], str], theirs: set[str]) -> bool:
    """Whether the twin is missing (or lost instances) where its original ran."""
    here = {p for f, c, p in mine if (f, c) == (tw.file, tw.cls)}
    return bool(theirs) and (not here or (tw.fixed and here < theirs))


def _spared(ch: Channel, tw: Twin, where: tuple[str, str, str]) -> bool:
    """Whether the twin instance at ``where`` (file, class, parameters) passing is no
    evidence: its original, with the same parameters in the same class (else in its own),
    failed or errored in the run. A twin's changed value has the original's shape, so a
    wrong answer may be exactly that value; but code that fails the original cannot turn the
    round into a pass, and code that passes it and its twin answers two different values to
    the same question."""
    file, cls, params = where
    for f, c in ((file, cls), (tw.file, tw.cls)):
        for nodeid, phases in ch.tests.items():
            if node_parts(nodeid) == (f, c, tw.original, params):
                return phase_outcome(phases)[0] in ("failed", "error")
    return False


def _failed_fresh(ch: Channel, tw: Twin, where: tuple[str, str, str]) -> bool:
    """Whether the twin instance at ``where`` failed in the fresh copy, where it was the first
    to ask its question: code that keeps state between calls (a total never reset) answers
    the original right and a repeat otherwise, and that other answer may be the twin's
    changed value (it has the original's shape). Then the real run's pass is no evidence: a
    value reader answers the same in both. (Code that tells the copy apart and answers it
    wrongly is not caught by this twin: see the threat model.)"""
    for nodeid, phases in ch.fresh.items():
        if node_parts(nodeid) == (where[0], where[1], tw.name, where[2]):
            return phase_outcome(phases)[0] in ("failed", "error")
    return False


def _twin_runs(ch: Channel, tw: Twin) -> tuple[dict[tuple[str, str, str], str], set[str]]:
    """(the twin's instances anywhere: (file, class, parameters) -> outcome, the parameters
    its original ran with in its own file and class)."""
    mine: dict[tuple[str, str, str], str] = {}
    theirs: set[str] = set()
    for nodeid, phases in ch.tests.items():
        file, cls, name, params = node_parts(nodeid)
        if name == tw.name:
            mine[(file, cls, params)] = phase_outcome(phases)[0]
        elif (file, cls, name) == (tw.file, tw.cls, tw.original):
            theirs.add(params)
    return mine, theirs


def _fresh_evidence(
    ch: Channel, controls: Controls, twins: TwinPlan, absent: list[str] | None = None
) -> list[str]:
    """The runner's fresh copy (forked before any test ran, running only the harness's own
    tests, after the real run): a twin or the failing control passing there is a forgery
    that answers by call history; in a copy that ran to its end, one of them missing is a
    removed test. A copy stopped for time proves only what it reported. Findings that rest on
    a missing record go to ``absent`` if given."""
    if ch.end_rc not in (0, EXIT_TESTS_FAILED) or ch.collected is None:
        return []  # the real run did not complete: the other checks speak
    if ch.fresh_error is not None:
        return [f"the runner could not fork its fresh copy of the test process: {ch.fresh_error}"]
    out: list[str] = []
    missing = out if absent is None else absent
    if ch.fresh_status is None:
        missing.append("the runner never reported its fresh copy of the test process")
        return out
    out += _fresh_forgeries(ch, controls, twins)
    gap = _fresh_gap(ch, controls, twins)
    if gap is not None:
        missing.append(gap)
    return out


def _fresh_forgeries(ch: Channel, controls: Controls, twins: TwinPlan) -> list[str]:
    """Twins, and the failing control, that passed in the fresh copy."""
    out: list[str] = []
    for tw in twins.twins:
        mine = {n: ph for n, ph in ch.fresh.items() if node_parts(n)[2] == tw.name}
        forged = sum(
            phase_outcome(ph)[0] == "passed" and not _spared(ch, tw, _place(n))
            for n, ph in mine.items()
        )
        if forged:
            out.append(
                f"a failing twin of {_where(tw)} passed when it ran first, in a fresh copy "
                f"of the test process ({forged} of {len(mine)} instances): results follow "
                "call order, not the code"
            )
    fail_id = controls.node_ids[1]
    if fail_id in ch.fresh and phase_outcome(ch.fresh[fail_id])[0] == "passed":
        out.append("the control test that must fail passed in the fresh copy of the test process")
    return out


def _place(nodeid: str) -> tuple[str, str, str]:
    file, cls, _, params = node_parts(nodeid)
    return file, cls, params


def _fresh_gap(ch: Channel, controls: Controls, twins: TwinPlan) -> str | None:
    """What the fresh copy left out although it ran to its end (None for a copy stopped for
    time, which proves only what it reported)."""
    if ch.fresh_late:
        return None
    if not ch.fresh_ended:
        # (its exit status alone proves nothing: code under test that reaps any child, as a
        # SIGCHLD handler may, takes it from the runner after the copy has finished)
        return f"the fresh copy of the test process ended early (status {ch.fresh_status})"
    names = {tw.name: tw for tw in twins.twins}
    ours = [n for n in ch.tests if n in controls.node_ids or node_parts(n)[2] in names]
    gone = [n for n in ours if n not in ch.fresh]
    if gone:
        return f"tests of the harness never ran in the fresh copy: {', '.join(gone[:3])}"
    return None


def _where(tw: Twin) -> str:
    return f"{tw.file}::{tw.cls}::{tw.original}" if tw.cls else f"{tw.file}::{tw.original}"


def _all_tests(ch: Channel) -> list[TestResult]:
    """The channel's tests as pytest's JUnit writer names them: by the file that defines the
    test (a method a class inherits from a helper module is that module's), not the node's."""
    out = []
    for nodeid, phases in ch.tests.items():
        outcome, _ = phase_outcome(phases)
        file, name = split_nodeid(nodeid)
        loc = next((r.get("loc") for r in phases.values() if r.get("loc")), None)
        file = loc if isinstance(loc, str) else file
        out.append(TestResult(file=file, name=name, outcome=TestOutcome(outcome)))
    return out


def suite_sources(tests: list[ActiveTest]) -> tuple[dict[str, str], list[str]]:
    """The suite's test modules (path -> text) and conftest texts, for the failing twins
    (both verifiers plan them from the same texts)."""
    modules: dict[str, str] = {}
    conftests: list[str] = []
    for t in tests:
        try:
            if is_test_module(t.path):
                modules[t.path] = t.source.read_bytes().decode("utf-8")
            elif Path(t.path).name == "conftest.py":
                conftests.append(t.source.read_bytes().decode("utf-8", errors="replace"))
        except (OSError, UnicodeDecodeError):
            continue
    return modules, conftests


@dataclass(frozen=True)
class _Layout:
    """Where one verification run's files live in the clone's scratch (fresh, unguessable
    names per run) and what the harness added to the suite."""

    nonce: str
    base: str
    suite_root: str
    junit_path: str
    runner_path: str
    modules: dict[str, str]
    conftests: list[str]
    twins: TwinPlan
    controls: Controls


def run_pytest(
    sandbox: Sandbox,
    tests: list[ActiveTest],
    round_index: int,
    *,
    timeout: float,
    extra_args: list[str] | None = None,
    artifacts: Path | None = None,
) -> VerifierOutcome:
    """Copy ``tests`` into ``sandbox`` (a clone of the round's snapshot) and grade it.

    The verdict comes from the guarded result channel (see :mod:`._guard`); the exit code,
    the end record and pytest's JUnit report are cross-checked against it, and a forged
    pass is returned with ``integrity`` evidence instead of passing.
    """
    lay = _lay_out(sandbox, tests)
    args = _pytest_args(lay, extra_args)
    argv, res, duration = _execute(sandbox, lay, args, timeout, extra_args)
    ch = read_channel(res.stdout, lay.nonce)
    xml = _safe_xml(sandbox, lay.junit_path)
    if artifacts is not None:
        _save_artifacts(artifacts, lay.nonce, argv, args, res, xml)
    problems: list[str] = []
    if res.timed_out:
        problems.append(f"verifier timed out after {timeout:.0f}s")
    junit: list[TestResult] | None = None
    if xml:
        try:
            junit = parse_junit(xml, lay.suite_root, tests, round_index)
        except Exception as e:  # malformed report: evidence only if the run claims success
            problems.append(f"unreadable JUnit report: {str(e)[:200]}")
    results = _channel_results(ch, lay.controls, tests, round_index, lay.twins)
    evidence, more = _cross_check(
        _Run(
            ch=ch,
            controls=lay.controls,
            tests=tests,
            exit_code=res.exit_code,
            timed_out=res.timed_out,
            junit=junit,
            task_selects=selects(extra_args or []),
            twins=lay.twins,
            cut=res.truncated_bytes,
        )
    )
    problems += more
    problems += _report_problems(ch, res, bool(xml), tests, results)
    passed = _passed(ch, lay.controls, res, results) and not problems and not evidence
    return VerifierOutcome(
        passed=passed,
        # the harness's control test always fails: report pytest's code without it
        exit_code=0 if passed else res.exit_code,
        timed_out=res.timed_out,
        duration_sec=duration,
        tests=results,
        problems=problems,
        integrity=evidence,
    )


def _execute(
    sandbox: Sandbox,
    lay: _Layout,
    args: list[str],
    timeout: float,
    extra_args: list[str] | None,
) -> tuple[list[str], ExecResult, float]:
    """Run the runner (its arguments on stdin, never on the command line): (argv, result,
    seconds taken)."""
    vp = sandbox.verifier_python()
    # bytecode only from a cache of the verifier's own: a workspace __pycache__ (say, an
    # unchecked-hash .pyc of working code beside a stub source) is never read. The cache is
    # the harness's read-only one of the interpreter's own modules (checked-hash bytecode,
    # filled outside any sandbox) or, without one, a fresh empty folder; -B: nothing is
    # written there (the agent's and the tests' modules compile afresh each run)
    prefix = vp.pycache or f"{lay.base}/pycache"
    argv = [*vp.argv, "-B", "-X", f"pycache_prefix={prefix}", lay.runner_path]
    start = time.monotonic()
    # No third-party pytest plugins: faster start, and nothing installed can alter grading.
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    res = sandbox.exec(
        argv,
        timeout=timeout,
        cwd=sandbox.workdir,
        env=env,
        stdin=runner_input(
            lay.nonce,
            args,
            lay.controls,
            vp.path_first,
            vp.path_last,
            {**lay.twins.lines, lay.controls.filename: 0},
            sandbox.workdir,
            named_plugins([*lay.conftests, *lay.modules.values()], extra_args or []),
            budget=timeout,
        ),
    )
    return argv, res, time.monotonic() - start


def _lay_out(sandbox: Sandbox, tests: list[ActiveTest]) -> _Layout:
    """Plan the run's twins and controls and copy everything in: one archive in (suite,
    controls, twins, config, runner) and, later, one out (the JUnit report)."""
    base = f"{sandbox.scratch.rstrip('/')}/verify-{secrets.token_hex(12)}"
    modules, conftests = suite_sources(tests)
    local = {Path(t.path).parts[0].removesuffix(".py") for t in tests}
    # twins of the originals' shape: _twin_evidence spares one whose original failed
    twins = plan_twins(modules, conftests=conftests, far=False)
    controls = make_controls((Path(t.path).name for t in tests), shared_imports(modules, local))
    lay = _Layout(
        nonce=secrets.token_hex(16),
        base=base,
        suite_root=f"{base}/suite",
        junit_path=f"{base}/report-{secrets.token_hex(8)}.xml",
        runner_path=f"{base}/run-{secrets.token_hex(8)}.py",
        modules=modules,
        conftests=conftests,
        twins=twins,
        controls=controls,
    )
    copy_suite(
        sandbox,
        tests,
        base,
        under="suite",
        extra={
            f"suite/{controls.filename}": controls.source,
            **{f"suite/{path}": text for path, text in twins.sources.items()},
            "pytest.ini": INI.format(workdir=sandbox.workdir)
            + CONTROL_MARKER.format(marker=controls.marker),
            lay.runner_path.rsplit("/", 1)[1]: RUNNER,
        },
    )
    return lay


def _pytest_args(lay: _Layout, extra_args: list[str] | None) -> list[str]:
    """pytest's arguments: our ini file, rootdir and confcutdir at the suite (nothing of
    the workspace is configuration), the report path, and the task's own arguments with the
    controls and twins kept in any selection they make."""
    return [
        "-c",
        f"{lay.base}/pytest.ini",
        "--rootdir",
        lay.suite_root,
        "--confcutdir",
        lay.suite_root,
        f"--junitxml={lay.junit_path}",
        "-q",
        "-rfE",
        *keep_controls(list(extra_args or []), lay.controls, [t.name for t in lay.twins.twins]),
        lay.suite_root,
    ]


def _save_artifacts(
    artifacts: Path, nonce: str, argv: list[str], args: list[str], res: ExecResult, xml: bytes
) -> None:
    """The run's log (without the channel's records) and its JUnit report, for people."""
    artifacts.mkdir(parents=True, exist_ok=True)
    shown = "\n".join(
        ln for ln in res.stdout.splitlines() if not ln.startswith(f"@@evoround-{nonce}@@")
    )
    log = (
        f"$ {shlex.join(argv)} < (arguments on stdin)\n$ pytest {shlex.join(args)}\n"
        f"[exit {res.exit_code}]\n{shown}\n{res.stderr}"
    )
    (artifacts / "verifier.log").write_text(log, encoding="utf-8")
    if xml:
        (artifacts / "junit.xml").write_bytes(xml)


def _report_problems(
    ch: Channel, res: ExecResult, has_xml: bool, tests: list[ActiveTest], results: list[TestResult]
) -> list[str]:
    """A finished run that wrote no JUnit report or left test modules out of its results."""
    problems: list[str] = []
    if not has_xml and ch.end_rc is not None and not res.timed_out:
        problems.append("pytest wrote no JUnit report")
    seen = {r.file for r in results}
    missing = [t.path for t in tests if is_test_module(t.path) and t.path not in seen]
    if missing and not res.timed_out and ch.end_rc is not None:
        problems.append("test modules missing from the report: " + ", ".join(missing))
    return problems


def _passed(ch: Channel, controls: Controls, res: ExecResult, results: list[TestResult]) -> bool:
    """The run's own verdict: pytest returned "some tests failed" (the failing control) both
    on the channel and as exit code, the controls came out right, and every other test
    passed (problems and evidence are checked besides)."""
    all_passed = bool(results) and all(r.outcome is TestOutcome.passed for r in results)
    fail_ctl = ch.tests.get(controls.node_ids[1])
    pass_ctl = ch.tests.get(controls.node_ids[0])
    controls_right = (
        fail_ctl is not None
        and phase_outcome(fail_ctl)[0] == "failed"
        and pass_ctl is not None
        and phase_outcome(pass_ctl)[0] == "passed"
    )
    return (
        ch.end_rc == EXIT_TESTS_FAILED
        and res.exit_code == EXIT_TESTS_FAILED
        and controls_right
        and not res.timed_out
        and all_passed
    )
