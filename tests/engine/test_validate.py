"""`tasks validate` on small tasks: each acceptance failure is named with its round."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evoround import engine
from evoround.cli import app
from evoround.engine import Status, TaskValidation, check_leaks, validate_task
from evoround.reports import compute_compliance
from evoround.results import CheckOutcome, Mode, load_job
from evoround.tasks import library_path, load_task

runner = CliRunner()


def failures(report: TaskValidation) -> list[tuple[str, int | None, str]]:
    return [(f.check, f.round, f.message) for f in report.findings if f.status is Status.fail]


# That a valid task validates with exit 0 and every check in every round of its JSON is
# test_bundled_library_validates's (the counter fixture validated here too ran the same
# checks on a fourth task).


def test_round_whose_new_tests_already_pass_fails_with_exit_1(make_task: Callable[..., Path]):
    task = make_task(name="stale")
    # Round 2's "new" test checks round 1's behaviour: it passes on the round-1 reference.
    (task / "rounds/02/tests/test_r2.py").write_text(
        "from calc import f1\n\n\ndef test_again():\n    assert f1() == 1\n"
    )
    res = runner.invoke(app, ["tasks", "validate", str(task), "--repeat", "1", "--json"])
    assert res.exit_code == 1
    found = json.loads(res.stdout)["tasks"][0]["findings"]
    bad = [f for f in found if f["status"] == "fail"]
    assert [(f["check"], f["round"]) for f in bad] == [("discriminative", 2)]
    assert "test_r2.py" in bad[0]["message"] and "round 1" in bad[0]["message"]


def test_hidden_test_inside_workspace_is_a_leak(make_task: Callable[..., Path]):
    hidden = "from calc import f1\n\n\ndef test_f1():\n    assert f1() == 1\n"
    task = make_task(name="leaky", workspace={"tests/test_r1.py": hidden, "README.md": "x\n"})
    report = TaskValidation(task, "leaky")
    check_leaks(report, load_task(task))
    [(check, rnd, msg)] = failures(report)
    assert (check, rnd) == ("leaks", 1) and "workspace/tests/test_r1.py" in msg


def test_solution_dir_and_shipped_answer_are_leaks(make_task: Callable[..., Path]):
    answer = "".join(
        f"def helper_number_{n}(value):\n    return value * {n} + value // {n + 1}\n\n"
        for n in range(1, 7)
    )
    task = make_task(
        name="answered", workspace={"solution/solve.sh": "echo hi\n", "notes/draft.py": answer}
    )
    (task / "rounds/01/solution/solve.sh").write_text(
        f"cat >> calc.py <<'EOF'\ndef f1():\n    return 1\n\n{answer}EOF\n"
    )
    report = TaskValidation(task, "answered")
    check_leaks(report, load_task(task))
    msgs = [m for _, _, m in failures(report)]
    assert any("workspace/solution/solve.sh looks like a reference solution" in m for m in msgs)
    assert any("distinctive lines" in m for m in msgs), msgs


def test_flaky_test_is_named(
    make_task: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "none")  # the test keeps state on the host
    counter = tmp_path / "flip"
    task = make_task(name="flaky", rounds=1)
    # one counter per test name: the verifier's failing twin of test_flip (a second, renamed
    # run of its body) must not share the count, or every run would advance it twice
    (task / "rounds/01/tests/test_flaky.py").write_text(
        "import pathlib\n\n"
        f"D = pathlib.Path({str(counter)!r})\n\n\n"
        "def test_flip(request):\n"
        "    D.mkdir(exist_ok=True)\n"
        "    P = D / request.node.name\n"
        "    n = int(P.read_text()) if P.exists() else 0\n"
        "    P.write_text(str(n + 1))\n"
        "    assert n % 2 == 0\n"
    )
    report = validate_task(task, repeat=2, work_dir=tmp_path / "work")
    det = [m for c, r, m in failures(report) if c == "determinism"]
    assert det and "test_flaky.py::test_flip" in det[0]
    assert not report.ok


def test_oracle_that_fails_is_reported_per_round(make_task: Callable[..., Path], tmp_path: Path):
    task = make_task(name="wrong")
    (task / "rounds/02/solution/solve.sh").write_text(
        "printf 'def f2():\\n    return 22\\n' >> calc.py\n"
    )
    report = validate_task(task, repeat=1, work_dir=tmp_path / "work")
    bad = {(c, r) for c, r, _ in failures(report)}
    assert ("oracle_mt", 2) in bad and ("oracle_sr", 2) in bad
    assert ("oracle_mt", 1) not in bad


@pytest.mark.parametrize("broken", ["solution/solve.sh", "workdir/setup.sh"])
def test_a_reference_or_set_up_that_fails_to_run_is_a_finding_not_a_crash(
    make_task: Callable[..., Path], tmp_path: Path, broken: str
):
    """Round 2's solve.sh (or its workdir/setup.sh) exits 1: the oracle's rounds 2.. are
    task errors, each finding names the script; validate reports, never crashes (exit 3)."""
    task = make_task(name="norun", rounds=3)
    script = task / "rounds/02" / broken
    script.parent.mkdir(exist_ok=True)
    script.write_text("echo broken >&2\nexit 1\n")
    report = validate_task(task, repeat=1, work_dir=tmp_path / "work")
    bad = failures(report)
    assert {(c, r) for c, r, _ in bad} >= {("oracle_mt", 2), ("oracle_sr", 2), ("oracle_sr", 3)}
    assert all(broken in m for _, r, m in bad if r != 1), bad
    assert all(r != 1 for _, r, _ in bad) and not report.ok


def test_schema_error_names_file_and_field(make_task: Callable[..., Path], tmp_path: Path):
    task = make_task(name="typo")
    toml = (task / "task.toml").read_text().replace("construction", "constructoin")
    (task / "task.toml").write_text(toml)
    report = validate_task(task, work_dir=tmp_path / "work")
    [(check, _, msg)] = failures(report)
    assert check == "schema" and "task.toml: task.activity" in msg


def test_bundled_library_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The product's demo data, validated once in CI. It also carries what oracle jobs over
    the library proved in tests/tasks/test_library.py and test_bundled_checklists.py (the
    validation runs the same oracle job, kept here in ``tmp_path`` to be read): the oracle
    passes every round persistent (MT) and fast-forwarded (SR) and fails no rule check; the
    nop agent fails round 1; each round's new tests fail on the previous round's reference
    (what the nop agent meets under SR)."""
    real = engine.validate_task
    monkeypatch.setattr(
        engine, "validate_task", lambda p, **kw: real(p, work_dir=tmp_path / Path(p).name, **kw)
    )
    res = runner.invoke(app, ["tasks", "validate", str(library_path()), "--repeat", "1", "--json"])
    data = json.loads(res.stdout)
    bad = [(t["name"], f) for t in data["tasks"] for f in t["findings"] if f["status"] == "fail"]
    assert res.exit_code == 0 and data["ok"], bad
    assert {t["name"] for t in data["tasks"]} == {"ledger", "pricing", "configmigrate"}
    for t in data["tasks"]:
        cells = {(f["check"], f["round"]): f["status"] for f in t["findings"]}
        for i in range(1, t["rounds"] + 1):
            for check in ("oracle_mt", "oracle_sr", "discriminative", "determinism"):
                assert cells.get((check, i)) == "ok", (t["name"], check, i, cells.get((check, i)))
        assert cells.get(("nop", 1)) == "ok", t["name"]
        assert cells.get(("schema", None)) == cells.get(("leaks", None)) == "ok", t["name"]
        retiring = {r.index for r in load_task(t["path"]).rounds if r.spec.retires}
        assert {i for c, i in cells if c == "retired"} == retiring, t["name"]
    assert any(f["check"] == "retired" for t in data["tasks"] for f in t["findings"])
    oracle = [
        r
        for t in data["tasks"]
        for r in load_job(tmp_path / t["name"] / f"{t['name']}-oracle").records
    ]
    assert {(r.task, r.mode) for r in oracle} == {
        (t["name"], m) for t in data["tasks"] for m in Mode
    }
    assert all(r.passed for r in oracle)
    fails = [(r.task, r.mode.value, r.round, c.id, c.detail) for r in oracle for c in r.checks
             if c.result is CheckOutcome.failed]  # fmt: skip
    assert fails == []
    comp = compute_compliance([r for r in oracle if r.mode is Mode.mt])
    assert comp.csr == 1.0 and comp.totals.passed > 20


