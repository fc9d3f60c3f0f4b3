"""In-process forgery: the code under test tampers with pytest from inside the test process.

Every attack implements nothing; none may pass. Attacks that claim success (exit code 0,
an all-passed report, runner internals patched to say "passed") must be *detected* and
recorded as ``integrity_violation``, with their evidence kept.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from evoround.results import Mode, RoundStatus
from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.adversarial.attacks import ATTACKS, STUB, attack_scaffold
from tests.adversarial.leaks import job_containers
from tests.helpers import COUNTER, run

FORGING = sorted(ATTACKS)


def _verify_local(tmp_path: Path, counter: str, round_index: int = 1, args=None):
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("counter.py", counter)
        return run_pytest(
            sb, active_tests(task, round_index), round_index, timeout=60, extra_args=args
        )


@pytest.mark.parametrize("attack", FORGING)
def test_attack_is_detected_locally(tmp_path: Path, attack: str):
    res = _verify_local(tmp_path, ATTACKS[attack])
    assert not res.passed, res
    assert_defeated(attack, res)


def assert_defeated(attack, res) -> None:
    """Either the forgery is flagged, or it had no effect: the honest verdict stands."""
    if res.integrity:
        return
    honest = {(t.name, t.outcome.value) for t in res.tests}
    assert honest == {("test_simple", "failed"), ("test_empty", "failed")}, (
        f"{attack}: neither flagged nor honest: {res.tests} {res.problems}"
    )


def test_an_honest_failure_is_not_a_violation(tmp_path: Path):
    res = _verify_local(tmp_path, STUB)
    assert not res.passed
    assert not res.integrity
    assert {t.name for t in res.tests} == {"test_simple", "test_empty"}


def test_an_honest_pass_is_not_a_violation(tmp_path: Path):
    counter = (COUNTER / "rounds/03/solution/files/counter.py").read_text()
    res = _verify_local(tmp_path, counter, 3)
    assert res.passed, res.problems
    assert not res.integrity
    assert res.n_passed == 5 and len(res.tests) == 5  # the control tests are not counted


@pytest.mark.parametrize(
    "attack", ["report_and_exit_now", "runtest_noop", "report_factory", "sessionfinish_exit"]
)
def test_job_records_integrity_violation(tmp_path: Path, attack: str):
    view = run(tmp_path, attack_scaffold(tmp_path, attack), modes=(Mode.mt,))
    (r1,) = view.records
    assert not r1.passed
    assert r1.status is RoundStatus.integrity_violation
    assert r1.integrity_evidence


# Whole Docker jobs for two attacks (a patched report factory, an exit from sessionfinish):
# the engine's verdict-to-status mapping and the verification clone are the same code for
# every attack, so the rest are graded in a container by the verifier itself below.
DOCKER_JOBS = ["report_factory", "sessionfinish_exit"]


@pytest.mark.docker
@pytest.mark.parametrize("attack", DOCKER_JOBS)
def test_attack_is_detected_in_docker(tmp_path: Path, docker_client, attack: str):
    job = f"adv-{uuid.uuid4().hex[:8]}"
    scaffold = attack_scaffold(tmp_path, attack)
    view = run(tmp_path, scaffold, modes=(Mode.mt,), sandbox="docker", name=job)
    (r1,) = view.records
    assert not r1.passed
    if r1.status is not RoundStatus.integrity_violation:  # no effect: the honest verdict
        assert r1.status is RoundStatus.failed, r1
        assert {(t.name, t.outcome.value) for t in r1.failing_tests} == {
            ("test_simple", "failed"),
            ("test_empty", "failed"),
        }, r1
    else:
        assert r1.integrity_evidence
    assert job_containers(docker_client, job) == []


@pytest.mark.docker
@pytest.mark.parametrize("attack", FORGING)
def test_attack_is_detected_by_the_verifier_in_docker(docker_provider, attack: str):
    """Every attack against the container's own Python and pytest (older than the host's):
    flagged, or without effect."""
    task = load_task(COUNTER)
    with docker_provider.create(task, f"t/{attack}") as sb:
        sb.write_file("counter.py", ATTACKS[attack])
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert not res.passed, res
    assert_defeated(attack, res)


TRICKY_SUITE = """import pytest
from calc import f1


class TestGroup:
    def test_method(self):
        assert f1() == 1

    @pytest.mark.parametrize("x", [1, 2], ids=["a::b", "c[d]"])
    def test_param(self, x):
        assert f1() == 1


@pytest.mark.xfail(reason="documented", strict=False)
def test_xfail_passes():
    assert f1() == 1


def test_fixture(tmp_path):
    assert f1() == 1
"""


def test_odd_node_ids_cause_no_false_alarm(tmp_path: Path, make_task):
    """Classes, parameter ids with ``::`` and brackets, xfail: an honest pass stays a pass."""
    root = make_task(rounds=1, dockerfile=None)
    (root / "rounds/01/tests/test_r1.py").write_text(TRICKY_SUITE)
    task = load_task(root)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("calc.py", "def f1():\n    return 1\n")
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert res.passed and not res.integrity, (res.problems, res.integrity, res.tests)
    assert {t.name for t in res.tests} >= {"test_method", "test_param[a::b]", "test_param[c[d]]"}
