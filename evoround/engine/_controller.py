"""The round controller: the round-boundary protocol, in one file.

Persistent mode (MT), one attempt::

    sandbox = provider.create(task)            # initial workspace
    session = scaffold.start(task, sandbox)    # ONE session for all rounds
    for round i:
        trace   = session.run_round(message_i)           # the agent works
        snap_i  = sandbox.snapshot()                      # freeze the workspace
        verdict = verify(clone(snap_i), active_tests(i))  # hidden, isolated
        record RoundResult                                # durable before going on
        if not verdict.passed: stop                       # fail-stop (--on-fail stop)

With ``--on-fail continue`` (EvoCode-Bench's current runner) a failed round does not end
the attempt: later rounds run in the same sandbox and session and are verified as usual.
The attempt still ends when a round could not be graded at all (infra, set-up, model API)
or when the round sets its own ``min_reward`` and missed it (Harbor's early stop).

Fast-forward mode (SR), one target round i: restore the cached reference state
after round i-1, start a fresh session, run round i alone, verify the same way.

Tests never enter the agent's sandbox: verification always happens in a
separate sandbox created from the round's snapshot.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from evoround.deadline import DeadlineExceeded, deadline
from evoround.engine._reference import reference_snapshot
from evoround.engine._retry import is_model_api_error
from evoround.results import (
    CheckResult,
    EventType,
    Mode,
    ModelUsage,
    RoundResult,
    RoundStatus,
    RoundUsage,
    TestResult,
    Timings,
    TrajectoryEvent,
    VerifierOutcome,
    classify,
)
from evoround.sandboxes import Sandbox, SandboxError, SandboxProvider
from evoround.scaffolds import (
    AgentSession,
    ReferenceSolutionError,
    RoundInput,
    RoundSetupError,
    RoundTrace,
    Scaffold,
    TraceStatus,
    collect_artifacts,
    prepare_round,
    price_usage,
    round_message,
)
from evoround.scaffolds.proxy import ModelProxy, call_usage, fold_calls, proxy_headers, write_calls
from evoround.snapshots import (
    Snapshot,
    SnapshotKind,
    SnapshotLabel,
    SnapshotStore,
    WorkspaceRejected,
)
from evoround.tasks import FailureClass, Round, Task, active_tests
from evoround.verifiers import verify_suite
from evoround.verifiers.checklist import (
    JudgeConfig,
    WorkspaceDiff,
    git_head,
    needs_commits,
    new_commits,
    round_changes,
    round_checks,
    safe_diff,
    score_round,
    write_changes,
    write_checks,
)

ENDS_ATTEMPT = frozenset({RoundStatus.infra, RoundStatus.setup_error, RoundStatus.model_api})
"""Statuses after which no later round can run meaningfully, whatever ``on_fail`` says."""


Window = tuple[int, int | None]
"""``--rounds A-B``: rounds A..B (B None: to the task's last round), 1-based, inclusive."""


log = logging.getLogger(__name__)


def window_of(task: Task, window: Window | None) -> tuple[int, int]:
    """The rounds of ``task`` inside ``window``: (first, last), last clipped to the task."""
    if window is None:
        return 1, task.n_rounds
    first, last = window
    return first, min(last or task.n_rounds, task.n_rounds)


def attempt_ends(
    task: Task, result: RoundResult, on_fail: str = "stop", window: Window | None = None
) -> bool:
    """Whether an MT attempt stops after ``result`` (the one predicate the loop, the
    executor and resume all use, so they cannot disagree)."""
    if result.round >= window_of(task, window)[1]:
        return True
    if result.passed:
        return False
    if on_fail == "stop" or result.status in ENDS_ATTEMPT:
        return True
    # Harbor's early stop: a step with its own min_reward that was missed ends the trial.
    if result.early_stop is not None:
        return result.early_stop
    return task.round(result.round).spec.min_reward is not None  # a record from before


SNAPSHOT_GRACE_SEC = 30.0
"""Time allowed for the snapshot and the verification clone on top of the verifier's own
timeout, at most that timeout again (the workspace limits keep honest copies far below it)."""


@dataclass(frozen=True)
class RunContext:
    """Everything an attempt needs from the job around it."""

    job: str
    job_dir: Path
    provider: SandboxProvider
    store: SnapshotStore
    scaffold: Scaffold
    record: Callable[[RoundResult], None]
    """Durably records a finished round (called before the next round starts)."""
    judge: JudgeConfig | None = None
    """LLM judge for ``kind = "judge"`` checks; None scores them ``error`` (no judge model)."""
    proxy: ModelProxy | None = None
    """``--proxy``: the job's LiteLLM proxy; each round's calls are tagged and folded in."""


def attempt_dir(ctx: RunContext, task: Task, mode: Mode, attempt: int) -> Path:
    return ctx.job_dir / task.name / f"{mode.value}-{attempt:02d}"


def _write_trajectory(path: Path, trace: RoundTrace) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for ev in trace.events:
            f.write(ev.model_dump_json() + "\n")


def _run_agent(session: AgentSession, inp: RoundInput) -> tuple[RoundTrace, RoundStatus | None]:
    """Run the agent's turn; harness failures and agent failures end up apart."""
    try:
        trace = session.run_round(inp)
    except ReferenceSolutionError:
        raise  # the oracle applied a broken reference: a task error, the executor records it
    except SandboxError as e:
        trace = RoundTrace(status=TraceStatus.error, error=f"sandbox: {e}")
        trace.events.append(TrajectoryEvent(type=EventType.error, content=str(e)))
        return trace, RoundStatus.infra
    except Exception as e:  # the scaffold crashed: the agent's failure, with the reason kept
        trace = RoundTrace(status=TraceStatus.error, error=f"{type(e).__name__}: {e}")
        trace.events.append(TrajectoryEvent(type=EventType.error, content=trace.error or ""))
        # A model API that stayed down through the agent's retries is not the agent failing.
        return trace, RoundStatus.model_api if is_model_api_error(e) else RoundStatus.agent_error
    if trace.status is TraceStatus.model_api:
        return trace, RoundStatus.model_api
    if trace.status is TraceStatus.timeout:
        return trace, RoundStatus.agent_timeout
    if trace.status is TraceStatus.error:
        return trace, RoundStatus.agent_error
    return trace, None


@dataclass(frozen=True)
class Grade:
    """What verification said about the round, as the record carries it. The default is a
    round that was never graded (set-up failed, the workspace could not be verified)."""

    reward: float | None = None
    tests_passed: int = 0
    tests_total: int = 0
    exit_code: int | None = None
    failure_classes: dict[FailureClass, int] = field(default_factory=dict)
    failing_tests: list[TestResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    pass_threshold: float | dict[str, float] | None = None
    min_reward_semantics: str | None = None
    early_stop: bool | None = None

    @classmethod
    def of(cls, verdict: VerifierOutcome, semantics: str | None = None) -> Grade:
        failing = [t for t in verdict.tests if t.outcome.value != "passed"]
        return cls(
            reward=verdict.reward,
            tests_passed=verdict.n_passed,
            tests_total=verdict.n_total,
            exit_code=verdict.exit_code,
            failure_classes=classify(failing),
            failing_tests=failing,
            problems=verdict.problems,
            integrity=verdict.integrity,
            pass_threshold=verdict.pass_threshold,
            min_reward_semantics=semantics if verdict.pass_threshold is not None else None,
            early_stop=verdict.early_stop,
        )


@dataclass(frozen=True)
class RoundFrame:
    """One round's identity and place, known before the agent runs: what every record of
    the round shares, whichever phase ends it.

    :meth:`finish` is the one place a round's :class:`RoundResult` is built and recorded, so
    every exit (set-up failed, workspace unverifiable, graded) writes the same fields.
    """

    ctx: RunContext
    task: Task
    mode: Mode
    attempt: int
    round_index: int
    parent: Snapshot | None
    resumed_from: int | None
    started: datetime
    art: Path
    """The round's artefact directory (trajectory, junit, checks, result.json)."""
    timings: Timings
    """Filled in phase by phase; the record carries what was reached."""
    model_usage: ModelUsage | None = None
    usage: RoundUsage | None = None

    @property
    def attempt_name(self) -> str:
        return f"{self.mode.value}-{self.attempt:02d}"

    @property
    def rnd(self) -> Round:
        return self.task.round(self.round_index)

    def finish(
        self,
        status: RoundStatus,
        *,
        passed: bool = False,
        error: str | None = None,
        grade: Grade | None = None,
        snap: Snapshot | None = None,
        checks: list[CheckResult] | None = None,
        result_json: bool = False,
    ) -> RoundResult:
        """Build the round's record and record it durably (before the next round starts).

        ``snap``: the snapshot the record names (only a round that reached one and was
        timed or graded on it). ``result_json``: a graded round also leaves its record in
        its artefact directory (written first: recording may unwind the attempt).
        """
        grade = grade or Grade()
        ctx = self.ctx
        result = RoundResult(
            job=ctx.job,
            task=self.task.name,
            task_digest=self.task.digest,
            n_rounds=self.task.n_rounds,
            mode=self.mode,
            attempt=self.attempt,
            round=self.round_index,
            agent=ctx.scaffold.name,
            model=ctx.scaffold.model,
            sandbox=ctx.provider.name,
            passed=passed,
            status=status,
            error=error,
            change_types=[c.value for c in self.rnd.spec.change_types],
            tests_passed=grade.tests_passed,
            tests_total=grade.tests_total,
            reward=grade.reward,
            pass_threshold=grade.pass_threshold,
            min_reward_semantics=grade.min_reward_semantics,
            early_stop=grade.early_stop,
            verifier_exit_code=grade.exit_code,
            failure_classes=grade.failure_classes,
            failing_tests=grade.failing_tests,
            verifier_problems=grade.problems,
            integrity_evidence=grade.integrity,
            snapshot_id=snap.id if snap else None,
            parent_snapshot_id=self.parent.id if self.parent else None,
            timings=self.timings,
            started_at=self.started,
            artifacts=str(self.art.relative_to(ctx.job_dir)),
            checks=checks or [],
            model_usage=self.model_usage,
            usage=self.usage,
            resumed_from=self.resumed_from,
            host=socket.gethostname(),
        )
        if result_json:
            (self.art / "result.json").write_text(
                json.dumps(json.loads(result.model_dump_json()), indent=2), encoding="utf-8"
            )
        ctx.record(result)
        return result


@dataclass(frozen=True)
class AgentTurn:
    """What the agent's turn left: its message, trace and (None: it finished) failure."""

    message: str
    trace: RoundTrace
    status: RoundStatus | None
    model_usage: ModelUsage | None


def run_round(
    ctx: RunContext,
    task: Task,
    sandbox: Sandbox,
    session: AgentSession,
    *,
    mode: Mode,
    attempt: int,
    round_index: int,
    parent: Snapshot | None,
    resumed_from: int | None = None,
) -> tuple[RoundResult, Snapshot | None]:
    """One round boundary: set-up, agent turn, snapshot, isolated verification, checklist,
    record. Each phase below is one function; every exit records through
    :meth:`RoundFrame.finish`. Whether the attempt goes on is :func:`attempt_ends`'s call."""
    art = attempt_dir(ctx, task, mode, attempt) / f"round-{round_index:02d}"
    art.mkdir(parents=True, exist_ok=True)
    frame = RoundFrame(
        ctx=ctx,
        task=task,
        mode=mode,
        attempt=attempt,
        round_index=round_index,
        parent=parent,
        resumed_from=resumed_from,
        started=datetime.now(UTC),
        art=art,
        timings=Timings(),
    )
    try:
        _set_up_round(frame, sandbox)
    except RoundSetupError as e:
        return frame.finish(RoundStatus.setup_error, error=str(e)), None

    specs = round_checks(task, round_index)
    git_base = git_head(sandbox) if needs_commits(specs) else None
    turn = _agent_turn(frame, sandbox, session)
    usage = _round_usage(ctx.scaffold.model, turn.trace.events, turn.model_usage)
    frame = replace(frame, model_usage=turn.model_usage, usage=usage)

    snap, verified = _snapshot_and_verify(frame, sandbox)
    if isinstance(verified, RoundResult):  # the workspace could not be verified: recorded
        return verified, snap
    assert snap is not None  # a verdict is only ever reached on a snapshot

    diff = _record_changes(frame, snap)
    checks: list[CheckResult] = []
    if specs:
        commits = new_commits(sandbox, git_base) if needs_commits(specs) else None
        checks = _checklist(frame, turn, snap, commits, diff)
    return _record_verdict(frame, turn, verified, snap, checks), snap


def _set_up_round(frame: RoundFrame, sandbox: Sandbox) -> None:
    """The round's own set-up (Harbor: step workdir/, setup.sh, healthcheck) before the
    agent; timed even when it fails (:class:`RoundSetupError` ends the round)."""
    t_setup = time.monotonic()
    try:
        prepare_round(sandbox, frame.task, frame.rnd)
    finally:
        frame.timings.setup_sec = time.monotonic() - t_setup


def _agent_turn(frame: RoundFrame, sandbox: Sandbox, session: AgentSession) -> AgentTurn:
    """The agent works; its artefacts, model calls and trajectory are kept whatever it did."""
    task, rnd, art = frame.task, frame.rnd, frame.art
    t0 = time.monotonic()
    tag = ModelProxy.tag(frame.ctx.job, task.name, frame.attempt_name, frame.round_index)
    # Sent with every model call, proxy or not: a fresh SR session of round 5 looks like
    # round 1 from its conversation alone; the header tells a replay server which it is.
    agent_timeout = rnd.spec.agent_timeout_sec or task.config.environment.agent_timeout_sec
    inp = RoundInput(task, rnd, round_message(task, rnd), agent_timeout, art, proxy_headers(tag))
    where = f"{task.name} {frame.attempt_name} round {frame.round_index}"
    log.debug("%s: agent turn (timeout %ss)", where, agent_timeout)
    trace, agent_status = _run_agent(session, inp)
    frame.timings.agent_sec = time.monotonic() - t0
    log.debug(
        "%s: agent done in %.1fs (%d events%s)",
        where,
        frame.timings.agent_sec,
        len(trace.events),
        f", {agent_status.value}" if agent_status else "",
    )
    collect_artifacts(sandbox, [*task.config.artifacts, *rnd.spec.artifacts], art / "artifacts")
    model_usage = _fold_proxy_calls(frame.ctx.proxy, tag, art, trace)
    _write_trajectory(art / "trajectory.jsonl", trace)
    return AgentTurn(inp.message, trace, agent_status, model_usage)


def _fold_proxy_calls(
    proxy: ModelProxy | None, tag: dict[str, str], art: Path, trace: RoundTrace
) -> ModelUsage | None:
    """With ``--proxy``: every call the agent made this round, failed ones too, once each,
    in time order, kept beside the trajectory and folded into it; their usage counted."""
    if not proxy:
        return None
    calls = proxy.collect(tag)
    write_calls(art / "model_calls.jsonl", calls)
    trace.events = fold_calls(trace.events, calls)
    return call_usage(calls)


def _snapshot_and_verify(
    frame: RoundFrame, sandbox: Sandbox
) -> tuple[Snapshot | None, VerifierOutcome | RoundResult]:
    """Freeze the workspace and verify a clone of it: the snapshot and the verdict, or the
    recorded result of a round whose workspace could not be verified.

    One deadline covers snapshot, clone and verification: a hostile workspace that makes
    copying slow eats the verifier's time, not the job's (the copy loops check it).
    """
    env = frame.task.config.environment
    t1 = time.monotonic()
    at = t1 + env.verifier_timeout_sec + min(SNAPSHOT_GRACE_SEC, env.verifier_timeout_sec)
    snap: Snapshot | None = None
    try:
        with deadline(at):
            snap = _snapshot(frame, sandbox)
            frame.timings.snapshot_sec = time.monotonic() - t1
            t2 = time.monotonic()
            verdict = _verify_clone(frame, snap, at)
            frame.timings.verify_sec = time.monotonic() - t2
    except DeadlineExceeded as e:
        # The agent's workspace made the harness run out of time: a verification timeout
        # of the agent's round, recorded, never a lost round.
        _split_spent(frame.timings, time.monotonic() - t1)
        problems = [f"{e} ({at - t1:.0f} s)"]
        result = frame.finish(
            RoundStatus.verifier_timeout, error=str(e), grade=Grade(problems=problems), snap=snap
        )
        return snap, result
    except WorkspaceRejected as e:
        # Over the task's workspace limits, or unreadable: the agent's doing, not the harness's.
        rejected = Grade(problems=[f"workspace rejected: {e}"])
        return snap, frame.finish(RoundStatus.failed, error=f"workspace: {e}", grade=rejected)
    except SandboxError as e:
        return snap, frame.finish(RoundStatus.infra, error=str(e))
    return snap, verdict


def _snapshot(frame: RoundFrame, sandbox: Sandbox) -> Snapshot:
    """The agent's workspace after the round, in the lineage of the one it started from."""
    return sandbox.snapshot(
        SnapshotLabel(
            task=frame.task.name,
            task_digest=frame.task.digest,
            kind=SnapshotKind.agent,
            round=frame.round_index,
            attempt=f"{frame.ctx.job}/{frame.attempt_name}",
            parent=frame.parent.id if frame.parent else None,
        )
    )


def _verify_clone(frame: RoundFrame, snap: Snapshot, at: float) -> VerifierOutcome:
    """The round's active tests in a separate sandbox made from ``snap`` (tests never enter
    the agent's sandbox), within what is left of the deadline ``at``."""
    task, i = frame.task, frame.round_index
    verify_name = f"{task.name}/{frame.attempt_name}-verify-{i:02d}"
    with frame.ctx.provider.create(task, verify_name, snap) as clone:
        left = at - time.monotonic()
        if left <= 0:
            return VerifierOutcome(
                passed=False,
                exit_code=124,
                timed_out=True,
                problems=["snapshot and copy used up the verification deadline"],
            )
        # pytest (channel + JUnit) or script (reward file), as the task says
        timeout = min(left, task.config.environment.verifier_timeout_sec)
        fresh = partial(frame.ctx.provider.create, task, f"{verify_name}-canary", snap)
        tests = active_tests(task, i)
        return verify_suite(task, clone, tests, i, frame.art, timeout=timeout, fresh=fresh)


def _split_spent(timings: Timings, spent: float) -> None:
    """Time spent before a deadline hit: the verification's once the snapshot was taken."""
    if timings.snapshot_sec:
        timings.verify_sec = spent - timings.snapshot_sec
    else:
        timings.snapshot_sec = spent


def _record_changes(frame: RoundFrame, snap: Snapshot) -> WorkspaceDiff | None:
    """The round's workspace change against its parent snapshot, kept in the round folder
    (changes.json, workspace.diff) for the viewer and people; the checks score the same
    diff. None when the snapshot's bytes cannot be read here (nothing is written then)."""
    diff = safe_diff(frame.ctx.provider, frame.task, frame.parent, snap)
    if diff is not None:
        try:
            changes, patch = round_changes(diff, frame.parent.id if frame.parent else None)
            write_changes(frame.art, changes, patch)
        except (OSError, ValueError) as e:  # a view aid: never the round's verdict
            log.warning("%s: could not record the workspace change: %s", frame.art, e)
    return diff


def _checklist(
    frame: RoundFrame,
    turn: AgentTurn,
    snap: Snapshot,
    commits: list[str] | None,
    diff: WorkspaceDiff | None,
) -> list[CheckResult]:
    """The process checklist: round-scope checks of this round plus task-scope checks,
    kept in the artefact directory as checks.json."""
    ctx = frame.ctx
    checks = score_round(
        frame.task,
        frame.round_index,
        message=turn.message,
        events=turn.trace.events,
        provider=ctx.provider,
        parent=frame.parent,
        snap=snap,
        has_process=getattr(ctx.scaffold, "has_process", True),
        commits=commits,
        judge=ctx.judge,
        diff=diff,
    )
    if checks:
        write_checks(frame.art / "checks.json", checks)
    return checks


def _round_status(verdict: VerifierOutcome, agent_status: RoundStatus | None) -> RoundStatus:
    """The one status of a verified round, in order of precedence."""
    if verdict.integrity:
        # A forged grade outranks everything else the round did (an agent that also timed
        # out still tried to forge): it is never a pass and always shown as such.
        return RoundStatus.integrity_violation
    if agent_status is not None:
        return agent_status
    if verdict.timed_out:
        return RoundStatus.verifier_timeout
    if verdict.error is not None:
        return RoundStatus.verifier_error  # no verdict at all: not a fail of the work
    return RoundStatus.passed if verdict.passed else RoundStatus.failed


def _record_verdict(
    frame: RoundFrame,
    turn: AgentTurn,
    verdict: VerifierOutcome,
    snap: Snapshot,
    checks: list[CheckResult],
) -> RoundResult:
    """A verified round's record: it passes only if the tests pass, the agent finished and
    nothing was forged."""
    return frame.finish(
        _round_status(verdict, turn.status),
        passed=verdict.passed and turn.status is None and not verdict.integrity,
        error=turn.trace.error or verdict.error,
        grade=Grade.of(verdict, frame.task.config.verifier.min_reward_semantics),
        snap=snap,
        checks=checks,
        result_json=True,
    )


@dataclass(frozen=True)
class ResumeFrom:
    """Where an interrupted MT attempt continues: after ``round``, whose result was recorded.

    The workspace comes back from that round's snapshot and the agent's conversation from
    the session state it saved in ``round-NN/agent`` (see :mod:`evoround.engine._resume`).
    """

    round: int
    snapshot: Snapshot
    state_dir: Path


def run_mt_attempt(
    ctx: RunContext,
    task: Task,
    attempt: int,
    resume: ResumeFrom | None = None,
    on_fail: str = "stop",
    window: Window | None = None,
) -> list[RoundResult]:
    """Persistent mode: one sandbox and one session across rounds; by default stop at the
    first failure, with ``on_fail="continue"`` go on (see :func:`attempt_ends`).

    With ``window`` (``--rounds A-B``) rounds before A are fast-forwarded: the sandbox
    starts from the cached reference state after round A-1 (as SR does), and the attempt
    is persistent from A to B.

    With ``resume`` the attempt continues after ``resume.round`` (a previous process died
    there): same protocol, but the sandbox starts from that round's snapshot and the
    session from its saved state, so no recorded round is run twice.
    """
    results: list[RoundResult] = []
    name = f"{task.name}/mt-{attempt:02d}"
    lo, hi = window_of(task, window)
    start = resume.snapshot if resume else None
    if resume is None and lo > 1:
        start = reference_snapshot(task, lo - 1, ctx.provider, ctx.store)
    with ctx.provider.create(task, name, start) as sandbox:
        if start is not None and resume is None:
            parent = start  # lineage: the fast-forwarded reference state
        elif resume is None:
            parent = sandbox.snapshot(
                SnapshotLabel(
                    task=task.name,
                    task_digest=task.digest,
                    kind=SnapshotKind.initial,
                    round=0,
                    attempt=f"{ctx.job}/mt-{attempt:02d}",
                )
            )
        else:
            parent = resume.snapshot  # lineage: the next snapshot's parent is the restored one
        session = ctx.scaffold.start(task, sandbox)
        try:
            if resume is not None:
                try:
                    session.restore_state(resume.state_dir)
                except NotImplementedError as e:
                    # Not the agent failing a round: the harness cannot continue this attempt.
                    raise SandboxError(f"cannot resume attempt {attempt}: {e}") from e
            first = resume.round + 1 if resume else lo
            for i in range(first, hi + 1):
                result, snap = run_round(
                    ctx,
                    task,
                    sandbox,
                    session,
                    mode=Mode.mt,
                    attempt=attempt,
                    round_index=i,
                    parent=parent,
                    resumed_from=resume.round if resume and i == first else None,
                )
                results.append(result)
                if attempt_ends(task, result, on_fail, window):
                    break
                parent = snap or parent
        finally:
            session.close()
    return results


def run_sr_round(ctx: RunContext, task: Task, attempt: int, round_index: int) -> RoundResult:
    """Fast-forward mode: round ``round_index`` alone, from the reference state before it."""
    start = reference_snapshot(
        task, round_index - 1, ctx.provider, ctx.store, upto=len(task.rounds) - 1
    )
    name = f"{task.name}/sr-{attempt:02d}-r{round_index:02d}"
    with ctx.provider.create(task, name, start) as sandbox:
        session = ctx.scaffold.start(task, sandbox)
        try:
            result, _ = run_round(
                ctx,
                task,
                sandbox,
                session,
                mode=Mode.sr,
                attempt=attempt,
                round_index=round_index,
                parent=start,
            )
        finally:
            session.close()
    return result


def _round_usage(
    model: str | None, events: list[TrajectoryEvent], proxied: ModelUsage | None
) -> RoundUsage | None:
    """Tokens and USD price of the round: the proxy's count of every call when it ran,
    else the usage the agent reported per call (priced once, now, from litellm's map)."""
    if proxied is not None and proxied.calls:
        usage: RoundUsage | None = RoundUsage(
            prompt_tokens=proxied.prompt_tokens,
            completion_tokens=proxied.completion_tokens,
            total_tokens=proxied.total_tokens,
        )
    else:
        usage = RoundUsage.from_counts([e.usage for e in events if e.usage])
    return price_usage(model, usage)
