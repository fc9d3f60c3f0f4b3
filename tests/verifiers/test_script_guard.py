"""The pytest guard of script verifiers raises no false alarm on honest scripts.

Real ``test.sh`` scripts run real pytest through ``run_script`` in a real local sandbox;
each case is a shape an honest Harbor script may have. The forged runs are in
``tests/adversarial/test_script_pytest_guard.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import ActiveTest, load_task
from evoround.verifiers._script import run_script
from evoround.verifiers._script_guard import judge_channel
from tests.helpers import COUNTER

REWARD = '[ $? -eq 0 ] && echo 1 > "$EVOROUND_REWARD_FILE" || echo 0 > "$EVOROUND_REWARD_FILE"\n'
PYTEST = 'python3 -m pytest -q -p no:cacheprovider "$EVOROUND_TESTS_DIR/test_m.py"'

HONEST = """import subprocess, sys, unittest
import pytest
from mod import value


def test_value():
    assert value() == 1


@pytest.mark.xfail(raises=ZeroDivisionError, strict=True)
def test_known_bug():
    1 / 0


def test_skipped():
    pytest.skip("not here")


def test_patching_is_fine(monkeypatch):
    monkeypatch.setattr("mod.value", lambda: 2)


class TestOld(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(value(), 1)
"""

INNER_FAILING = "def test_inner():\n    assert False\n"

NESTED = f"""import subprocess, sys
import pytest


def test_in_process_run(tmp_path):
    (tmp_path / "test_inner.py").write_text({INNER_FAILING!r})
    assert pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider"]) == 1


def test_subprocess_run(tmp_path):
    (tmp_path / "test_inner.py").write_text({INNER_FAILING!r})
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path)])
    assert res.returncode == 1
"""


def _run(
    tmp_path: Path,
    script: str,
    tests: str,
    module: str = "def value():\n    return 1\n",
    workspace: dict[str, str] | None = None,
):
    tmp_path.mkdir(exist_ok=True)
    files = {"test.sh": '#!/bin/bash\ncd "$EVOROUND_WORKDIR"\n' + script, "test_m.py": tests}
    suite = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        suite.append(ActiveTest(path=name, source=tmp_path / name, origin_round=1,
                                introduced_round=1))  # fmt: skip
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(COUNTER), "verify") as sb:
        sb.write_file("mod.py", module)
        for name, text in (workspace or {}).items():
            sb.write_file(name, text)
        out = run_script(sb, suite, 1, script="test.sh", timeout=120, artifacts=tmp_path / "a")
    log = (tmp_path / "a" / "verifier.log").read_text()
    seen, nested = re.search(r"pytest runs seen by the guard: (\d+), nested: (\d+)", log).groups()
    return out, (int(seen), int(nested)), log


def test_honest_pass_with_xfail_skip_unittest_and_monkeypatch(tmp_path: Path):
    out, seen, log = _run(tmp_path, PYTEST + "\n" + REWARD, HONEST)
    assert (out.passed, out.integrity, seen) == (True, [], (1, 0)), log


def test_honest_failure_is_a_plain_failure(tmp_path: Path):
    out, seen, log = _run(tmp_path, PYTEST + "\n" + REWARD, HONEST, "def value():\n    return 0\n")
    assert (out.passed, out.integrity, seen) == (False, [], (1, 0)), log


def test_a_script_that_ignores_unrelated_failures(tmp_path: Path):
    """SWE-bench style: the log is parsed for the tests that matter; others may fail."""
    tests = HONEST + "\n\ndef test_unrelated_and_broken():\n    assert False\n"
    script = (PYTEST + " -rA > out.txt\n"
              'grep -q "PASSED.*test_value" out.txt && echo 1 > "$EVOROUND_REWARD_FILE" '
              '|| echo 0 > "$EVOROUND_REWARD_FILE"\n')  # fmt: skip
    out, seen, log = _run(tmp_path, script, tests)
    assert (out.passed, out.integrity, seen) == (True, [], (1, 0)), log


def test_pytest_runs_started_by_tests_are_not_judged(tmp_path: Path):
    """A pytest started by a running pytest (pytester, xdist workers) may fail on purpose."""
    out, seen, log = _run(tmp_path, PYTEST + "\n" + REWARD, NESTED)
    # both nested runs seen (and again for each failing twin of those tests)
    assert (out.passed, out.integrity, seen[0]) == (True, [], 1) and seen[1] >= 2, log


FORKING = """import os, sys


