"""Reference states: the chain runs on its own thread and hands each state out as stored."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import evoround.engine._reference as ref_mod
from evoround.engine._reference import reference_snapshot
from evoround.sandboxes import LocalProvider
from evoround.scaffolds import ReferenceSolutionError
from evoround.snapshots import SnapshotKind, SnapshotStore
from evoround.tasks import Task, load_task


def _task(tmp_path: Path, rounds: int = 3) -> Task:
    root = tmp_path / "refs"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "README.md").write_text("x\n")
    tables = "".join(
        f'[[rounds]]\ntitle = "Add f{i}"\nchange_types = ["extension"]\n\n'
        for i in range(1, rounds + 1)
    )
    (root / "task.toml").write_text(f'[task]\nname = "refs"\nactivity = "construction"\n\n{tables}')
    for i in range(1, rounds + 1):
        d = root / "rounds" / f"{i:02d}"
        (d / "solution").mkdir(parents=True)
        (d / "tests").mkdir()
        (d / "instruction.md").write_text(f"Add f{i}.\n")
        (d / "solution" / "solve.sh").write_text(f"echo 'f{i} = {i}' >> calc.py\n")
        (d / "tests" / f"test_r{i}.py").write_text(
            f"from calc import f{i}\n\n\ndef test():\n    assert f{i}\n"
        )
    return load_task(root)


@pytest.fixture
def env(tmp_path: Path):
    store = SnapshotStore(tmp_path / "store")
    provider = LocalProvider(store, base_dir=tmp_path / "sb")
    yield _task(tmp_path), provider, store
    provider.close()


def _gate(monkeypatch: pytest.MonkeyPatch, on_round: dict[int, object]) -> None:
    """reference_apply, but round r first does ``on_round[r]``: wait for an Event, or raise."""
    real = ref_mod.reference_apply

    def apply(sb, round_, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        action = on_round.get(round_.index)
        if isinstance(action, threading.Event):
            assert action.wait(30), "the test never opened the gate"
        elif isinstance(action, BaseException):
            raise action
        return real(sb, round_, *a, **kw)

    monkeypatch.setattr(ref_mod, "reference_apply", apply)


def test_a_state_is_handed_out_before_the_rest_of_the_chain_is_built(env, monkeypatch):
    task, provider, store = env
    gate = threading.Event()
    _gate(monkeypatch, {3: gate})
    got: list[object] = []
    caller = threading.Thread(
        target=lambda: got.append(reference_snapshot(task, 1, provider, store, upto=3))
    )
    caller.start()
    caller.join(20)
    try:
        assert got, "state 1 waited for state 3 (the whole chain) to be built"
        (first,) = got
        assert first is not None and first.round == 1 and first.kind is SnapshotKind.reference
        assert store.reference(provider.name, task.digest, 3) is None  # still being built
    finally:
        gate.set()
    third = reference_snapshot(task, 3, provider, store)
    assert third is not None and third.round == 3
    assert [s.round for s in store.lineage(third.id)] == [3, 2, 1]


def test_a_failing_solution_fails_the_states_it_leaves_unbuilt_only(env, monkeypatch):
    task, provider, store = env
    _gate(monkeypatch, {2: ReferenceSolutionError("round 2 is broken")})
    first = reference_snapshot(task, 1, provider, store, upto=3)
    assert first is not None and first.round == 1
    for r in (2, 3):
        with pytest.raises(ReferenceSolutionError, match="round 2 is broken"):
            reference_snapshot(task, r, provider, store)
    assert store.reference(provider.name, task.digest, 1) is not None


def test_concurrent_callers_share_one_chain(env, monkeypatch):
    task, provider, store = env
    opened: list[str] = []
    real_create = provider.create

    def create(t, name, snapshot=None):  # noqa: ANN001, ANN202
        opened.append(name)
        return real_create(t, name, snapshot)

    monkeypatch.setattr(provider, "create", create)
    out: dict[int, object] = {}
    threads = [
        threading.Thread(
            target=lambda r=r: out.__setitem__(
                r, reference_snapshot(task, r, provider, store, upto=3)
            )
        )
        for r in (3, 1, 2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {r: s.round for r, s in out.items()} == {1: 1, 2: 2, 3: 3}  # type: ignore[attr-defined]
    assert opened.count(f"{task.name}/reference") == 1
    refs = [s for s in store.all() if s.kind is SnapshotKind.reference]
    assert sorted(s.round for s in refs) == [1, 2, 3]


def test_the_chain_copies_its_solutions_in_once_and_they_run_as_when_copied_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """One transfer for the whole chain (on Docker each copy is an archive round trip); each
    solve.sh still finds its own folder as SOLUTION_DIR, its data files beside it."""
    task = _task(tmp_path, rounds=4)
    for i in range(1, 5):
        sol = task.round(i).solution_dir
        (sol / "value.txt").write_text(f"v{i}\n")
        (sol / "solve.sh").write_text(
            f'echo "f{i} = {i}  # $(cat "$SOLUTION_DIR/value.txt")" >> calc.py\n'
        )
    store = SnapshotStore(tmp_path / "store")
    provider = LocalProvider(store, base_dir=tmp_path / "sb")
    copies: list[str] = []
    real_create = provider.create

    def create(*a, **kw):  # noqa: ANN002, ANN003, ANN202 - a spy on the real sandbox
        sb = real_create(*a, **kw)
        real_copy = sb.copy_in

        def copy_in(src: str, dest: str) -> None:
            copies.append(dest)
            real_copy(src, dest)

        sb.copy_in = copy_in  # type: ignore[method-assign]
        return sb

    monkeypatch.setattr(provider, "create", create)
    try:
        last = reference_snapshot(task, 4, provider, store, upto=4)
        assert last is not None
        assert len(copies) == 1, copies
        out = tmp_path / "out"
        store.materialize(last.locator, out)
        assert (out / "calc.py").read_text().splitlines() == [
            f"f{i} = {i}  # v{i}" for i in range(1, 5)
        ]
        assert not (out / "value.txt").exists()  # solutions stay out of the workspace
    finally:
        provider.close()
