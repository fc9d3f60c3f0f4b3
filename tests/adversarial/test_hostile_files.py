"""Hostile files and volumes at paths the harness reads: no hang, no leak, no silent loss."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from evoround.results import Mode, RoundStatus
from evoround.sandboxes import LocalProvider, UnsafeFile
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.adversarial.attacks import STUB
from tests.helpers import COUNTER, copy_counter, run

# After pytest wrote its report, swap it for something the harness must not follow/block on.
SWAP_REPORT = (
    STUB
    + """
import gc as _gc, os as _os, pytest as _pt

class _Swap:
    @_pt.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        p = session.config.option.xmlpath
        for plugin in session.config.pluginmanager.get_plugins():
            if type(plugin).__name__ == "LogXML":
                plugin.pytest_sessionfinish()  # write it now, then replace it
        try:
            _os.unlink(p)
        except OSError:
            pass
        {swap}

for _o in _gc.get_objects():
    try:
        if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
            _o.pluginmanager.register(_Swap(), "swap-%d" % id(_o))
    except Exception:
        pass
"""
)


def _verify(tmp_path: Path, counter: str, timeout: float = 60, art: Path | None = None):
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        sb.write_file("counter.py", counter)
        return run_pytest(sb, active_tests(task, 1), 1, timeout=timeout, artifacts=art)


def test_report_replaced_by_a_fifo_does_not_block(tmp_path: Path):
    start = time.monotonic()
    res = _verify(tmp_path, SWAP_REPORT.replace("{swap}", "_os.mkfifo(p)"), timeout=30)
    assert time.monotonic() - start < 25
    assert not res.passed


def test_report_replaced_by_a_symlink_is_not_followed(tmp_path: Path):
    art = tmp_path / "art"
    res = _verify(tmp_path, SWAP_REPORT.replace("{swap}", "_os.symlink('/etc/passwd', p)"), art=art)
    assert not res.passed
    saved = art / "junit.xml"
    assert not saved.exists() or b"root:" not in saved.read_bytes()


def test_sandbox_reads_refuse_links_fifos_and_oversize(tmp_path: Path):
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(COUNTER), "t/read") as sb:
        sb.exec("ln -s /etc/passwd link; mkfifo fifo; head -c 2000 /dev/zero > big", timeout=30)
        for name in ("link", "fifo"):
            with pytest.raises(UnsafeFile):
                sb.read_file(name)
        with pytest.raises(UnsafeFile):
            sb.read_file("big", limit=1000)
        assert len(sb.read_file("big")) == 2000


def test_output_bomb_is_capped(tmp_path: Path):
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(COUNTER), "t/out") as sb:
        res = sb.exec("head -c 100M /dev/zero | tr '\\0' x", timeout=120)
    assert res.truncated_bytes > 0
    assert len(res.stdout) < 20 << 20
    assert res.stdout.startswith("x") and res.stdout.endswith("x")


def _agent(tmp_path: Path, cmd: str) -> ScriptedScaffold:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"name": "bomb", "default": {"*": [{"run": cmd}]}}))
    return ScriptedScaffold(load_script(path))


def _limited_task(tmp_path: Path) -> Path:
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            "verifier_timeout_sec = 60",
            "verifier_timeout_sec = 60\nmax_workspace_files = 500\nmax_workspace_mb = 5",
        )
    )
    return root


@pytest.mark.parametrize(
    "cmd",
    [
        "mkdir many && cd many && seq 1 2000 | xargs touch",  # too many files
        "mkdir many && cd many && seq 1 2000 | xargs mkdir",  # too many (empty) folders
        "head -c 20M /dev/zero > big.bin",  # too large
        # a path longer than the filesystem's PATH_MAX, built in steps
        "d=$(printf 'a%.0s' $(seq 200)); for i in $(seq 25); do mkdir $d && cd $d || break; "
        "done; echo x > deep.txt; true",
    ],
    ids=["files", "folders", "bytes", "long-path"],
)
def test_workspace_bombs_fail_the_round_with_a_reason(tmp_path: Path, cmd: str):
    task = load_task(_limited_task(tmp_path))
    view = run(tmp_path, _agent(tmp_path, cmd), tasks=[task], modes=(Mode.mt,))
    (r1,) = view.records
    assert not r1.passed
    assert r1.status is RoundStatus.failed  # the agent's failure, not the harness's
    assert r1.error and r1.error.startswith("workspace:"), r1.error


@pytest.mark.docker
@pytest.mark.parametrize(
    "cmd",
    ["seq 1 2000 | xargs touch", "seq 1 2000 | xargs mkdir", "head -c 20M /dev/zero > big.bin"],
)
def test_workspace_bombs_in_docker(tmp_path: Path, docker_client, cmd: str):
    task = load_task(_limited_task(tmp_path))
    view = run(tmp_path, _agent(tmp_path, cmd), tasks=[task], modes=(Mode.mt,), sandbox="docker")
    (r1,) = view.records
    assert not r1.passed and r1.status is RoundStatus.failed
    assert r1.error and r1.error.startswith("workspace:"), r1.error


@pytest.mark.docker
def test_failed_task_build_leaves_no_container(tmp_path: Path, docker_client):
    import uuid

    from evoround.sandboxes.docker import ImageError, default_base_image, ensure_task_image
    from tests.conftest import write_task

    token = uuid.uuid4().hex
    df = f"ARG BASE_IMAGE=python:3.12-slim\nFROM ${{BASE_IMAGE}}\nRUN echo {token} && false\n"
    task = load_task(write_task(tmp_path, "failbuild", dockerfile=df))
    with pytest.raises(ImageError):
        ensure_task_image(docker_client, task, base_image=default_base_image())
    left = [
        c["Names"]
        for c in docker_client.api.containers(all=True)
        if token in (c.get("Command") or "")
    ]
    assert left == []
