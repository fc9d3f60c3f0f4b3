"""Selective forgeries on a wide suite (see :mod:`tests.adversarial.selective`): the one
test the agent's code fails is forged by its name. Graded by the verifier on hardened local
(bubblewrap), where the defence lives (the runner's identity watch), and in a Docker
container: each ends with integrity evidence and no pass; the same code without the forgery is a plain failure, and
the reference solution passes the wide suite clean (no false alarm from sixteen tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evoround.results import VerifierOutcome
from evoround.sandboxes import LocalProvider
from evoround.sandboxes.local._isolation import bwrap_available
from evoround.scaffolds import reference_apply
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest, verify_suite
from tests.adversarial.selective import GAPPY, SELECTIVE, WIDE

needs_bwrap = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)


def _grade(tmp_path: Path, counter: str | None) -> VerifierOutcome:
    """Round 1 of the wide task graded in a fresh sandbox holding ``counter.py`` (None:
    the reference solution)."""
    task = load_task(WIDE)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "sel") as sb:
        if counter is None:
            reference_apply(sb, task.round(1))
        else:
            sb.write_file("counter.py", counter)
        return verify_suite(task, sb, active_tests(task, 1), 1, timeout=60)


@pytest.fixture(autouse=True)
def _hardened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")


@needs_bwrap
@pytest.mark.parametrize("name", sorted(SELECTIVE))
def test_a_test_forged_by_its_name_is_evidence(tmp_path: Path, name: str) -> None:
    out = _grade(tmp_path, SELECTIVE[name])
    assert not out.passed, "a selective forgery passed"
    assert out.integrity, f"no evidence: {out.problems}"


@needs_bwrap
def test_the_same_code_without_the_forgery_is_a_plain_failure(tmp_path: Path) -> None:
    out = _grade(tmp_path, GAPPY)
    assert not out.passed and not out.integrity, out.integrity
    failed = [r.name for r in out.tests if r.outcome.value == "failed"]
    assert failed == ["test_lines_old_mac"], failed


@needs_bwrap
def test_the_reference_passes_the_wide_suite_clean(tmp_path: Path) -> None:
    out = _grade(tmp_path, None)
    assert out.passed and not out.integrity, (out.problems, out.integrity)


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(SELECTIVE))
def test_a_test_forged_by_its_name_is_evidence_in_docker(docker_provider, name: str) -> None:  # noqa: ANN001
    """The same runner in a container, under the image's own (older) Python and pytest."""
    task = load_task(WIDE)
    with docker_provider.create(task, f"sel/{name}") as sb:
        sb.write_file("counter.py", SELECTIVE[name])
        out = run_pytest(sb, active_tests(task, 1), 1, timeout=60)
    assert not out.passed, "a selective forgery passed"
    assert out.integrity, (out.problems, out.tests)
