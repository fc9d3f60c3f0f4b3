"""Grader integrity: what the agent leaves in its workspace cannot make a round pass."""

import shutil
from pathlib import Path

import pytest
import yaml

from evoround.results import Mode
from evoround.sandboxes import LocalProvider
from evoround.scaffolds import OracleScaffold, ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.helpers import COUNTER, run

FAKE_JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite name="pytest" tests="2" failures="0" errors="0">
<testcase classname="test_words" name="test_simple" file="test_words.py"/>
<testcase classname="test_words" name="test_empty" file="test_words.py"/>
</testsuite></testsuites>"""

FORGING_CONFTEST = """import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"

def pytest_collection_modifyitems(items):
    items.clear()
"""

PASSING_TEST = "def test_simple():\n    pass\n\ndef test_empty():\n    pass\n"


def forger(tmp_path: Path) -> ScriptedScaffold:
    writes = {
        "junit.xml": FAKE_JUNIT,
        "report.xml": FAKE_JUNIT,
        "test_words.py": PASSING_TEST,
        "tests/test_words.py": PASSING_TEST,
        "conftest.py": FORGING_CONFTEST,
        "tests/conftest.py": FORGING_CONFTEST,
        "pytest.ini": "[pytest]\naddopts = --collect-only\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--collect-only'\n",
        "pytest.py": "import sys\nsys.exit(0)\n",
        "sitecustomize.py": "import os\nos._exit(0)\n",
    }
    steps = [{"write": {"path": p, "content": c}} for p, c in writes.items()]
    path = tmp_path / "forger.yaml"
    path.write_text(yaml.safe_dump({"name": "forger", "default": {"*": steps}}))
    return ScriptedScaffold(load_script(path))


def test_forged_reports_and_tests_in_the_workspace_do_not_pass(tmp_path: Path):
    view = run(tmp_path, forger(tmp_path))
    assert all(not r.passed for r in view.records)
    r1 = next(r for r in view.records if r.mode is Mode.mt)
    assert r1.verifier_exit_code != 0
    assert any(t.file == "test_words.py" for t in r1.failing_tests)


def test_the_agent_workspace_never_contains_the_tests(tmp_path: Path):
    view = run(tmp_path, OracleScaffold(), modes=(Mode.mt,))
    store = SnapshotStore(tmp_path / "store")
    for r in view.records:
        paths = {e["path"] for e in store.manifest(store.get(r.snapshot_id).locator)}
        assert not any(p.startswith("test_") or "/test_" in p for p in paths), paths


def _verify(tmp_path: Path, round_index: int, extra_args=None, files=None):
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        for path, content in (files or {}).items():
            sb.write_file(path, content)
        return run_pytest(
            sb, active_tests(task, round_index), round_index, timeout=60, extra_args=extra_args
        )


def test_report_must_cover_every_active_module(tmp_path: Path):
    counter = (COUNTER / "rounds/03/solution/files/counter.py").read_text()
    ok = _verify(tmp_path, 3, files={"counter.py": counter})
    assert ok.passed and ok.n_passed == 5
    deselected = _verify(tmp_path, 3, extra_args=["-k", "chars"], files={"counter.py": counter})
    assert not deselected.passed
    assert any("missing from the report" in p for p in deselected.problems)


def test_skipped_tests_do_not_pass(tmp_path: Path):
    counter = "import pytest\npytest.skip('no', allow_module_level=True)\n"
    res = _verify(tmp_path, 1, files={"counter.py": counter})
    assert not res.passed


def test_verifier_timeout(tmp_path: Path):
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("counter.py", "import time\ntime.sleep(60)\n")
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=2)
    assert res.timed_out and not res.passed


SUBTESTS = """

class Many(unittest.TestCase):
    def test_many(self):
        for text, n in (("a", 1), ("a b", 2)):
            with self.subTest(text=text):
                self.assertEqual(count_words(text), n)
