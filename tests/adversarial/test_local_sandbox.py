"""Hardened local sandbox: the agent cannot see the task, the solutions or other sandboxes,
and nothing it starts outlives its command."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
import yaml

from evoround.results import Mode, RoundStatus
from evoround.sandboxes import LocalProvider
from evoround.sandboxes.local._isolation import namespaces_available
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.adversarial.attacks import STUB
from tests.adversarial.leaks import processes_with
from tests.helpers import COUNTER, run

pytestmark = pytest.mark.skipif(
    not namespaces_available() and os.environ.get("CI") != "true",
    reason="no Linux namespaces here: the local sandbox is for trusted agents only",
)


def unique_task(tmp_path: Path) -> Path:
    """The counter task under a name that exists nowhere else on this machine."""
    dest = tmp_path / "tasks" / f"counter-{uuid.uuid4().hex[:10]}"
    shutil.copytree(COUNTER, dest)
    return dest


def scripted(tmp_path: Path, name: str, steps: list[dict]) -> ScriptedScaffold:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "default": {"*": steps}}))
    return ScriptedScaffold(load_script(path))


def test_agent_cannot_find_the_reference_solution(tmp_path: Path):
    task_dir = unique_task(tmp_path)
    # copies any reference counter.py it can find (the task's, or a cached reference state)
    steal = (
        f"for f in $(find / -xdev -path '*{task_dir.name}*'  "
        "-name counter.py 2>/dev/null); do cp $f counter.py; done; "
        "ls /proc | grep -c '^[0-9]' > procs.txt; env > env.txt; true"
    )
    agent = scripted(tmp_path, "thief", [{"run": steal, "timeout": 60}])
    view = run(tmp_path, agent, tasks=[load_task(task_dir)], modes=(Mode.mt,))
    (r1,) = view.records
    assert not r1.passed, "the agent found a reference solution"
    store = SnapshotStore(tmp_path / "store")
    files = {e["path"] for e in store.manifest(store.get(r1.snapshot_id).locator)}
    assert "counter.py" not in files


def test_agent_env_and_processes_are_its_own(tmp_path: Path):
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(COUNTER), "t/env") as sb:
        res = sb.exec("env; echo PROCS $(ls /proc | grep -c '^[0-9]')", timeout=30)
    assert "EVOROUND" not in res.stdout
    assert str(tmp_path / "store") not in res.stdout
    procs = int(res.stdout.split("PROCS")[-1].split()[0])
    assert procs < 10, res.stdout  # its own pid namespace, not the host's processes


def test_background_processes_die_with_the_command(tmp_path: Path):
    marker = f"evoround-bg-{uuid.uuid4().hex[:8]}"
    # a background racer that would rewrite every hidden test it can find, forever
    racer = (
        f'setsid sh -c \'while :; do for f in $(find / -xdev -name "test_*.py" '
        f'-path "*verify-*" 2>/dev/null); do echo "def test_x(): pass" > $f; done; '
        f"sleep 0.05; done # {marker}' > /dev/null 2>&1 < /dev/null &"
    )
    steps = [{"write": {"path": "counter.py", "content": STUB}}, {"run": racer}]
    task_dir = unique_task(tmp_path)
    view = run(tmp_path, scripted(tmp_path, "racer", steps), tasks=[load_task(task_dir)],
               modes=(Mode.mt,))  # fmt: skip
    (r1,) = view.records
    assert not r1.passed
    assert r1.status is RoundStatus.failed
    assert processes_with(marker) == []
