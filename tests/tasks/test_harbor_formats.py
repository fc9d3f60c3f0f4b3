"""The three real Harbor-family formats, imported without loss and run as published.

Fixtures are evoround's own tasks written in each format (tests/fixtures/harbor):
``theme_d0_w0_word_tally`` (EvoCode-Bench, schema 1.2: [[steps]] + steps/round-N/ +
[metadata.requirement_chain]), ``word-tally-legacy`` (harbor_multiturn: round_N/ +
[[metadata.multiround.rounds]], both change_types and the older change_type) and
``multi-step-greet`` (upstream Harbor multi-step, schema 1.1: task-level tests/helpers.sh,
[steps.verifier.env], workdir/ + setup.sh, healthcheck, min_reward, per-step timeouts,
artifacts, [task] name/description).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evoround.cli import app
from evoround.results import Mode, RoundStatus
from evoround.scaffolds import NopScaffold, OracleScaffold, ScriptedScaffold
from evoround.scaffolds._builtin import Script
from evoround.tasks import ChangeType, load_task
from evoround.tasks.importers import ImportError_, import_tasks
from tests.helpers import FIXTURES, run

HARBOR = FIXTURES / "harbor"
CURRENT = HARBOR / "theme_d0_w0_word_tally"
LEGACY = HARBOR / "word-tally-legacy"
MULTI = HARBOR / "multi-step-greet"
TYPES = [
    [ChangeType.extension],
    [ChangeType.extension, ChangeType.correction],
    [ChangeType.conflict],
]


def _import(src: Path, tmp_path: Path):
    [res] = import_tasks(src, tmp_path / "imported" / src.name)
    return res, load_task(res.dest)


@pytest.mark.parametrize("src", [CURRENT, LEGACY], ids=["current", "legacy"])
def test_evocodebench_change_types_survive_round_by_round(src: Path, tmp_path: Path):
    res, task = _import(src, tmp_path)
    assert [r.spec.change_types for r in task.rounds] == TYPES
    assert task.config.verifier.kind == "script"
    assert task.config.verifier.min_reward == 0.999
    assert task.rounds[0].spec.title == "Word tally"  # the instruction's first heading


def test_current_layout_keeps_names_metadata_and_activity(tmp_path: Path):
    res, task = _import(CURRENT, tmp_path)
    meta = task.config.task
    assert meta.name == "theme_d0_w0_word_tally" and meta.source_name == meta.name
    assert meta.metadata["name"] == "word-tally"
    assert meta.metadata["category"] == "text-processing"
    assert meta.metadata["multi_step_reward_strategy"] == "mean"
    assert (meta.activity.value, meta.style.value) == ("spec_evolution", "contractual")
    assert [r.spec.name for r in task.rounds] == ["round-1", "round-2", "round-3"]
    assert task.config.environment.memory_mb == 1024
    notes = " | ".join(res.notes)
    assert "storage_mb" in notes and "build_timeout_sec" in notes  # named, not dropped


def test_legacy_layout_keeps_statement_and_exit_rule(tmp_path: Path):
    res, task = _import(LEGACY, tmp_path)
    assert task.config.task.metadata["statement"].startswith("# Word tally")
    assert task.config.verifier.nonzero_exit == "error"
    assert task.config.environment.network is False  # allow_internet = false
    assert [r.spec.name for r in task.rounds] == ["round_1", "round_2", "round_3"]


@pytest.mark.parametrize("src", [CURRENT, LEGACY], ids=["current", "legacy"])
def test_evocodebench_oracle_100_nop_0_and_case_counts(src: Path, tmp_path: Path):
    _, task = _import(src, tmp_path)
    oracle = run(tmp_path, OracleScaffold(), tasks=[task], name="oracle")
    m = oracle.metrics()
    assert (m.mt_at_k, m.sr, m.comp, m.perfect, m.case_score_mt) == (1.0, 1.0, 1.0, 1.0, 1.0)
    mt = sorted((r for r in oracle.records if r.mode is Mode.mt), key=lambda r: r.round)
    # CASE_SUMMARY counts are the round's cases: round 1 has 2, rounds 2 and 3 have 4.
    assert [(r.tests_passed, r.tests_total) for r in mt] == [(2, 2), (4, 4), (4, 4)]
    assert [r.reward for r in mt] == [1.0, 1.0, 1.0]
    nop = run(tmp_path, NopScaffold(), tasks=[task], modes=(Mode.mt,), name="nop")
    n = nop.metrics()
    assert (n.mt_at_k, n.comp, n.case_score_mt) == (0.0, 0.0, 0.0)
    [r1] = nop.records
    assert r1.status is RoundStatus.failed and r1.tests_total == 0  # a build failure: 0 cases


BROKEN_THEN_ORACLE = Script.model_validate(
    {
        "name": "late",
        "default": {
            "1": [{"write": {"path": "tally.py", "content": "def tally(words):\n    return {}\n"}}],
            "*": ["oracle"],
        },
    }
)


def test_on_fail_continue_runs_later_rounds_in_the_same_workspace(tmp_path: Path):
    _, task = _import(CURRENT, tmp_path)
    agent = ScriptedScaffold(BROKEN_THEN_ORACLE)
    stop = run(tmp_path, agent, tasks=[task], modes=(Mode.mt,), name="stop").metrics()
    assert (stop.mt_at_k, stop.comp, stop.perfect) == (0.0, 0.0, 0.0)
    from evoround.engine import run_job
    from evoround.results import load_job
    from evoround.snapshots import SnapshotStore

    job = tmp_path / "runs" / "continue"
    run_job([task], agent, job_dir=job, attempts=1, modes=[Mode.mt], sandbox="local",
            store=SnapshotStore(tmp_path / "store"), on_fail="continue")  # fmt: skip
    view = load_job(job)
    assert view.config.on_fail == "continue"
    recs = sorted(view.records, key=lambda r: r.round)
    assert [r.passed for r in recs] == [False, True, True]
    # the failing round's failing case is reported with its message
    assert [t.name for t in recs[0].failing_tests] == ["c101 [tally.basic]"]
    assert recs[0].failing_tests[0].origin_round == 1
    m = view.metrics()
    assert m.mt_at_k == pytest.approx(2 / 3)
    assert (m.comp, m.perfect) == (1.0, 0.0)
    assert m.case_score_mt == pytest.approx((1 / 2 + 1 + 1) / 3)


def test_harbor_multi_step_fields_are_honoured(tmp_path: Path):
    res, task = _import(MULTI, tmp_path)
    cfg = task.config
    assert cfg.task.name == "evoround-greet-multi-step"
    assert cfg.task.source_name == "evoround/greet-multi-step"
    assert cfg.task.description.startswith("A three-step task")
    assert cfg.environment.workdir == "/app"
    assert cfg.artifacts == ["greet.sh"]
    scaffold, implement, document = (r.spec for r in task.rounds)
    assert (scaffold.min_reward, implement.min_reward, document.min_reward) == (1.0, 0.5, None)
    assert (scaffold.agent_timeout_sec, implement.agent_timeout_sec) == (60.0, 120.0)
    assert implement.verifier_timeout_sec == 30.0
    assert implement.verifier_env == {
        "EXPECTED_NAME": "Harbor",
        "EXPECTED_GREETING": "Hello, Harbor!",
    }
    assert implement.healthcheck is not None and "greet.sh" in implement.healthcheck.command
    assert document.artifacts == ["README.md"]
    # task-level tests/helpers.sh merged into every step's tests; the step's own files kept
    for r in task.rounds:
        assert (r.tests_dir / "helpers.sh").is_file()
    assert (task.rounds[1].tests_dir / "expected.txt").is_file()
    assert (task.rounds[1].workdir_dir / "setup.sh").is_file()
    dockerfile = (task.path / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM ubuntu:24.04")
    assert any("allow_internet" in n for n in res.notes)


def test_harbor_multi_step_oracle_100_nop_0_with_setup_and_artifacts(tmp_path: Path):
    _, task = _import(MULTI, tmp_path)
    view = run(tmp_path, OracleScaffold(), tasks=[task], name="oracle")
    m = view.metrics()
    assert (m.mt_at_k, m.sr, m.comp) == (1.0, 1.0, 1.0)
    mt = {r.round: r for r in view.records if r.mode is Mode.mt}
    art = view.path / mt[3].artifacts / "artifacts"
    assert (art / "greet.sh").is_file() and (art / "README.md").is_file()
    assert not (view.path / mt[1].artifacts / "artifacts" / "README.md").exists()
    nop = run(tmp_path, NopScaffold(), tasks=[task], modes=(Mode.mt,), name="nop").metrics()
    assert (nop.mt_at_k, nop.comp) == (0.0, 0.0)


def test_step_verifier_env_is_required(tmp_path: Path):
    """Without [steps.verifier.env] the implement step's test.sh aborts: no reward."""
    src = tmp_path / "src"
    shutil.copytree(MULTI, src)
    toml = (src / "task.toml").read_text()
    (src / "task.toml").write_text(toml.replace("[steps.verifier.env]", "[steps.verifier.xenv]"))
    res, task = _import(src, tmp_path)
    assert any("xenv" in n for n in res.notes)  # the stray key is named
    view = run(tmp_path, OracleScaffold(), tasks=[task], modes=(Mode.mt,), name="noenv")
    r2 = next(r for r in view.records if r.round == 2)
    assert not r2.passed and r2.status is RoundStatus.verifier_error


