"""Reference solutions and the reference states they produce (the SR starting points).

The reference state after round i is the initial workspace plus solutions 1..i.
It is built incrementally from the deepest cached state and cached by
(backend, task digest, round), so SR costs O(N) applications per task, once. The chain is
built in one sandbox per task: asked for one state, the builder goes on to ``upto`` (the
last state the task's SR rounds start from) while it has the sandbox, and each state is an
incremental snapshot of the one before (on host-folder and local workspaces only changed
files are hashed and stored).
"""

from __future__ import annotations

from evoround.sandboxes import SandboxProvider
from evoround.scaffolds import prepare_round, reference_apply, solution_env
from evoround.snapshots import Snapshot, SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task


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
    instead of opening a sandbox of its own).
    """
    if round_index == 0:
        return None
    last = max(round_index, upto or 0)
    with store.lock(f"reference-{provider.name}-{task.digest}"):
        cached = _cached(task, round_index, provider, store)
        if cached is not None:
            return cached
        start = 0
        base: Snapshot | None = None
        for j in range(round_index - 1, 0, -1):
            base = _cached(task, j, provider, store)
            if base is not None:
                start = j
                break
        wanted: Snapshot | None = None
        # SR rounds round_index+1 .. last+1 each open a sandbox once this returns: their
        # starts overlap the chain (and the start of the chain's own sandbox) instead of
        # following it one by one. Announced again once the chain has its sandbox: if that
        # took a ready spare, one more is started (the announcement only ever tops up)
        sr_rounds = last - round_index + 1
        provider.expect(task, sr_rounds)
        with provider.create(task, f"{task.name}/reference", base) as sb:
            provider.expect(task, sr_rounds)
            snap = base
            for j in range(start + 1, last + 1):
                cached = _cached(task, j, provider, store)
                if cached is not None and j > round_index:
                    break  # someone built the rest (an earlier, shorter chain reached here)
                prepare_round(sb, task, task.round(j))
                reference_apply(
                    sb, task.round(j), task.config.environment.agent_timeout_sec,
                    solution_env(task),
                )  # fmt: skip
                label = SnapshotLabel(
                    task=task.name,
                    task_digest=task.digest,
                    kind=SnapshotKind.reference,
                    round=j,
                    parent=snap.id if snap else None,
                )
                snap = sb.snapshot(label)
                store.set_reference(snap)
                if j == round_index:
                    wanted = snap
        assert wanted is not None
        return wanted
