"""Targeted forgeries (see :mod:`tests.adversarial.targeted` and docs/threat-model.md).

Those evoround does not detect yet are strict xfails on hardened local, so a defence that
catches one fails here until it is moved to :data:`CAUGHT`; the caught ones must end as
``integrity_violation`` on hardened local and on Docker. On Docker every caught one is graded
by the verifier in a container (its own, older Python and pytest) and one runs as a whole job
(the verdict-to-status mapping and the verification clone are the same code for each).
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
from tests.adversarial.conditional import scaffold
from tests.adversarial.leaks import job_containers
from tests.adversarial.targeted import CAUGHT, TARGETED
from tests.helpers import COUNTER, run

needs_bwrap = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)


def _first_round(tmp_path: Path, name: str, sandbox: str, job: str = "job"):
    agent = scaffold(tmp_path, name, "counter.py", TARGETED[name])
    view = run(
        tmp_path, agent, tasks=[load_task(COUNTER)], modes=(Mode.mt,), sandbox=sandbox, name=job
    )
    (r1,) = view.records
    return r1


@needs_bwrap
@pytest.mark.xfail(strict=True, reason="a targeted forgery: passes undetected (known gap)")
@pytest.mark.parametrize("name", sorted(set(TARGETED) - CAUGHT))
def test_targeted_forgery_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    r1 = _first_round(tmp_path, name, "local")
    assert not r1.passed, "a forged pass went unnoticed"
    assert r1.status is RoundStatus.integrity_violation


@needs_bwrap
@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_caught_targeted_forgery_on_hardened_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    r1 = _first_round(tmp_path, name, "local")
    assert not r1.passed
    assert r1.status is RoundStatus.integrity_violation, (r1.status, r1.verifier_problems)
    assert r1.integrity_evidence


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(CAUGHT)[:1])
def test_caught_targeted_forgery_in_docker(tmp_path: Path, docker_client, name: str) -> None:
    job = f"adv-{uuid.uuid4().hex[:8]}"
    r1 = _first_round(tmp_path, name, "docker", job)
    assert not r1.passed
    assert r1.status is RoundStatus.integrity_violation, (r1.status, r1.verifier_problems)
    assert job_containers(docker_client, job) == []


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_caught_targeted_forgery_graded_in_docker(docker_provider, name: str) -> None:
    task = load_task(COUNTER)
    with docker_provider.create(task, f"t/{name}") as sb:
        sb.write_file("counter.py", TARGETED[name])
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert not res.passed
    assert res.integrity, (res.problems, res.tests)
