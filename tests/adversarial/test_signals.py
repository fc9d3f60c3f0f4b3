"""Signals from inside the sandbox are the agent's failure, never ``infra`` (issue 34,
item 5): many attacks of :mod:`tests.adversarial.signals` graded in one job per backend.

Each round must be recorded once with the agent's own verdict, the job must end normally
and in bounded time, and nothing may be left running. The Docker job includes the
daemons that stop every process they see: before the host-side breaker
(``sandboxes/docker/_wedge``) they wedged the Docker daemon's lock on the container and
the job hung for 20 minutes (until killed by hand).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from evoround.results import JobView
from evoround.sandboxes.local._isolation import bwrap_available
from tests.adversarial.leaks import job_containers
from tests.adversarial.signals import HONEST, signal_job

LOCAL = [
    "stop-ancestors", "kill-ppid", "stop-ppid", "kill-all", "stop-all", "kill-pgrp",
    "stop-init", "killer-daemon", "v-kill-ppid", "v-kill-all", "v-stop-ancestors",
    "v-kill-ancestors", "v-close-stdio", "v-killer-child",
]  # fmt: skip
DOCKER = [
    "stopper-daemon", "v-stopper-child", "kill-all", "stop-ancestors", "kill-init",
    "v-kill-ancestors", "v-stop-all", "v-close-stdio",
]  # fmt: skip


def _check(view: JobView, names: list[str], wall: float, limit: float) -> None:
    seen = Counter(r.task for r in view.records)
    assert seen == Counter(names), seen  # each round recorded once, none retried
    verdicts = {r.task: r.status.value for r in view.records}
    assert all(v in HONEST for v in verdicts.values()), verdicts
    assert not any(r.passed for r in view.records), verdicts
    assert wall < limit, (wall, verdicts)


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
def test_signals_local_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    start = time.monotonic()
    view = signal_job(tmp_path, LOCAL, "local")
    _check(view, LOCAL, time.monotonic() - start, 120)


def test_signals_docker(tmp_path: Path, docker_client) -> None:  # noqa: ANN001
    start = time.monotonic()
    view = signal_job(tmp_path, DOCKER, "docker", job="sig-docker")
    _check(view, DOCKER, time.monotonic() - start, 180)
    time.sleep(0.5)
    assert job_containers(docker_client, "sig-docker", tmp_path / "runs" / "sig-docker") == []