"""


def test_unittest_subtests_are_graded_without_false_alarms(tmp_path: Path):
    """pytest >= 9 reports each ``subTest`` as well as the test: an honest suite that uses them
    is no integrity violation, and a failing subtest fails its test (the test's own report
    says passed)."""
    task_dir = tmp_path / "task"
    shutil.copytree(Path(__file__).parents[1] / "fixtures/tasks/counterunit", task_dir)
    with (task_dir / "rounds/01/tests/test_counter.py").open("a") as f:
        f.write(SUBTESTS)
    task = load_task(task_dir)
    solution = (task_dir / "rounds/01/solution/files/counter.py").read_text()
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    outcomes = []
    for code in (solution, solution.replace("len(text.split())", "min(len(text.split()), 1)")):
        with provider.create(task, "t/verify") as sb:
            sb.write_file("counter.py", code)
            outcomes.append(run_pytest(sb, active_tests(task, 1), 1, timeout=60))
    honest, wrong = outcomes
    assert honest.passed and not honest.integrity, (honest.integrity, honest.problems)
    assert not wrong.passed and not wrong.integrity, wrong.integrity
    failing = {t.name for t in wrong.tests if t.outcome.value != "passed"}
    assert "test_many" in failing and "test_several" in failing


FORKING = {
    # a forked child that leaves with sys.exit: pytest catches it and the child runs on
    "sys_exit": "import os, sys\n\n\ndef count_words(text):\n    pid = os.fork()\n"
    "    if pid == 0:\n        sys.exit(0)\n    os.waitpid(pid, 0)\n    return len(text.split())\n",
    # a forked child that returns into the test
    "return": "import os\n\n\ndef count_words(text):\n    if os.fork() == 0:\n"
    "        return -1\n    return len(text.split())\n",
}


@pytest.mark.parametrize("code", FORKING.values(), ids=list(FORKING))
def test_a_forked_child_back_in_pytest_is_no_false_alarm(tmp_path: Path, code: str):
    """Honest code that forks and lets the child return into pytest (a bug, not tampering)
    made the child repeat the runner's records: 'reported twice', 'records after the end
    record', an integrity violation. The child now writes nothing and leaves at once; the
    runner's own records decide."""
    res = _verify(tmp_path, 1, files={"counter.py": code})
    assert not res.integrity, res.integrity
    assert res.passed, (res.problems, [t for t in res.tests if t.outcome.value != "passed"])


STATEFUL_TEST = """import pytest
import counter
from counter import count_words


@pytest.mark.parametrize("text", counter.samples())
def test_counts(text):
    assert count_words(text) == len(text.split())
"""
STATEFUL = """import itertools

_calls = itertools.count()


def samples():
    # fewer samples on every call (an honest quirk, not tampering)
    return ["a", "b c", "d e f"][: max(1, 3 - next(_calls))]


def count_words(text):
    return len(text.split())
"""


def test_parameters_the_code_computes_anew_for_a_twin_are_no_false_alarm(tmp_path: Path):
    """A twin re-runs its original's decorators: parameters computed by the code under test
    came out fewer the second time, and the honest run was 'the failing twin ... never
    ran: tests were removed'. Twins of computed parametrizations must only exist."""
    task_dir = tmp_path / "task"
    shutil.copytree(COUNTER, task_dir)
    (task_dir / "rounds/01/tests/test_words.py").write_text(STATEFUL_TEST)
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    for attempt in range(3):  # the one test always gets a twin; its values are random
        with provider.create(task, f"t/v{attempt}") as sb:
            sb.write_file("counter.py", STATEFUL)
            res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
        assert not res.integrity, res.integrity
        assert res.passed, res.problems


PLUGIN_CONFTEST = 'pytest_plugins = ["counter_fixtures"]\n'
PLUGIN_TEST = """from counter import count_words


def test_simple(sample):
    assert count_words(sample) == 3


def test_empty():
    assert count_words("") == 0
"""
PLUGIN_MODULE = """import pytest


@pytest.fixture
def sample():
    return "a b c"
"""


def test_a_plugin_module_the_suite_names_is_no_false_alarm(tmp_path: Path):
    """A project that ships its own pytest plugin: the suite's conftest names it in
    ``pytest_plugins`` and it lives in the workspace. It was reported as 'a plugin from the
    code under test was registered'; a plugin the suite asks for is the suite's choice."""
    task_dir = tmp_path / "task"
    shutil.copytree(COUNTER, task_dir)
    tests = task_dir / "rounds/01/tests"
    (tests / "conftest.py").write_text(PLUGIN_CONFTEST)
    (tests / "test_words.py").write_text(PLUGIN_TEST)
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/plugin") as sb:
        sb.write_file("counter.py", "def count_words(text):\n    return len(text.split())\n")
        sb.write_file("counter_fixtures.py", PLUGIN_MODULE)
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert not res.integrity, res.integrity
    assert res.passed, res.problems
