"""Bytecode beside a stub: the workspace's source is a stub and ``__pycache__`` holds a
compiled module that works, written with an unchecked hash so Python never compares it with
the source. The code that ran would then not be the code the snapshot shows (and a judge
or a reviewer reads). The verifier keeps its bytecode cache in a folder of its own
(``-X pycache_prefix``), so the workspace's ``__pycache__`` is never read: the stub runs."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

from evoround.sandboxes import LocalProvider, Sandbox
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.adversarial.attacks import STUB
from tests.helpers import COUNTER

WORKING = COUNTER / "rounds" / "01" / "solution" / "files" / "counter.py"


def _plant(sb: Sandbox, tmp_path: Path, tag: str) -> None:
    sb.write_file("counter.py", STUB)
    src = tmp_path / "counter.py"
    src.write_text(WORKING.read_text())
    pyc = tmp_path / "counter.pyc"
    py_compile.compile(
        str(src),
        cfile=str(pyc),
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    sb.write_file(f"__pycache__/counter.{tag}.pyc", pyc.read_bytes())


def test_bytecode_beside_a_stub_is_not_what_runs_local(tmp_path: Path) -> None:
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    try:
        with provider.create(task, "t/verify") as sb:
            _plant(sb, tmp_path, sys.implementation.cache_tag)
            res = run_pytest(sb, active_tests(task, 1), 1, timeout=120)
    finally:
        provider.close()
    assert not res.passed, "the planted bytecode ran instead of the stub"
    assert res.integrity == [], res.integrity


def test_bytecode_beside_a_stub_is_not_what_runs_docker(tmp_path: Path, docker_client) -> None:
    from evoround.sandboxes.docker import DockerProvider

    task = load_task(COUNTER)
    provider = DockerProvider(SnapshotStore(tmp_path / "store"), job="pycshadow")
    try:
        with provider.create(task, "t/verify") as sb:
            tag = sb.exec(
                ["python3", "-c", "import sys; print(sys.implementation.cache_tag)"]
            ).stdout.strip()
            assert tag == sys.implementation.cache_tag, "the test compiles with the host's Python"
            _plant(sb, tmp_path, tag)
            res = run_pytest(sb, active_tests(task, 1), 1, timeout=120)
    finally:
        provider.close()
    assert not res.passed, "the planted bytecode ran instead of the stub"
    assert res.integrity == [], res.integrity