def value():
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # pytest catches it: the child runs on through the session
    os.waitpid(pid, 0)
    return 1
"""


def test_a_forked_child_back_in_pytest_is_no_false_alarm(tmp_path: Path):
    """Honest code whose forked child leaves with ``sys.exit`` (a bug, not tampering): the
    child's session records the failures it sees, its parent's passes and exits 0. Those
    failures were counted for the parent's run: 'exited 0 while 3 test(s) failed', an
    integrity violation."""
    out, seen, log = _run(tmp_path, PYTEST + "\n" + REWARD, HONEST, FORKING)
    assert (out.passed, out.integrity) == (True, []), log


@pytest.mark.parametrize(
    "prefix",
    ["PYTHONPATH=. ", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ", 'env -i PATH="$PATH" '],
)
def test_a_script_that_hides_the_plugin_still_runs(tmp_path: Path, prefix: str):
    """No plugin, no evidence, and never a broken run (``-p`` would have been fatal)."""
    script = (
        "python3 -m pytest --version >/dev/null 2>&1\n"
        + prefix + PYTEST + "\n" + REWARD
    )  # fmt: skip
    out, seen, log = _run(tmp_path, script, HONEST)
    assert (out.passed, out.integrity, seen) == (True, [], (0, 0)), log


def test_python_isolated_mode_still_runs(tmp_path: Path):
    script = PYTEST.replace("python3 -m", "python3 -I -m") + "\n" + REWARD
    out, seen, log = _run(tmp_path, script, HONEST.replace("from mod import value", (
        "import os, sys\nsys.path.insert(0, os.getcwd())\nfrom mod import value")))  # fmt: skip
    assert (out.passed, out.integrity, seen) == (True, [], (0, 0)), log


OWN_RUNNER = """import inspect
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    # the agent's own (honest) test runner hook: it does call the test
    names = inspect.signature(pyfuncitem.obj).parameters
    pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names})
    return True
"""


def test_the_agents_own_runner_hook_in_a_workspace_run_is_no_alarm(tmp_path: Path):
    """A script that runs the suite from inside the workspace, where the agent's conftest
    (loaded before any test, honest) implements ``pytest_pyfunc_call``."""
    script = ('mkdir -p tests && cp "$EVOROUND_TESTS_DIR/test_m.py" tests/\n'
              "python3 -m pytest -q -p no:cacheprovider tests\n" + REWARD)  # fmt: skip
    out, seen, log = _run(tmp_path, script, HONEST, workspace={"conftest.py": OWN_RUNNER})
    assert (out.passed, out.integrity, seen) == (True, [], (1, 0)), log
    bad = "def value():\n    return 0\n"
    out, seen, log = _run(
        tmp_path / "b", script, HONEST, bad, workspace={"conftest.py": OWN_RUNNER}
    )
    assert (out.passed, out.integrity, seen) == (False, [], (1, 0)), log  # it really ran


def test_the_channel_is_judged_defensively():
    n = "ab" * 16
    start = f'{n} {{"k": "start", "s": "7-1", "p": 7, "args": ["t.py"]}}\n'
    end = f'{n} {{"k": "end", "s": "7-1", "p": 7, "rc": 0}}\n{n} {{"k": "exit", "p": 7}}\n'
    assert judge_channel((start + end).encode(), n).if_passing == []
    assert judge_channel(b"", n).sessions == 0
    # foreign lines are not ours; a line with the nonce that does not parse is evidence
    rep = judge_channel((start + "junk\n" + f"{n} {{nope\n" + end).encode(), n)
    assert rep.if_passing == ["1 malformed record(s) on the pytest result channel"]
    # a record of a session that never started
    rep = judge_channel((start + end + f'{n} {{"k": "end", "s": "9-1", "p": 9}}\n').encode(), n)
    assert rep.if_passing == ["1 malformed record(s) on the pytest result channel"]
    # exit 0 although a test failed
    failed = f'{n} {{"k": "r", "s": "7-1", "p": 7, "id": "t.py::a", "w": "call", "o": "failed"}}\n'
    rep = judge_channel((start + failed + end).encode(), n)
    assert rep.if_passing and "exited 0 while 1 test(s) failed" in rep.if_passing[0]
