"""The process checklist's diff is the same on every backend (issue 33).

One fixed change (a file added, one modified, one deleted, binary bytes, a link, a file
over the read cap, an odd name, caches) is made in a sandbox of each backend and
snapshot mode; the diff the checklist computes from the two snapshots, and from the
initial workspace (no parent snapshot), must be identical to the local backend's, and so
must the verdicts of the diff-based rules over it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evoround.results import CheckOutcome
from evoround.sandboxes import LocalProvider, SandboxProvider
from evoround.snapshots import READ_CAP, SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, load_task
from evoround.verifiers.checklist import RoundEvidence, run_rule, snapshot_diff
from tests.conftest import write_task

CHANGE = f"""
set -e
printf 'X = 2\\n' > pkg/mod.py
rm README.md
printf 'import requests\\nprint("done \\xe2\\x9c\\x85")\\n' > new_tool.py
printf '\\x00\\x01binary' > data.bin
mkdir -p 'odd dir' && printf 'x\\n' > 'odd dir/ünï cødé.txt'
ln -s /etc/passwd leak
ln -s pkg linked_pkg
head -c {READ_CAP + 1} /dev/zero | tr '\\0' a > big.txt
mkdir -p __pycache__ && printf 'junk' > __pycache__/x.pyc
"""

RULES: list[tuple[str, dict[str, Any]]] = [
    ("files_unchanged", {"glob": ["README.md"]}),
    ("stdlib_only", {}),
    ("no_emoji", {"where": "files"}),
    ("file_naming", {"glob": "**/*.py", "pattern": r"[a-z_]+\.py"}),
    ("pattern_absent", {"glob": "**/*.txt", "pattern": "a{100}"}),
]


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    path = write_task(
        tmp_path_factory.mktemp("tasks"),
        "diffs",
        rounds=1,
        workspace={"README.md": "hello\n", "pkg/mod.py": "X = 1\n", "keep.txt": "same\n"},
    )
    return load_task(path)


def _label(task: Task, kind: SnapshotKind, parent: str | None = None) -> SnapshotLabel:
    return SnapshotLabel(
        task=task.name,
        task_digest=task.digest,
        kind=kind,
        round=1 if parent else 0,
        attempt="diffs/mt-01",
        parent=parent,
    )


def _summary(provider: SandboxProvider, task: Task) -> dict[str, Any]:
    """The diffs (initial -> after, before -> after) and the rule verdicts, as plain data."""
    with provider.create(task, "diffs/mt-01") as sb:
        before = sb.snapshot(_label(task, SnapshotKind.initial))
        res = sb.exec(CHANGE, timeout=120)
        assert res.ok, res.stderr
        after = sb.snapshot(_label(task, SnapshotKind.agent, before.id))
    out: dict[str, Any] = {}
    for name, parent in (("initial", None), ("round", before)):
        diff = snapshot_diff(provider, task, parent, after)
        assert diff is not None, f"{provider.name}: no {name} diff"
        ev = RoundEvidence(
            task=task.name, round=1, system_prompt="", user_message="", events=[], diff=diff
        )
        out[name] = {
            "added": diff.added,
            "modified": diff.modified,
            "deleted": diff.deleted,
            "after": sorted(diff.after.items()),
            "text": {p: diff.text_after(p) for p in diff.added + diff.modified},
            "old": {p: diff.text_before(p) for p in diff.modified + diff.deleted},
            "rules": [(r, run_rule(r, p, ev).result) for r, p in RULES],
        }
    return out


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, task: Task) -> dict[str, Any]:
    store = SnapshotStore(tmp_path_factory.mktemp("store"))
    provider = LocalProvider(store, base_dir=tmp_path_factory.mktemp("sandboxes"))
    try:
        return _summary(provider, task)
    finally:
        provider.close()


def test_local_diff_is_what_the_change_did(local: dict[str, Any]):
    rnd = local["round"]
    assert rnd["added"] == sorted(["new_tool.py", "data.bin", "odd dir/ünï cødé.txt", "big.txt"]), (
        "links and caches are not agent edits"
    )
    assert rnd["modified"] == ["pkg/mod.py"] and rnd["deleted"] == ["README.md"]
    assert rnd["text"]["big.txt"] is None  # over the read cap: never loaded
    assert rnd["text"]["data.bin"] is None and rnd["old"]["pkg/mod.py"] == "X = 1\n"
    assert rnd["rules"] == [
        ("files_unchanged", CheckOutcome.failed),
        ("stdlib_only", CheckOutcome.failed),
        ("no_emoji", CheckOutcome.failed),
        ("file_naming", CheckOutcome.passed),
        ("pattern_absent", CheckOutcome.passed),  # big.txt is over the read cap: not read
    ]
    assert local["initial"] == rnd  # no parent: the task's workspace is the start


@pytest.fixture(params=["workspace", "archive", "commit"])
def docker_provider(
    request: pytest.FixtureRequest, tmp_path: Path, docker_client: Any
) -> Iterator[SandboxProvider]:
    from evoround.sandboxes.docker import DockerProvider

    provider = DockerProvider(
        SnapshotStore(tmp_path / "store"),
        job=f"diffs-{request.param}",
        snapshot_mode=request.param,
        prestart=False,
    )
    yield provider
    provider.close()


@pytest.mark.docker
def test_docker_diff_equals_local(
    docker_provider: SandboxProvider, task: Task, local: dict[str, Any]
):
    assert _summary(docker_provider, task) == local
