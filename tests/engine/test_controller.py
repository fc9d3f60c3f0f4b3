"""End-to-end round controller on the local sandbox with real pytest verification."""

import json
from pathlib import Path

import yaml

from evoround.results import CHANGES_FILE, PATCH_FILE, Mode, RoundChanges, RoundStatus
from evoround.scaffolds import NopScaffold, OracleScaffold, ScriptedScaffold, load_script
from evoround.snapshots import SnapshotKind, SnapshotStore
from evoround.tasks import FailureClass
from tests.helpers import run


def scripted(tmp_path: Path, body: dict) -> ScriptedScaffold:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(body))
    return ScriptedScaffold(load_script(path))


def test_oracle_scores_100(tmp_path: Path):
    view = run(tmp_path, OracleScaffold())
    m = view.metrics()
    assert (m.mt_at_k, m.sr, m.comp, m.mean_reward, m.case_score_mt) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert len(view.records) == 8  # 4 MT rounds + 4 SR rounds
    for r in view.records:
        assert r.timings.verify_sec > 0 and r.snapshot_id
        art = view.path / r.artifacts
        assert (art / "junit.xml").is_file() and (art / "verifier.log").is_file()
        assert (art / "trajectory.jsonl").is_file()


def test_nop_scores_0(tmp_path: Path):
    view = run(tmp_path, NopScaffold())
    m = view.metrics()
    assert (m.mt_at_k, m.sr, m.comp, m.mean_reward) == (0.0, 0.0, 0.0, 0.0)
    mt = [r for r in view.records if r.mode is Mode.mt]
    assert [r.round for r in mt] == [1]  # fail-stop
    assert mt[0].failure_classes == {FailureClass.missed_requirement: 1}  # collection error
    assert mt[0].failing_tests[0].outcome.value == "error"


REGRESSOR = {
    "name": "regressor",
    "default": {
        "*": ["oracle"],
        "1": ["oracle", {"run": "mkdir -p .notes && touch .notes/r1"}],
        "3": [
            "oracle",
            {
                "run": "if [ -f .notes/r1 ]; then sed -i 's/len(text.split())/len(text.split()) + 1/' counter.py; fi"
            },
        ],
    },
}


def test_regression_in_round_3_stops_the_attempt_and_passes_under_sr(tmp_path: Path):
    view = run(tmp_path, scripted(tmp_path, REGRESSOR))
    mt = sorted((r for r in view.records if r.mode is Mode.mt), key=lambda r: r.round)
    assert [(r.round, r.passed) for r in mt] == [(1, True), (2, True), (3, False)]
    r3 = mt[2]
    assert r3.status is RoundStatus.failed
    assert r3.primary_failure_class is FailureClass.regression
    assert set(r3.failure_classes) == {FailureClass.regression}
    assert {t.file for t in r3.failing_tests} == {"test_words.py"}
    sr = {r.round: r.passed for r in view.records if r.mode is Mode.sr}
    assert sr == {1: True, 2: True, 3: True, 4: True}
    m = view.metrics()
    assert m.mt_at_k == 0.5  # rounds 3 and 4 score 0
    assert m.sr == 1.0 and m.gap == 0.5
    assert m.state_penalty == 1.0
    # each round keeps its workspace change for the viewer: round 3's is the sed edit
    assert r3.artifacts
    changes = RoundChanges.model_validate_json(
        (view.path / r3.artifacts / CHANGES_FILE).read_text()
    )
    assert "counter.py" in {c.path for c in changes.modified}
    assert changes.parent == r3.parent_snapshot_id
    patch = (view.path / r3.artifacts / PATCH_FILE).read_text()
    assert any(ln.startswith("+") and "len(text.split()) + 1" in ln for ln in patch.splitlines())


def test_ignored_correction_is_stale_behaviour(tmp_path: Path):
    agent = scripted(tmp_path, {"name": "stale", "default": {"*": ["oracle"], "4": ["nothing"]}})
    view = run(tmp_path, agent, modes=(Mode.mt,))
    r4 = [r for r in view.records if r.round == 4][0]
    assert not r4.passed
    # counter.py from round 3 still counts "-" as a word (test_words.py replaced in round 4) and
    # counts blank lines (test_lines_nonblank.py is new in round 4).
    assert r4.failure_classes == {
        FailureClass.stale_behaviour: 1,
        FailureClass.missed_requirement: 1,
    }


def test_one_sandbox_lives_across_rounds(tmp_path: Path):
    # Round 2 appends to a file created in round 1: only possible if the workspace persisted.
    agent = scripted(
        tmp_path,
        {
            "name": "p",
            "default": {
                "*": ["oracle"],
                "1": ["oracle", {"run": "echo one > notes.txt"}],
                "2": ["oracle", {"run": "test -f notes.txt && echo two >> notes.txt"}],
            },
        },
    )
    view = run(tmp_path, agent, modes=(Mode.mt,))
    store = SnapshotStore(tmp_path / "store")
    r2 = [r for r in view.records if r.round == 2][0]
    traj = [
        json.loads(x)
        for x in (view.path / r2.artifacts / "trajectory.jsonl").read_text().splitlines()
    ]
    assert traj[0]["role"] == "user" and "count_lines" in traj[0]["content"]
    assert traj[-1]["exit_code"] == 0
    snap = store.get(r2.snapshot_id)
    entries = {e["path"]: e for e in store.manifest(snap.locator)}
    assert "notes.txt" in entries
    # lineage: round 2 <- round 1 <- initial
    chain = store.lineage(r2.snapshot_id)
    assert [s.round for s in chain] == [2, 1, 0]
    assert [s.kind for s in chain] == [SnapshotKind.agent, SnapshotKind.agent, SnapshotKind.initial]


def test_reference_snapshots_are_built_once_and_reused(tmp_path: Path):
    run(tmp_path, OracleScaffold(), modes=(Mode.sr,), name="first")
    store = SnapshotStore(tmp_path / "store")
    refs = [s for s in store.all() if s.kind is SnapshotKind.reference]
    assert sorted(s.round for s in refs) == [1, 2, 3]
    run(tmp_path, NopScaffold(), modes=(Mode.sr,), name="second")
    refs_after = [
        s for s in SnapshotStore(tmp_path / "store").all() if s.kind is SnapshotKind.reference
    ]
    assert len(refs_after) == 3


def test_agent_timeout_is_its_own_status(tmp_path: Path):
    from evoround.tasks import load_task
    from tests.helpers import copy_counter

    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace("agent_timeout_sec = 60", "agent_timeout_sec = 1"))
    agent = scripted(tmp_path, {"name": "slow", "default": {"*": [{"run": "sleep 30"}]}})
    view = run(tmp_path, agent, tasks=[load_task(root)], modes=(Mode.mt,))
    (r1,) = view.records
    assert r1.status is RoundStatus.agent_timeout and not r1.passed
    assert r1.timings.agent_sec < 10


def test_rerun_of_finished_job_runs_nothing(tmp_path: Path):
    first = run(tmp_path, OracleScaffold(), modes=(Mode.mt,))
    again = run(tmp_path, OracleScaffold(), modes=(Mode.mt,))
    assert len(again.records) == len(first.records) == 4
