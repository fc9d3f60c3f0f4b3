"""Import residuals of issue 30: Harbor paths in every shell context and in Python helpers,
single-step Harbor tasks, schema_version and memory read as Harbor reads them, and
``min_reward`` with Harbor's meaning (an early stop) for imported tasks.

The references are run with the oracle on the local sandbox, where the workspace of each
verification is a clone at another path than the agent's: a path baked in at solve time,
or a literal /app, fails there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evoround.engine import run_job
from evoround.results import Mode, RoundStatus, load_job
from evoround.scaffolds import NopScaffold, OracleScaffold
from evoround.snapshots import SnapshotStore
from evoround.tasks import ChangeType, load_task
from evoround.tasks.importers import ImportError_, import_tasks
from evoround.tasks.importers._paths import rewrite_python, rewrite_shell
from tests.helpers import FIXTURES, run

KV = FIXTURES / "harbor" / "kv-single"


def test_single_step_harbor_task_imports_as_one_round_and_its_reference_passes(tmp_path):
    [res] = import_tasks(KV, tmp_path / "kv")
    assert res.format == "harbor" and res.n_rounds == 1
    task = load_task(res.dest)
    assert task.rounds[0].spec.change_types == [ChangeType.extension]
    assert task.config.environment.memory_mb == 1024  # memory = "1G", as Harbor reads it
    assert task.config.verifier.min_reward_semantics == "early_stop"
    # the quoted heredoc's Python reads the workspace from the environment when it runs
    solve = (res.dest / "rounds" / "01" / "solution" / "solve.sh").read_text()
    assert "<<'PY'" in solve and "environ.get('EVOROUND_WORKDIR', '/app')" in solve
    # the Python helper writes the reward where the verifier reads it
    check = (res.dest / "rounds" / "01" / "tests" / "check.py").read_text()
    assert "environ.get('EVOROUND_VERIFIER_DIR', '/logs/verifier')" in check
    assert not any("works in a Docker sandbox" in n for n in res.notes)
    oracle = run(tmp_path, OracleScaffold(), tasks=[task], name="oracle")
    assert [(r.status, r.tests_passed, r.tests_total) for r in oracle.records] == [
        (RoundStatus.passed, 1, 1)
    ] * 2
    nop = run(tmp_path, NopScaffold(), tasks=[task], modes=(Mode.mt,), name="nop")
    [r1] = nop.records
    assert r1.status is RoundStatus.failed and r1.reward == 0.0  # a fail, not verifier_error


def _bash(script: str, tmp_path: Path, **env: str) -> str:
    res = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True,
        env={"PATH": "/usr/bin:/bin", **env},
    )  # fmt: skip
    return res.stdout


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("echo /app/a", "W/a"),
        ("echo '/app/a'", "W/a"),
        ('echo "/app/a"', "W/a"),
        ("echo '/app/a b' \"/tests/t\"", "W/a b T/t"),
        ("cat <<'EOF'\n/app/a $HOME `x` \\n\nEOF", "W/a $HOME `x` \\n"),
        ('cat <<"EOF"\n/app/a $HOME\nEOF', "W/a $HOME"),
        ("cat <<-'EOF'\n\t/app/a $HOME\n\tEOF", "W/a $HOME"),
        ("cat <<EOF\n/app/a\nEOF", "W/a"),
        ("echo $(( 1 << 2 )) /app", "4 W"),
        ("cat <<< '/app/q'", "W/q"),
        ("echo $'x' /app # /app", "x W"),
        ("echo /usr/app /appdata", "/usr/app /appdata"),
    ],
    ids=lambda v: v if len(v) < 20 else v[:20],
)  # fmt: skip
def test_shell_paths_expand_in_every_quoting_context(tmp_path, script, expected):
    out = _bash(rewrite_shell(script), tmp_path, EVOROUND_WORKDIR="W", EVOROUND_TESTS_DIR="T")
    assert out.rstrip("\n") == expected


def test_a_written_script_or_module_finds_the_path_when_it_runs(tmp_path):
    # A quoted heredoc writing a shell script or a Python module: the written file reads
    # the variable itself (the verification clone is elsewhere than the solve-time one).
    sh = rewrite_shell("cat > g.sh <<'SH'\n#!/bin/bash\necho \"$(cat /app/c)\"\nSH\n")
    assert "${EVOROUND_WORKDIR:-/app}/c" in sh and "<<'SH'" in sh
    (tmp_path / "c").write_text("hi\n")
    _bash(sh, tmp_path, EVOROUND_WORKDIR="/nowhere")
    assert _bash("bash g.sh", tmp_path, EVOROUND_WORKDIR=str(tmp_path)) == "hi\n"
    py = rewrite_python('P = "/app/k.json"\nQ = f"{P}:/tests" \'/logs\'\nB = b"/app"\n')
    assert py is not None and 'b"/app"' in py  # bytes stay (they cannot hold a str)
    scope: dict[str, object] = {}
    import os

    os.environ["EVOROUND_WORKDIR"] = "/w"
    try:
        exec(py, scope)  # noqa: S102 - the rewritten literal, evaluated
    finally:
        del os.environ["EVOROUND_WORKDIR"]
    assert scope["P"] == "/w/k.json" and scope["Q"] == "/w/k.json:/tests/logs"
    assert rewrite_python("x = (") is None  # not Python: left as is (with a note)


def _harbor(tmp_path: Path, toml: str) -> Path:
    src = tmp_path / "src"
    (src / "tests").mkdir(parents=True)
    (src / "solution").mkdir()
    (src / "task.toml").write_text(toml)
    (src / "instruction.md").write_text("# T\n\nDo it.\n")
    (src / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (src / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    return src


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('schema_version = "9.0"\n', "schema_version = '9.0': not a Harbor task schema"),
        ('version = "two"\n', "version = 'two': not a Harbor task schema"),
        ('[environment]\nmemory = "lots"\n', "memory = 'lots': not a size Harbor reads"),
        ('[environment]\nmemory = "2G"\nmemory_mb = 1024\n', "disagree"),
        ("[environment]\nmemory_mb = 1.5\n", "memory_mb = 1.5: a positive whole number"),
    ],
)
def test_unreadable_schema_or_memory_is_refused_in_one_line(tmp_path, toml, message):
    with pytest.raises(ImportError_) as e:
        import_tasks(_harbor(tmp_path, toml), tmp_path / "out")
    assert message in str(e.value) and "task.toml" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_newer_schema_and_non_string_memory_are_notes(tmp_path):
    [res] = import_tasks(
        _harbor(tmp_path, 'schema_version = "1.9"\n[environment]\nmemory = 2048\n'),
        tmp_path / "out",
    )
    notes = " | ".join(res.notes)
    assert "schema_version = '1.9': newer than Harbor's schema 1.4" in notes
    assert "memory = 2048: not a string such as '2G', which Harbor ignores" in notes
    assert load_task(res.dest).config.task.metadata["harbor_schema_version"] == "1.9"


TWO_STEPS = """schema_version = "1.2"
[[steps]]
name = "one"
min_reward = 0.5
[[steps]]
name = "two"
"""


def _two_steps(tmp_path: Path, reward: str) -> Path:
    """A multi-step task whose step 1 scores ``reward`` and step 2 scores 1."""
    src = tmp_path / "two"
    for step, r in (("one", reward), ("two", "1")):
        d = src / "steps" / step
        (d / "tests").mkdir(parents=True)
        (d / "solution").mkdir()
        (d / "instruction.md").write_text(f"# {step}\n")
        (d / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
        (d / "tests" / "test.sh").write_text(f"#!/bin/bash\necho {r} > /logs/verifier/reward.txt\n")
    (src / "task.toml").write_text(TWO_STEPS)
    return src


def _continue(tmp_path: Path, task_dir: Path, name: str):
    job = tmp_path / "runs" / name
    run_job([load_task(task_dir)], OracleScaffold(), job_dir=job, attempts=1, modes=[Mode.mt],
            sandbox="local", store=SnapshotStore(tmp_path / "store"), on_fail="continue")  # fmt: skip
    return sorted(load_job(job).records, key=lambda r: r.round)


def test_min_reward_is_harbors_early_stop_for_imported_tasks(tmp_path):
    # 0.8 with min_reward 0.5: the benchmark fails the step (reward >= 0.999) and Harbor
    # goes on (0.8 is not below 0.5); evoround's imported task does both.
    [res] = import_tasks(_two_steps(tmp_path, "0.8"), tmp_path / "imported")
    r1, r2 = _continue(tmp_path, res.dest, "early")
    assert (r1.passed, r1.pass_threshold, r1.min_reward_semantics) == (False, 0.999, "early_stop")
    assert r1.early_stop is False and r2.passed
    # Selected as a pass threshold (evoround's own meaning): the same reward passes.
    toml = res.dest / "task.toml"
    toml.write_text(toml.read_text().replace('"early_stop"', '"threshold"'))
    r1, r2 = _continue(tmp_path, res.dest, "threshold")
    assert (r1.passed, r1.pass_threshold, r1.min_reward_semantics) == (True, 0.5, "threshold")
    # Below the early stop the attempt ends there, as in Harbor.
    [res] = import_tasks(_two_steps(tmp_path / "low", "0.2"), tmp_path / "low-imported")
    [r1] = _continue(tmp_path, res.dest, "stopped")
    assert not r1.passed and r1.early_stop is True
