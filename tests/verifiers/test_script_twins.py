"""Failing twins inside a script verifier's pytest change nothing the script reads.

Real ``test.sh`` scripts run real pytest through ``run_script`` in a real local sandbox.
Each script runs the suite twice, once without the guard plugin (so without twins) and
once with it, and writes reward 1 only when both runs printed, reported (JUnit) and
returned the same: the twins must be invisible to the script. The forged runs are in
``tests/adversarial/test_script_twins.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evoround.verifiers._script_guard import judge_channel
from evoround.verifiers._twins import Twin, TwinPlan
from tests.verifiers.test_script_guard import HONEST, REWARD, _run

TESTS = (
    HONEST
    + """

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert value() * n == n


class TestPlain:
    def test_method(self):
        assert value() == 1
"""
)

# both runs: same stdout (times and the plugin list aside), same JUnit report, same status
SAME = r"""
run() {
  name=$1; shift
  python3 -m pytest -p no:cacheprovider "$@" --junitxml="$name.xml" > "$name.out" 2>&1
  echo $? >> "$name.out"
  sed -i -E 's/[0-9.]+s//g; /^plugins:/d; /generated xml file/d; s/(time|timestamp|hostname)="[^"]*"//g' \
    "$name.out" "$name.xml"
}
check() {
  PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 run bare "$@"
  run guarded "$@"
  cmp -s bare.out guarded.out && cmp -s bare.xml guarded.xml || { diff bare.out guarded.out;
    diff bare.xml guarded.xml; echo 0 > "$EVOROUND_REWARD_FILE"; exit 0; }
}
"""


def _twins_run(log: str) -> tuple[int, int]:
    m = re.search(r"\[failing twins run: (\d+) of (\d+) planned\]", log)
    assert m, log
    return int(m[1]), int(m[2])


@pytest.mark.parametrize(
    "args",
    [
        "-v -rA",
        "-q -x",
        "-q -k 'value or method'",
        "-q --collect-only",
        "-q -m 'not slow'",
        '-q "$EVOROUND_TESTS_DIR/test_m.py::test_value"',
    ],
)
def test_twins_are_invisible_to_the_script(tmp_path: Path, args: str):
    script = SAME + f'check "$EVOROUND_TESTS_DIR/test_m.py" {args}\n' + "true\n" + REWARD
    script = script.replace('"$EVOROUND_TESTS_DIR/test_m.py" -q "$EVOROUND', '-q "$EVOROUND')
    out, seen, log = _run(tmp_path, script, TESTS)
    assert (out.passed, out.integrity) == (True, []), log
    ran, planned = _twins_run(log)
    # (a parametrized twin runs once per instance; a class never collected, one node id
    # selected, runs none of its twins)
    least = 0 if "collect-only" in args else 1 if "::" in args else 3
    assert planned == 3 and ran >= least and (ran == 0) == (least == 0), log


def test_an_honest_failure_with_twins_is_a_plain_failure(tmp_path: Path):
    script = 'python3 -m pytest -q -p no:cacheprovider "$EVOROUND_TESTS_DIR/test_m.py"\n'
    out, seen, log = _run(tmp_path, script + REWARD, TESTS, "def value():\n    return 0\n")
    assert (out.passed, out.integrity) == (False, []), log
    ran, planned = _twins_run(log)
    assert planned == 3 and ran >= 3, log


def test_files_run_without_pytest_or_copied_under_another_name(tmp_path: Path):
    """The suite's files are copied unchanged: ``unittest`` sees no twin; a copy under
    another name (same text) still gets them in pytest."""
    script = (
        'cd "$EVOROUND_TESTS_DIR" && python3 -m unittest -q test_m 2>&1 | tail -3 || exit 1\n'
        'cd "$EVOROUND_WORKDIR" && mkdir -p t && cp "$EVOROUND_TESTS_DIR/test_m.py" '
        "t/test_renamed.py\n"
        "python3 -m pytest -q -p no:cacheprovider t\n" + REWARD
    )
    tests = TESTS.replace(
        "import subprocess, sys, unittest",
        "import os, subprocess, sys, unittest\nsys.path.insert(0, os.environ['EVOROUND_WORKDIR'])",
    )
    out, seen, log = _run(tmp_path, script, tests)
    assert (out.passed, out.integrity) == (True, []), log
    ran, planned = _twins_run(log)
    assert "OK" in log and planned == 3 and ran >= 3, log


N = "ab" * 16
PLAN = TwinPlan(twins=[Twin("test_m.py", "test_a", "test_a_twin"),
                       Twin("test_m.py", "test_b", "test_b_twin", cls="TestB")])  # fmt: skip


def _channel(*records: str, rc: int = 0) -> bytes:
    head = f'{N} {{"k": "start", "s": "7-1", "p": 7, "args": ["/tests/test_m.py"]}}\n'
    tail = f'{N} {{"k": "end", "s": "7-1", "p": 7, "rc": {rc}}}\n{N} {{"k": "exit", "p": 7}}\n'
    body = "".join(f'{N} {{"s": "7-1", "p": 7, {r}}}\n' for r in records)
    return (head + body + tail).encode()


def test_the_twin_records_are_judged():
    a = '"k": "r", "id": "../x/test_m.py::test_a", "w": "call", "o": "passed"'
    b = '"k": "r", "id": "../x/test_m.py::TestB::test_b", "w": "call", "o": "passed"'
    planted = '"k": "planted", "ids": ["../x/test_m.py::test_a_twin", ' \
              '"../x/test_m.py::TestB::test_b_twin"]'  # fmt: skip
    ta = '"k": "t", "id": "../x/test_m.py::test_a_twin", "o": "%s"'
    tb = '"k": "t", "id": "../x/test_m.py::TestB::test_b_twin", "o": "failed"'
    honest = judge_channel(_channel(a, b, planted, ta % "failed", tb), N, PLAN)
    assert (honest.evidence, honest.if_passing, honest.twins) == ([], [], 2)
    forged = judge_channel(_channel(a, b, planted, ta % "passed", tb), N, PLAN)
    assert len(forged.evidence) == 1 and "test_m.py::test_a" in forged.evidence[0]
    gone = judge_channel(_channel(a, b, planted, tb), N, PLAN)
    assert gone.evidence == [] and "never ran" in gone.if_passing[0]
    # its original did not run (selected out), or the run did not complete: no evidence
    assert judge_channel(_channel(b, planted, tb), N, PLAN).if_passing == []
    assert judge_channel(_channel(a, b, planted, tb, rc=2), N, PLAN).if_passing == []
    # without a plan the records are ignored
    assert judge_channel(_channel(a, b, planted, ta % "passed", tb), N).evidence == []