def test_failing_setup_is_a_setup_error_before_the_agent(tmp_path: Path):
    src = tmp_path / "src"
    shutil.copytree(MULTI, src)
    (src / "steps" / "implement" / "workdir" / "setup.sh").write_text("#!/bin/bash\nexit 3\n")
    _, task = _import(src, tmp_path)
    view = run(tmp_path, OracleScaffold(), tasks=[task], modes=(Mode.mt,), name="setup")
    recs = sorted(view.records, key=lambda r: r.round)
    assert [r.status for r in recs] == [RoundStatus.passed, RoundStatus.setup_error]
    assert "setup.sh exited 3" in (recs[1].error or "")


def test_cli_import_and_validate_the_multi_step_task(tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "greet"
    res = runner.invoke(app, ["tasks", "import", str(MULTI), str(out)])
    assert res.exit_code == 0, res.output
    assert "allow_internet" in res.output  # notes are printed
    res = runner.invoke(app, ["tasks", "validate", str(out), "--repeat", "1"])
    assert res.exit_code == 0, res.output


def _broken(tmp_path: Path, src: Path, old: str, new: str) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    toml = (dest / "task.toml").read_text()
    assert old in toml
    (dest / "task.toml").write_text(toml.replace(old, new, 1))
    return dest


@pytest.mark.parametrize(
    ("src", "old", "new", "message"),
    [
        (CURRENT, 'step = "round-3"', 'step = "round-9"', "unknown steps"),
        (CURRENT, '["conflict"]', '["conflit"]', "'conflit' is not one of"),
        (CURRENT, "num_steps = 3", "num_steps = 4", "num_steps = 4"),
        (LEGACY, "num_rounds = 3", "num_rounds = 4", "not exactly round_1..round_4"),
        (LEGACY, "round = 3", "round = 4", "round = 1..3"),
        (LEGACY, 'change_type = "conflict"', 'change_type = "rewrite"', "'rewrite'"),
        (MULTI, "min_reward = 0.5", 'min_reward = "half"', "min_reward"),
    ],
)
def test_bad_sources_fail_in_one_line_naming_the_field(tmp_path, src, old, new, message):
    broken = _broken(tmp_path, src, old, new)
    with pytest.raises(ImportError_, match=message.replace(".", r"\.").replace("[", r"\[")):
        import_tasks(broken, tmp_path / "out")


def _window_job(tmp_path: Path, task, agent, window, name, modes=(Mode.mt,)):
    from evoround.engine import run_job
    from evoround.results import load_job
    from evoround.snapshots import SnapshotStore

    job = tmp_path / "runs" / name
    run_job([task], agent, job_dir=job, attempts=1, modes=list(modes), sandbox="local",
            store=SnapshotStore(tmp_path / "store"), rounds_window=window)  # fmt: skip
    return load_job(job)


def test_rounds_window_fast_forwards_earlier_rounds(tmp_path: Path):
    _, task = _import(CURRENT, tmp_path)
    # The late agent breaks round 1; a window starting at 2 never runs round 1.
    view = _window_job(tmp_path, task, ScriptedScaffold(BROKEN_THEN_ORACLE), (2, 3), "late")
    assert view.config.rounds_window == (2, 3)
    assert sorted(r.round for r in view.records) == [2, 3]
    m = view.metrics()
    assert (m.mt_at_k, m.comp, m.perfect) == (1.0, 1.0, 1.0)
    assert [t.n_rounds for t in m.tasks] == [2]
    # nop on round 2 alone starts from round 1's reference state: tally.py imports, the old
    # case passes and round 2's new cases fail (1 of 4), not a build failure (0 of 0)
    nop = _window_job(tmp_path, task, NopScaffold(), (2, 2), "nop", modes=(Mode.mt, Mode.sr))
    for r in nop.records:
        assert (r.round, r.tests_passed, r.tests_total, r.passed) == (2, 1, 4, False)
    assert nop.records[0].parent_snapshot_id is not None
    # the first-failure chart places round 2 of a window 2-2 at its end (1/1), not at 2/1
    from evoround.reports import build_report

    [ff] = build_report([nop])["figures"]["first_failure"]["series"]
    assert ff["by_round"] == {"2": 1} and ff["normalised_bins"][-1]["attempts"] == 1


def test_rounds_window_cli_errors(tmp_path: Path):
    runner = CliRunner()
    bad = runner.invoke(app, ["run", str(CURRENT), "--rounds", "3-2", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--rounds '3-2'" in bad.output
    _, task = _import(CURRENT, tmp_path)
    beyond = runner.invoke(
        app, ["run", str(task.path), "--rounds", "7-", "--out", str(tmp_path / "r")]
    )
    assert beyond.exit_code == 2 and "has 3 rounds" in beyond.output


def test_running_a_harbor_task_directly_says_to_import_it(tmp_path: Path):
    res = CliRunner().invoke(app, ["run", str(MULTI), "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "evoround tasks import" in res.output and "multi-step-greet" in res.output


def test_leading_canary_lines_are_dropped_like_harbor(tmp_path: Path):
    from evoround.tasks.importers._common import strip_canary

    text = "<!-- BENCHMARK DATA canary GUID 1234 -->\n\n# Title\n\nbody <!-- canary -->\n"
    assert strip_canary(text) == "# Title\n\nbody <!-- canary -->\n"
    assert strip_canary("# canary string abc\n# Real title\n") == "# Real title\n"
    assert strip_canary("# Title\n") == "# Title\n"


def test_min_reward_keeps_harbors_meaning_and_is_not_a_note(tmp_path: Path):
    # Harbor: min_reward only stops the trial early; the imported task says so itself.
    res, task = _import(MULTI, tmp_path)
    assert not [n for n in res.notes if ".min_reward" in n]
    assert task.config.verifier.min_reward_semantics == "early_stop"
    assert [r.spec.min_reward for r in task.rounds] == [1.0, 0.5, None]


def test_legacy_change_type_may_be_a_list_as_harbor_multiturn_allows(tmp_path: Path):
    src = _broken(tmp_path, LEGACY, 'change_type = "conflict"', 'change_type = ["conflict"]')
    [res] = import_tasks(src, tmp_path / "out")
    assert load_task(res.dest).rounds[2].spec.change_types == [ChangeType.conflict]


def test_no_activity_key_in_evocodebench_tasks_is_said(tmp_path: Path):
    res, _ = _import(CURRENT, tmp_path)
    assert any("has no activity or style field" in n for n in res.notes)


def test_activity_and_style_keys_are_read_when_an_author_adds_them(tmp_path: Path):
    src = _broken(tmp_path, CURRENT, 'category = "text-processing"',
                  'category = "text-processing"\nactivity = "Review"\nstyle = "Document-driven"')  # fmt: skip
    [res] = import_tasks(src, tmp_path / "out")
    meta = load_task(res.dest).config.task
    assert (meta.activity.value, meta.style.value) == ("review", "document_driven")
    assert not any("has no activity" in n for n in res.notes)
