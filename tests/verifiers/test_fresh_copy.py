"""The runner's fresh copy: the harness's twins and controls run again, first, in a copy of
the test process forked before any test ran (see evoround/verifiers/_guard.py)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import _guard, run_pytest
from tests.helpers import COUNTER

HONEST = "def count_words(text):\n    return len(text.split())\n"
# honest answers, but the copy forked from this process dies (or hangs) as soon as it calls
PID_AWARE = """import os, time
_PID = os.getpid()


def count_words(text):
    if os.getpid() != _PID:
        {action}
    return len(text.split())
"""
ORDER_DEPENDENT_TEST = """from counter import count_words, remember, recall


def test_first():
    remember(count_words("a b"))
    assert recall() == [2]


def test_second():
    remember(count_words("c"))
    assert recall() == [2, 1]
"""
ORDER_DEPENDENT = (
    HONEST
    + """
_seen = []


def remember(n):
    _seen.append(n)


def recall():
    return list(_seen)
"""
)


def _verify(tmp_path: Path, code: str, test: str | None = None):
    task_dir = tmp_path / "task"
    shutil.copytree(COUNTER, task_dir)
    if test is not None:
        (task_dir / "rounds/01/tests/test_words.py").write_text(test)
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("counter.py", code)
        return run_pytest(sb, active_tests(task, 1), 1, timeout=120)


def test_a_copy_that_dies_is_evidence(tmp_path: Path) -> None:
    res = _verify(tmp_path, PID_AWARE.format(action="os._exit(0)"))
    assert not res.passed
    assert any("fresh copy" in e and "ended early" in e for e in res.integrity), res.integrity


def test_a_copy_that_hangs_is_stopped_and_proves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_guard, "HARNESS_FLOOR", 1.0)
    start = time.monotonic()
    res = _verify(tmp_path, PID_AWARE.format(action="time.sleep(3600)"))
    assert time.monotonic() - start < 60
    assert not res.integrity, res.integrity
    assert res.passed, res.problems


@pytest.mark.parametrize("attempt", range(3))
def test_tests_that_depend_on_earlier_tests_are_no_false_alarm(tmp_path: Path, attempt: int):
    """In the copy a twin runs without the real tests before it: state they build is
    missing there, and the twin fails for that reason instead (twins always fail)."""
    res = _verify(tmp_path, ORDER_DEPENDENT, ORDER_DEPENDENT_TEST)
    assert not res.integrity, res.integrity
    assert res.passed, res.problems


def test_a_malformed_value_on_the_channel_is_an_anomaly_not_a_crash() -> None:
    tag = "@@evoround-n0nce@@ "
    lines = [
        tag + '{"k": "end", "rc": "zero"}',
        tag + '{"k": "fresh", "status": [1]}',
        tag + '{"k": "deselected", "ids": 5}',
    ]
    ch = _guard.read_channel("\n".join(lines), "n0nce")
    assert ch.end_rc is None and ch.fresh_status is None
    assert ch.anomalies.count("a malformed record on the result channel") == 3


# honest answers; at the first call the code kills (and reaps) every child of its process
KILLS_CHILDREN = """import os, signal
_done = []


def count_words(text):
    if not _done:
        _done.append(1)
        me = str(os.getpid())
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError, ValueError):
                continue
            if ppid == me:
                os.kill(int(pid), signal.SIGKILL)
                try:
                    os.waitpid(int(pid), 0)
                except OSError:
                    pass
    return len(text.split())
"""


def test_a_copy_killed_and_reaped_by_the_code_under_test_is_evidence(tmp_path: Path) -> None:
    """The runner's write to the copy and its wait raised (BrokenPipeError,
    ChildProcessError): pytest ended with an internal error instead of a verdict."""
    res = _verify(tmp_path, KILLS_CHILDREN)
    assert not res.passed
    assert any("fresh copy" in e for e in res.integrity), (res.integrity, res.problems)


def test_a_hanging_copy_never_holds_the_run_past_its_timeout(tmp_path: Path) -> None:
    """With the default grace (30 s) the copy would outlive a 15 s verifier timeout and the
    honest round would end as a timeout; it is stopped 3 s before instead."""
    task_dir = tmp_path / "task"
    shutil.copytree(COUNTER, task_dir)
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("counter.py", PID_AWARE.format(action="time.sleep(3600)"))
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=15)
    assert not res.timed_out
    assert not res.integrity, res.integrity
    assert res.passed, res.problems


SLOW_TEST = """import time

from counter import count_words


def test_slow():
    time.sleep(10)
    assert count_words("a b") == 2
"""


@pytest.mark.slow
def test_a_twin_of_a_slow_test_is_not_run_in_full(tmp_path: Path) -> None:
    """A suite of one 10 s test: its twin ran twice in full (the real run's end, then the
    fresh copy), over 30 s for a 10 s suite (36 s measured under load). The harness's tests now
    share an allowance (a share of the real loop, at least a floor) in each: the twin fails
    when it is spent, as it would have failed anyway, and the round is graded as before (about
    13 s of tests; 20 s measured under a load of 20 on 2 cores)."""
    start = time.monotonic()
    res = _verify(tmp_path, "def count_words(text):\n    return len(text.split())\n", SLOW_TEST)
    took = time.monotonic() - start
    assert (res.passed, res.integrity) == (True, []), (res.problems, res.integrity)
    assert took < 3 * 10, took  # three full runs of the test cannot fit
