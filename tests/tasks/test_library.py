"""The bundled library: the demo and the fixtures. Every task must be sound."""

from pathlib import Path

import pytest

from evoround.engine import run_job
from evoround.results import JobView, Mode, load_job
from evoround.scaffolds import scaffold_from_name
from evoround.snapshots import SnapshotStore
from evoround.tasks import Activity, ChangeType, FailureClass, Task, library_path, load_tasks

TASKS = load_tasks([library_path()])


def test_library_covers_the_required_shapes():
    assert len(TASKS) >= 3
    assert {t.config.task.activity for t in TASKS} >= {
        Activity.construction,
        Activity.spec_evolution,
        Activity.migration,
    }
    for t in TASKS:
        assert 5 <= t.n_rounds <= 8, t.name
        assert (t.path / "environment" / "Dockerfile").is_file()
    kinds = {c for t in TASKS for r in t.rounds for c in r.spec.change_types}
    assert {ChangeType.correction, ChangeType.conflict} <= kinds
    assert any(r.spec.retires for t in TASKS for r in t.rounds)


# The oracle passing every round in both modes and the nop agent failing round 1 (and every
# SR round: each round's new tests fail on the previous round's reference) are the
# validation of the library: ``test_bundled_library_validates`` in
# tests/engine/test_validate.py asserts them cell by cell. Oracle and nop jobs over the
# library here (133 s and 70 s in CI) proved them a second time; the engine's metrics of
# an all-passing and an all-failing job are tests/engine/test_controller.py's.


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("library")


def _run(
    home: Path,
    agent: str,
    tasks: list[Task],
    modes: tuple[Mode, ...],
    window: tuple[int, int] | None = None,
) -> JobView:
    job_dir = home / "runs" / agent.replace(":", "-")
    run_job(tasks, scaffold_from_name(agent), job_dir=job_dir, attempts=1, modes=list(modes),
            store=SnapshotStore(home / "store"), rounds_window=window)  # fmt: skip
    return load_job(job_dir)


def test_regressor_fails_round_3_by_regression_only_in_mt(home: Path):
    """Rounds 1-3 only: from round 4 on the regressor's script is the oracle's (``"*":
    [oracle]``, no note is read), and the oracle's later rounds are the validation's."""
    view = _run(home, "scripted:regressor", TASKS, (Mode.mt, Mode.sr), window=(1, 3))
    for t in TASKS:
        mt = sorted(
            (r for r in view.records if r.task == t.name and r.mode is Mode.mt),
            key=lambda r: r.round,
        )
        assert [r.passed for r in mt] == [True, True, False], t.name
        assert set(mt[2].failure_classes) == {FailureClass.regression}, t.name
        sr = [r for r in view.records if r.task == t.name and r.mode is Mode.sr]
        assert len(sr) == 3 and all(r.passed for r in sr), t.name
    m = view.metrics()
    assert m.gap is not None and m.gap > 0 and m.state_penalty == 1.0


def _corrected(t: Task) -> bool:
    return any(ChangeType.correction in r.spec.change_types for r in t.rounds)


def test_stale_agent_fails_corrections_as_stale_behaviour(home: Path):
    """On the tasks with a correction round: on the others the stale agent is the oracle
    (its script has no entry for them), whose MT run is the validation's."""
    tasks = [t for t in TASKS if _corrected(t)]
    assert tasks, "no library task has a correction round"
    view = _run(home, "scripted:stale", tasks, (Mode.mt,))
    for t in tasks:
        corrections = [r.index for r in t.rounds if ChangeType.correction in r.spec.change_types]
        mt = [r for r in view.records if r.task == t.name]
        assert [r.round for r in mt] == list(range(1, corrections[0] + 1)), t.name
        failed = [r for r in mt if not r.passed]
        assert [r.round for r in failed] == [corrections[0]], t.name
        assert set(failed[0].failure_classes) == {FailureClass.stale_behaviour}, t.name
