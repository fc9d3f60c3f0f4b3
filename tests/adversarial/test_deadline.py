"""A workspace made to be slow to copy cannot hold a round past its deadline.

One deadline covers the snapshot, the verification clone and the verifier: a workspace of
many files (under the task's file-count limit, so it is not simply refused) with a 1 s
verifier timeout must end the round in about 2 s (timeout + grace of at most the timeout
again) as a recorded ``verifier_timeout`` naming the deadline, on local and on Docker,
with no process or container left behind. Without the deadline this workspace took many
times as long.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evoround.results import Mode, RoundStatus
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.tasks import load_task
from tests.adversarial.leaks import job_containers
from tests.helpers import copy_counter, run

FILES = 19_000
TIMEOUT = 1.0
SLACK = 2.0  # one file's work past the deadline, the clone's teardown, a busy machine

BOMB = (
    "python3 -c \"import os; os.makedirs('junk'); "
    f"[open('junk/%d' % i, 'w').write(str(i) * 300) for i in range({FILES})]\""
)


def _task(tmp_path: Path) -> Path:
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace(
        "verifier_timeout_sec = 60", f"verifier_timeout_sec = {TIMEOUT}"
    ))  # fmt: skip
    return root


def _agent(tmp_path: Path) -> ScriptedScaffold:
    path = tmp_path / "slow.yaml"
    steps = [{"run": BOMB, "timeout": 120}]
    path.write_text(yaml.safe_dump({"name": "slowcopy", "default": {"*": steps}}))
    return ScriptedScaffold(load_script(path))


def _check(view) -> None:  # noqa: ANN001 - JobView
    (r1,) = view.records
    assert not r1.passed
    assert r1.status is RoundStatus.verifier_timeout, (r1.status, r1.error)
    assert any("deadline" in p for p in r1.verifier_problems), r1.verifier_problems
    harness = r1.timings.snapshot_sec + r1.timings.verify_sec
    assert harness < 2 * TIMEOUT + SLACK, harness


def test_slow_workspace_is_a_timeout_not_a_held_round_local(tmp_path: Path) -> None:
    view = run(tmp_path, _agent(tmp_path), tasks=[load_task(_task(tmp_path))], modes=(Mode.mt,))
    _check(view)


@pytest.mark.docker
def test_slow_workspace_is_a_timeout_not_a_held_round_docker(tmp_path: Path, docker_client):
    task = load_task(_task(tmp_path))
    view = run(tmp_path, _agent(tmp_path), tasks=[task], modes=(Mode.mt,), sandbox="docker")
    _check(view)
    assert job_containers(docker_client, view.path.name, view.path) == []
