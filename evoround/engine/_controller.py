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
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evoround.deadline import DeadlineExceeded, deadline
from evoround.engine._reference import reference_snapshot
from evoround.engine._retry import is_model_api_error
from evoround.results import (
    EventType,
    Mode,
    ModelUsage,
    RoundResult,
    RoundStatus,
    RoundUsage,
    Timings,
    TrajectoryEvent,
    VerifierOutcome,
    classify,
)
from evoround.sandboxes import Sandbox, SandboxError, SandboxProvider
from evoround.scaffolds import (
    AgentSession,
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
from evoround.tasks import Task, active_tests
from evoround.verifiers import verify_suite
from evoround.verifiers.checklist import (
    JudgeConfig,
    git_head,
    needs_commits,
    new_commits,
    round_checks,
    score_round,
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
    return task.round(result.round).spec.min_reward is not None


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
    """One round boundary: agent turn, snapshot, isolated verification, record."""
    rnd = task.round(round_index)
    env = task.config.environment
    started = datetime.now(UTC)
    art = attempt_dir(ctx, task, mode, attempt) / f"round-{round_index:02d}"
    art.mkdir(parents=True, exist_ok=True)
    timings = Timings()

    base = dict(
        job=ctx.job,
        task=task.name,
        task_digest=task.digest,
        n_rounds=task.n_rounds,
        mode=mode,
        attempt=attempt,
        round=round_index,
        agent=ctx.scaffold.name,
        model=ctx.scaffold.model,
        sandbox=ctx.provider.name,
        change_types=[c.value for c in rnd.spec.change_types],
        parent_snapshot_id=parent.id if parent else None,
        resumed_from=resumed_from,
        started_at=started,
        artifacts=str(art.relative_to(ctx.job_dir)),
    )
    # The round's own set-up (Harbor: step workdir/, setup.sh, healthcheck) before the agent.
    t_setup = time.monotonic()
    try:
        prepare_round(sandbox, task, rnd)
    except RoundSetupError as e:
        timings.setup_sec = time.monotonic() - t_setup
        result = RoundResult(
            **base, passed=False, status=RoundStatus.setup_error, error=str(e), timings=timings
        )
        ctx.record(result)
        return result, None
    timings.setup_sec = time.monotonic() - t_setup

    specs = round_checks(task, round_index)
    git_base = git_head(sandbox) if needs_commits(specs) else None
    t0 = time.monotonic()
    proxy = ctx.proxy
    tag = ModelProxy.tag(ctx.job, task.name, f"{mode.value}-{attempt:02d}", round_index)
    # Sent with every model call, proxy or not: a fresh SR session of round 5 looks like
    # round 1 from its conversation alone; the header tells a replay server which it is.
    agent_timeout = rnd.spec.agent_timeout_sec or env.agent_timeout_sec
    inp = RoundInput(task, rnd, round_message(task, rnd), agent_timeout, art, proxy_headers(tag))
    log.debug("%s %s-%02d round %d: agent turn (timeout %ss)", task.name, mode.value, attempt,
              round_index, agent_timeout)  # fmt: skip
    trace, agent_status = _run_agent(session, inp)
    timings.agent_sec = time.monotonic() - t0
    log.debug("%s %s-%02d round %d: agent done in %.1fs (%d events%s)", task.name, mode.value,
              attempt, round_index, timings.agent_sec, len(trace.events),
              f", {agent_status.value}" if agent_status else "")  # fmt: skip
    collect_artifacts(sandbox, [*task.config.artifacts, *rnd.spec.artifacts], art / "artifacts")
    model_usage = None
    if proxy:
        # Every call the agent made this round, failed ones too, once each, in time order.
        calls = proxy.collect(tag)
        write_calls(art / "model_calls.jsonl", calls)
        trace.events = fold_calls(trace.events, calls)
        model_usage = call_usage(calls)
    _write_trajectory(art / "trajectory.jsonl", trace)

    base["model_usage"] = model_usage
    base["usage"] = _round_usage(ctx.scaffold.model, trace.events, model_usage)

    snap: Snapshot | None = None
    t1 = time.monotonic()
    # One deadline covers snapshot, clone and verification: a hostile workspace that makes
    # copying slow eats the verifier's time, not the job's (the loops below check it).
    at = t1 + env.verifier_timeout_sec + min(SNAPSHOT_GRACE_SEC, env.verifier_timeout_sec)
    try:
        with deadline(at):
            snap = sandbox.snapshot(
                SnapshotLabel(
                    task=task.name,
                    task_digest=task.digest,
                    kind=SnapshotKind.agent,
                    round=round_index,
                    attempt=f"{ctx.job}/{mode.value}-{attempt:02d}",
                    parent=parent.id if parent else None,
                )
            )
            timings.snapshot_sec = time.monotonic() - t1
            t2 = time.monotonic()
            verify_name = f"{task.name}/{mode.value}-{attempt:02d}-verify-{round_index:02d}"
            with ctx.provider.create(task, verify_name, snap) as clone:
                left = at - time.monotonic()
                if left <= 0:
                    verdict = VerifierOutcome(
                        passed=False, exit_code=124, timed_out=True,
                        problems=["snapshot and copy used up the verification deadline"],
                    )  # fmt: skip
                else:
                    # pytest (channel + JUnit) or script (reward file), as the task says
                    verdict = verify_suite(
                        task, clone, active_tests(task, round_index), round_index, art,
                        timeout=min(left, env.verifier_timeout_sec),
                    )  # fmt: skip
            timings.verify_sec = time.monotonic() - t2
    except DeadlineExceeded as e:
        # The agent's workspace made the harness run out of time: a verification timeout
        # of the agent's round, recorded, never a lost round.
        spent = time.monotonic() - t1
        if timings.snapshot_sec:
            timings.verify_sec = spent - timings.snapshot_sec
        else:
            timings.snapshot_sec = spent
        result = RoundResult(
            **base, passed=False, status=RoundStatus.verifier_timeout, error=str(e),
            verifier_problems=[f"{e} ({at - t1:.0f} s)"], timings=timings,
            snapshot_id=snap.id if snap else None,
        )  # fmt: skip
        ctx.record(result)
        return result, snap
    except WorkspaceRejected as e:
        # Over the task's workspace limits, or unreadable: the agent's doing, not the harness's.
        result = RoundResult(
            **base, passed=False, status=RoundStatus.failed, error=f"workspace: {e}",
            verifier_problems=[f"workspace rejected: {e}"], timings=timings,
        )  # fmt: skip
        ctx.record(result)
        return result, snap
    except SandboxError as e:
        result = RoundResult(
            **base, passed=False, status=RoundStatus.infra, error=str(e), timings=timings
        )
        ctx.record(result)
        return result, snap

    # The process checklist: round-scope checks of this round plus task-scope checks.
    checks = score_round(
        task, round_index, message=inp.message, events=trace.events, store=ctx.store,
        parent=parent, snap=snap, has_process=getattr(ctx.scaffold, "has_process", True),
        commits=new_commits(sandbox, git_base) if needs_commits(specs) else None,
        judge=ctx.judge,
    ) if specs else []  # fmt: skip
    if checks:
        write_checks(art / "checks.json", checks)

    if verdict.integrity:
        # A forged grade outranks everything else the round did (an agent that also timed
        # out still tried to forge): it is never a pass and always shown as such.
        status = RoundStatus.integrity_violation
    elif agent_status is not None:
        status = agent_status
    elif verdict.timed_out:
        status = RoundStatus.verifier_timeout
    elif verdict.error is not None:
        status = RoundStatus.verifier_error  # no verdict at all: not a fail of the work
    else:
        status = RoundStatus.passed if verdict.passed else RoundStatus.failed
    failing = [t for t in verdict.tests if t.outcome.value != "passed"]
    result = RoundResult(
        **base,
        passed=verdict.passed and agent_status is None and not verdict.integrity,
        status=status,
        error=trace.error or verdict.error,
        reward=verdict.reward,
        tests_passed=verdict.n_passed,
        tests_total=verdict.n_total,
        verifier_exit_code=verdict.exit_code,
        failure_classes=classify(failing),
        failing_tests=failing,
        verifier_problems=verdict.problems,
        integrity_evidence=verdict.integrity,
        snapshot_id=snap.id,
        timings=timings,
        checks=checks,
    )
    (art / "result.json").write_text(
        json.dumps(json.loads(result.model_dump_json()), indent=2), encoding="utf-8"
    )
    ctx.record(result)
    return result, snap


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
                    ctx, task, sandbox, session, mode=Mode.mt, attempt=attempt,
                    round_index=i, parent=parent,
                    resumed_from=resume.round if resume and i == first else None,
                )  # fmt: skip
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
                ctx, task, sandbox, session, mode=Mode.sr, attempt=attempt,
                round_index=round_index, parent=start,
            )  # fmt: skip
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