def test_round_whose_new_tests_collect_nothing_fails(make_task: Callable[..., Path]):
    """A test file pytest never collects: the oracle "passes" an unverified round."""
    task = make_task(name="uncollected")
    tests = task / "rounds/02/tests"
    (new,) = [p for p in tests.iterdir() if p.name.startswith("test_")]
    new.rename(tests / "check_r2.py")  # not test_*.py: pytest ignores it
    report = validate_task(task, repeat=1)
    assert not report.ok
    bad = failures(report)
    # the loader refuses it already (run and lint too), before any check runs
    assert [(c, r) for c, r, _ in bad] == [("schema", None)], bad
    assert "rounds/02/tests" in bad[0][2] and "check_r2.py" in bad[0][2]
    assert "pytest collects none" in bad[0][2]


def test_test_module_without_test_cases_fails(make_task: Callable[..., Path]):
    task = make_task(name="empty-module")
    tests = task / "rounds/02/tests"
    (new,) = [p for p in tests.iterdir() if p.name.startswith("test_")]
    new.write_text("from calc import f1\n\n\ndef check_f1():\n    assert f1() == 1\n")
    report = validate_task(task, repeat=1)
    bad = [(c, r, m) for c, r, m in failures(report) if "collect" in m]
    assert [(c, r) for c, r, _ in bad] == [("discriminative", 2)], failures(report)
    assert new.name in bad[0][2]


SELF_DESELECTING = """def pytest_collection_modifyitems(config, items):
    gone = [i for i in items if "slow" in i.name]
    if gone:
        items[:] = [i for i in items if i not in gone]
        config.hook.pytest_deselected(items=gone)
"""


def test_a_suite_deselecting_in_its_conftest_is_named_and_pytest_args_fix_it(
    make_task: Callable[..., Path],
):
    """The verifier cannot tell a suite's own deselection from the code under test's, so it
    is evidence; validation names it for the author, and selecting in ``pytest_args`` (which
    the verifier sees) is the way out."""
    task = make_task(name="self-deselect", rounds=1)
    tests = task / "rounds/01/tests"
    (tests / "conftest.py").write_text(SELF_DESELECTING)
    with (tests / "test_r1.py").open("a") as f:
        f.write("\n\ndef test_slow_thing():\n    assert f1() == 1\n")
    report = validate_task(task, repeat=1)
    oracle = [m for c, r, m in failures(report) if c == "oracle_mt"]
    assert oracle and "integrity_violation" in oracle[0] and "deselected" in oracle[0], oracle

    (tests / "conftest.py").unlink()
    with (task / "task.toml").open("a") as f:
        f.write('\n[verifier]\npytest_args = ["-k", "not slow"]\n')
    report = validate_task(task, repeat=1)
    assert report.ok, failures(report)
