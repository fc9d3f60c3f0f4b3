"""Harbor multi-step and harbor_multiturn tasks, imported, run oracle 100% / nop 0%."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evoround.cli import app
from evoround.results import Mode
from evoround.scaffolds import NopScaffold, OracleScaffold
from evoround.tasks import ChangeType, load_task
from evoround.tasks.importers import (
    ImportError_,
    change_types_of,
    detect_format,
    import_tasks,
    memory_mb_of,
    rewrite_harbor_paths,
)
from tests.helpers import FIXTURES, run

HARBOR = FIXTURES / "harbor"
runner = CliRunner()


def test_detects_both_formats_and_refuses_evoround_tasks():
    assert detect_format(HARBOR / "steps-greeter") == "harbor-steps"
    assert detect_format(HARBOR / "theme_d0_w0_word_tally") == "harbor-steps"
    assert detect_format(HARBOR / "multi-step-greet") == "harbor-steps"
    assert detect_format(HARBOR / "word-tally-legacy") == "harbor-multiturn"
    assert detect_format(HARBOR / "multiturn-stack") == "harbor-multiturn"
    assert detect_format(FIXTURES / "tasks" / "counter") is None
    with pytest.raises(ImportError_, match="not a Harbor multi-step task"):
        import_tasks(FIXTURES / "tasks" / "counter", Path("/nonexistent-out"))


def test_steps_task_converts_to_a_script_verified_task(tmp_path: Path):
    [res] = import_tasks(HARBOR / "steps-greeter", tmp_path / "greeter")
    assert (res.format, res.n_rounds) == ("harbor-steps", 3)
    task = load_task(res.dest)
    assert task.name == "steps-greeter"  # Harbor: the directory name unless [task].name
    assert task.config.task.metadata["name"] == "greeter-steps"
    assert task.config.verifier.kind == "script"
    assert task.config.environment.workdir == "/app"
    assert task.config.environment.memory_mb == 1024
    assert [r.spec.change_types for r in task.rounds] == [
        [ChangeType.extension],
        [ChangeType.extension],
        [ChangeType.correction],
    ]
    assert (task.path / "workspace" / "README.md").is_file()
    dockerfile = (task.path / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM python:3.12-slim\n")  # the task's own FROM, verbatim
    test_sh = (task.rounds[0].tests_dir / "test.sh").read_text()
    assert "/logs/verifier" not in test_sh.split("end of evoround import preamble")[1]
    assert "${EVOROUND_VERIFIER_DIR}/reward.txt" in test_sh


def test_multiturn_task_replaces_the_suite_each_round(tmp_path: Path):
    [res] = import_tasks(HARBOR / "multiturn-stack", tmp_path / "stack")
    task = load_task(res.dest)
    assert task.rounds[1].spec.retires == ["check.py"]
    assert task.rounds[0].spec.change_types == [ChangeType.extension]  # change_type = "..."
    assert task.rounds[1].spec.change_types == [ChangeType.correction, ChangeType.conflict]
    assert task.rounds[1].spec.name == "round_2"
    assert task.config.verifier.nonzero_exit == "error"  # harbor_multiturn's rule


def test_imported_tasks_run_oracle_100_and_nop_0(tmp_path: Path):
    results = import_tasks(HARBOR, tmp_path / "imported")
    assert {r.format for r in results} == {"harbor-steps", "harbor-multiturn", "harbor"}
    tasks = [load_task(r.dest) for r in results]
    oracle = run(tmp_path, OracleScaffold(), tasks=tasks, name="oracle").metrics()
    assert (oracle.mt_at_k, oracle.sr, oracle.comp) == (1.0, 1.0, 1.0)
    nop = run(tmp_path, NopScaffold(), tasks=tasks, modes=(Mode.mt,), name="nop").metrics()
    assert (nop.mt_at_k, nop.comp) == (0.0, 0.0)


def test_cli_import_then_validate_multiturn(tmp_path: Path):
    out = tmp_path / "stack"
    res = runner.invoke(app, ["tasks", "import", str(HARBOR / "multiturn-stack"), str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["tasks", "validate", str(out), "--repeat", "1"])
    assert res.exit_code == 0, res.output
    again = runner.invoke(app, ["tasks", "import", str(HARBOR / "multiturn-stack"), str(out)])
    assert again.exit_code == 2 and "not empty" in again.output


def test_missing_reward_file_fails_the_round(tmp_path: Path):
    [res] = import_tasks(HARBOR / "multiturn-stack", tmp_path / "stack")
    sh = res.dest / "rounds" / "01" / "tests" / "test.sh"
    sh.write_text("#!/bin/bash\nexit 0\n")
    view = run(tmp_path, OracleScaffold(), tasks=[load_task(res.dest)], modes=(Mode.mt,))
    [r1] = view.records
    assert not r1.passed and "no reward file" in r1.verifier_problems[0]
    assert r1.status.value == "verifier_error"  # no verdict: an error, not a fail


def test_path_rewriting_and_spellings():
    out = rewrite_harbor_paths(
        'cd /app && pytest /tests/t.py; echo 1 > "/logs/verifier/reward.txt"'
    )
    body = out.split("end of evoround import preamble ---\n")[1]
    assert body == (
        "cd ${EVOROUND_WORKDIR} && pytest ${EVOROUND_TESTS_DIR}/t.py; "
        'echo 1 > "${EVOROUND_VERIFIER_DIR}/reward.txt"'
    )
    assert rewrite_harbor_paths("ls /usr/app /appdata") == "ls /usr/app /appdata"
    assert change_types_of([{"type": "Fix"}, "new-requirement", "contradiction"]) == [
        ChangeType.correction,
        ChangeType.extension,
        ChangeType.conflict,
    ]
    assert (memory_mb_of("2G"), memory_mb_of(512), memory_mb_of("512M")) == (2048, 512, 512)
