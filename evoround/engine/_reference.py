"""Reference solutions and the reference states they produce (the SR starting points).

The reference state after round i is the initial workspace plus solutions 1..i.
It is built incrementally from the deepest cached state and cached by
(backend, task digest, round), so SR costs O(N) applications per task, once. The chain is
built in one sandbox per task: asked for one state, the builder goes on to ``upto`` (the
last state the task's SR rounds start from) while it has the sandbox, and each state is an
incremental snapshot of the one before (on host-folder and local workspaces only changed
files are hashed and stored).

The chain runs on a thread of its own and hands each state out the moment it is stored:
the caller that asked for state i goes on (its SR round starts) while states i+1 .. upto
are still being built, and a caller asking for a state the running chain will reach waits
for that state only, not for the chain's end. So an SR round's own sandbox (a container
start and, later, its removal: the dear part on Docker) overlaps the chain instead of
following it, and a task's second SR round no longer waits for the whole chain. The chain's
sandbox takes a container slot of its own (``LimitedProvider``): a caller must ask for its
state before it opens a sandbox, never while it holds one (every caller does so), or with a
single slot it would wait for a chain that waits for that slot.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

from evoround.sandboxes import SandboxProvider
from evoround.scaffolds import (
    ReferenceSolutionError,
    RoundSetupError,
    prepare_round,
    reference_apply,
    solution_env,
    stage_solutions,
)
from evoround.snapshots import Snapshot, SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task


@dataclass
class _Chain:
    """One task's reference chain being built on a thread of this process."""

    last: int
    cond: threading.Condition = field(default_factory=threading.Condition)
    built: dict[int, Snapshot] = field(default_factory=dict)
    """States this chain stored (or found cached), by round."""
    error: BaseException | None = None
    failed_at: int = 0
    """The first round the error leaves without a state (its waiters get the error)."""
    at: int = 0
    """The round whose reference the chain is applying (0: none yet)."""
    done: bool = False

    def publish(self, round_index: int, snap: Snapshot) -> None:
        with self.cond:
            self.built[round_index] = snap
            self.cond.notify_all()


ChainKey = tuple[SandboxProvider, str, str, str]
"""(provider, store root, backend, task digest). The provider object itself, not its
``id()``: an id can be reused by a new provider once the old one is collected, while a key
holding the provider keeps it alive for as long as its entry exists (the chain's run)."""

_CHAINS: dict[ChainKey, _Chain] = {}
"""Running chains; an entry lives from the chain's start to its end (``_run_chain``)."""
_CHAINS_LOCK = threading.Lock()

_BROKEN: weakref.WeakKeyDictionary[SandboxProvider, dict[str, tuple[int, BaseException]]] = (
    weakref.WeakKeyDictionary()
)
"""Provider -> task digest -> (the first round left without a state, why): a task whose own
reference solution or round set-up failed in this provider (one job's run). Every later
state needs that round, so asking for one raises at once instead of building the chain
again (a container and a replay per SR round on Docker). Only the task's faults are kept (a
harness failure may pass on a retry); a new run, or an edited task, tries again."""


def _valid(
    task: Task, round_index: int, provider: SandboxProvider, store: SnapshotStore
) -> Snapshot | None:
    """A cached reference whose content still exists (read without the lock: a stored state
    never changes; a dangling entry is left for :func:`_cached` to drop, under the lock)."""
    snap = store.reference(provider.name, task.digest, round_index)
    return snap if snap is not None and provider.has_snapshot(snap) else None


def _cached(
    task: Task, round_index: int, provider: SandboxProvider, store: SnapshotStore
) -> Snapshot | None:
    """A cached reference whose content still exists; a dangling entry is dropped."""
    snap = store.reference(provider.name, task.digest, round_index)
    if snap is not None and not provider.has_snapshot(snap):
        store.drop_reference(provider.name, task.digest, round_index)
        return None
    return snap


