"""Conditional forgeries (they spare the plain control file) end as ``integrity_violation``,
on hardened local (bubblewrap) and on Docker; skips from the code under test are failures.

Every agent here implements nothing; see ``conditional.py`` for the attacks.

Each case runs as a whole job on hardened local. On Docker each case is graded where the
defence lives, by ``run_pytest`` in a container (the container's own Python and pytest,
older than the host's, so every case is needed there too), and two cases, one per expected
status, run as whole jobs: the engine's mapping from verdict to status and the clone it
verifies in are the same code for every case.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from evoround.results import Mode, RoundStatus
from evoround.sandboxes.local._isolation import bwrap_available
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.adversarial.conditional import (
    ALWAYS_EQUAL_SUITES,
    CONDITIONAL,
    NEUTRALISE,
    SKIPPING,
    UNITCALC,
    scaffold,
)
from tests.adversarial.leaks import job_containers
from tests.helpers import COUNTER, run

needs_bwrap = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true",
    reason="bubblewrap does not work here",
)
# (task, module the tests import, content, what the round must end as)
CASES = {
    **{
        n: (COUNTER, "counter.py", c, RoundStatus.integrity_violation)
        for n, c in CONDITIONAL.items()
    },
    "assert_helpers": (UNITCALC, "calc.py", NEUTRALISE, RoundStatus.integrity_violation),
    **{n: (COUNTER, "counter.py", c, RoundStatus.failed) for n, c in SKIPPING.items()},
    # results that compare equal to anything, against suites of test classes (pytest-style,
    # unittest-only) and a suite with every expectation on the left of its assertion
    **{
        f"{n}.{suite.name}": (suite, "counter.py", CONDITIONAL[n], RoundStatus.integrity_violation)
        for n in ("always_equal", "always_equal_typed")
        for suite in ALWAYS_EQUAL_SUITES
    },
}


def _round(tmp_path: Path, name: str, sandbox: str, job: str = "job"):
    task, path, content, want = CASES[name]
    agent = scaffold(tmp_path, name, path, content)
    view = run(
        tmp_path, agent, tasks=[load_task(task)], modes=(Mode.mt,), sandbox=sandbox, name=job
    )
    (r1,) = view.records
    assert not r1.passed, r1
    assert r1.status is want, (r1.status, r1.integrity_evidence, r1.failing_tests)
    if want is RoundStatus.integrity_violation:
        assert r1.integrity_evidence
    return r1


@needs_bwrap
@pytest.mark.parametrize("name", sorted(CASES))
def test_conditional_forgery_on_hardened_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    _round(tmp_path, name, "local")


# one case per expected status: a conditional forgery and a skip from the code under test
DOCKER_JOBS = ["cond_plugin", "module_skip"]


@pytest.mark.docker
@pytest.mark.parametrize("name", DOCKER_JOBS)
def test_conditional_forgery_in_docker(tmp_path: Path, docker_client, name: str) -> None:
    job = f"adv-{uuid.uuid4().hex[:8]}"
    _round(tmp_path, name, "docker", job)
    assert job_containers(docker_client, job) == []


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(CASES))
def test_conditional_forgery_graded_in_docker(docker_provider, name: str) -> None:
    """The verdict ``_round`` checks, from the verifier itself: integrity evidence for a
    forgery, an honest failure (no evidence, no timeout, no error) for a skip."""
    task_dir, path, content, want = CASES[name]
    task = load_task(task_dir)
    with docker_provider.create(task, f"t/{name}") as sb:
        sb.write_file(path, content)
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert not res.passed, res
    if want is RoundStatus.integrity_violation:
        assert res.integrity, (res.problems, res.tests)
    else:
        assert (res.integrity, res.timed_out, res.error) == ([], False, None), res
