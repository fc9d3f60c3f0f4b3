"""Infra failures are retried (and never scored as the agent's), persistent ones are
reported as ``infra`` and re-run by --retry-failed; failure classes stay apart from the score."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evoround.engine import RunOptions, is_model_api_error, run_job
from evoround.results import Mode, RoundStatus, read_results
from evoround.sandboxes import LocalProvider, SandboxUnavailable
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_tasks
from tests.engine.test_resume_kill import canonical, make_suite


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_INFRA_BACKOFF_MAX", "0.05")


def _job(root: Path, suite: tuple[Path, Path, Path], name: str, **kw: object) -> Path:
    tasks_dir, script, _ = suite
    job = root / "runs" / name
    run_job(
        load_tasks([tasks_dir]), ScriptedScaffold(load_script(script)), job_dir=job, attempts=1,
        modes=[Mode.mt, Mode.sr], store=SnapshotStore(root / "store"), **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return job


Suite = tuple[Path, Path, Path]
Clean = tuple[Suite, dict[tuple, tuple]]  # the suite, and its clean job's canonical results


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Clean:
    """The suite and its uninterrupted job's results, run once for the module: every test
    compares its own (injected, retried, docker) job against the same clean run."""
    root = tmp_path_factory.mktemp("retry")
    suite = make_suite(root / "suite", nap=0)
    return suite, canonical(_job(root, suite, "clean"))


def _flaky_create(monkeypatch: pytest.MonkeyPatch, fail_calls: set[int]) -> list[int]:
    """Make LocalProvider.create raise a daemon-like error on the given call numbers."""
    calls: list[int] = []
    lock = threading.Lock()
    real = LocalProvider.create

    def create(self, task, name, snapshot=None):  # noqa: ANN001, ANN202
        with lock:
            calls.append(len(calls) + 1)
            n = len(calls)
        if n in fail_calls:
            raise SandboxUnavailable(f"injected: container died (call {n})")
        return real(self, task, name, snapshot)

    monkeypatch.setattr(LocalProvider, "create", create)
    return calls


def test_infra_failures_are_retried_and_do_not_change_the_score(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    clean: Clean,
) -> None:
    suite, clean_results = clean
    calls = _flaky_create(monkeypatch, {2, 3, 7, 12})  # set-up and verification clones
    flaky = _job(tmp_path, suite, "flaky", options=RunOptions(concurrency=2))
    assert len(calls) > 12
    assert canonical(flaky) == clean_results
    assert all(r.status is not RoundStatus.infra for r in read_results(flaky / "results.jsonl")[0])


def test_persistent_infra_is_reported_as_infra_then_retry_failed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    clean: Clean,
) -> None:
    suite, clean_results = clean
    # calls 3..6 all fail: with 2 retries one unit exhausts them (round 2 of the counter MT
    # attempt: its verification clone), which must be recorded as infra, not as failed
    _flaky_create(monkeypatch, {3, 4, 5})
    job = _job(tmp_path, suite, "job", options=RunOptions(retries=2))
    got = canonical(job)
    infra = {k: v for k, v in got.items() if v[1] == "infra"}
    assert infra, got
    for key, (passed, *_rest) in infra.items():
        assert passed is False and clean_results[key][0] is True  # not the agent's
    monkeypatch.undo()
    # --retry-failed: only the infra attempts run again; the others are left as they are
    _job(tmp_path, suite, "job", options=RunOptions(retry_failed=True))
    assert canonical(job) == clean_results
    kept_aside, _ = read_results(job / "results.infra.jsonl")
    assert {r.key for r in kept_aside} == set(infra)


def test_model_api_errors_are_their_own_class() -> None:
    litellm = pytest.importorskip("litellm")
    e = litellm.RateLimitError("slow down", llm_provider="openai", model="gpt")
    assert is_model_api_error(e)
    assert not is_model_api_error(ValueError("agent bug"))
    assert RoundStatus.model_api != RoundStatus.agent_error
    assert RoundStatus.judge_error.value == "judge_error"


@pytest.mark.docker
def test_docker_daemon_error_on_container_start_is_retried(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client,
    clean: Clean,
) -> None:
    import docker

    suite, clean_results = clean
    real = docker.api.client.APIClient.start
    injected: list[str] = []
    lock = threading.Lock()

    def start(self, container, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        with lock:
            fail = len(injected) < 2
            if fail:
                injected.append(str(container))
        if fail:
            raise docker.errors.APIError("500 Server Error: injected daemon error on start")
        return real(self, container, *a, **kw)

    monkeypatch.setattr(docker.api.client.APIClient, "start", start)
    job = _job(tmp_path, suite, "docker", sandbox="docker", options=RunOptions(concurrency=2))
    assert len(injected) == 2
    assert canonical(job) == clean_results
    left = docker_client.api.containers(all=True, filters={"label": "evoround.job=docker"})
    assert not left, [c["Names"] for c in left]