def reference_snapshot(
    task: Task,
    round_index: int,
    provider: SandboxProvider,
    store: SnapshotStore,
    *,
    upto: int | None = None,
) -> Snapshot | None:
    """The cached reference state after ``round_index`` (None for round 0: initial workspace).

    When it must be built, the states after ``round_index + 1 .. upto`` are built in the
    same sandbox too (SR needs every one of them: a later round then finds its start cached
    instead of opening a sandbox of its own), on the chain's thread, after this returns.
    A reference solution (or a round's set-up) that fails raises here for every state it
    leaves unbuilt: :class:`ReferenceSolutionError` (:class:`RoundSetupError`), a task error.
    """
    if round_index == 0:
        return None
    hit = _valid(task, round_index, provider, store)
    if hit is not None:
        return hit
    with _CHAINS_LOCK:
        broken = _BROKEN.get(provider, {}).get(task.digest)
    if broken is not None and broken[0] <= round_index:
        raise broken[1]
    last = max(round_index, upto or 0)
    key: ChainKey = (provider, str(store.root), provider.name, task.digest)
    while True:
        with _CHAINS_LOCK:
            chain = _CHAINS.get(key)
            if chain is None:
                chain = _CHAINS[key] = _Chain(last)
                threading.Thread(
                    target=_run_chain,
                    args=(key, chain, task, round_index, provider, store),
                    name=f"evoround-reference-{task.name}",
                    daemon=True,  # an interrupted engine exits; its provider removes the sandbox
                ).start()
        with chain.cond:
            while round_index not in chain.built and not chain.done:
                chain.cond.wait()
            if round_index in chain.built:
                return chain.built[round_index]
            if chain.error is not None and chain.failed_at <= round_index:
                raise chain.error
        # that chain ended short of this state (it was started for an earlier one, or found
        # the rest built by another process): the next chain starts from the cache


def _run_chain(
    key: ChainKey,
    chain: _Chain,
    task: Task,
    round_index: int,
    provider: SandboxProvider,
    store: SnapshotStore,
) -> None:
    try:
        _build(chain, task, round_index, provider, store)
    except BaseException as e:  # noqa: BLE001 - handed to the states' waiters
        with chain.cond:
            chain.error = e
            chain.failed_at = chain.at or max(chain.built, default=0) + 1
        if isinstance(e, (ReferenceSolutionError, RoundSetupError)):
            with _CHAINS_LOCK:
                _BROKEN.setdefault(provider, {})[task.digest] = (chain.failed_at, e)
    finally:
        with _CHAINS_LOCK:
            if _CHAINS.get(key) is chain:
                del _CHAINS[key]
        with chain.cond:
            chain.done = True
            chain.cond.notify_all()


def _build(
    chain: _Chain, task: Task, round_index: int, provider: SandboxProvider, store: SnapshotStore
) -> None:
    """States ``round_index .. chain.last`` (what is not cached), each published as stored."""
    last = chain.last
    with store.lock(f"reference-{provider.name}-{task.digest}"):
        cached = _cached(task, round_index, provider, store)
        if cached is not None:
            chain.publish(round_index, cached)
            return
        start = 0
        base: Snapshot | None = None
        for j in range(round_index - 1, 0, -1):
            base = _cached(task, j, provider, store)
            if base is not None:
                start = j
                break
        # SR rounds round_index+1 .. last+1 each open a sandbox: their starts overlap the
        # chain (and the start of the chain's own sandbox) instead of following it one by
        # one. Announced again once the chain has its sandbox: if that took a ready spare,
        # one more is started (the announcement only ever tops up)
        sr_rounds = last - round_index + 1
        provider.expect(task, sr_rounds)
        with provider.create(task, f"{task.name}/reference", base) as sb:
            provider.expect(task, sr_rounds)
            staged = stage_solutions(sb, [task.round(j) for j in range(start + 1, last + 1)])
            snap = base
            for j in range(start + 1, last + 1):
                cached = _cached(task, j, provider, store)
                if cached is not None and j > round_index:
                    break  # someone built the rest (an earlier, shorter chain reached here)
                chain.at = j
                prepare_round(sb, task, task.round(j))
                reference_apply(
                    sb,
                    task.round(j),
                    task.config.environment.agent_timeout_sec,
                    solution_env(task),
                    staged=j in staged,
                )
                label = SnapshotLabel(
                    task=task.name,
                    task_digest=task.digest,
                    kind=SnapshotKind.reference,
                    round=j,
                    parent=snap.id if snap else None,
                )
                snap = sb.snapshot(label)
                store.set_reference(snap)
                chain.publish(j, snap)
