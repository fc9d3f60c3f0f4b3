"""The verifier's bytecode cache (``evoround.sandboxes.common._bytecode``): the harness fills it
once per interpreter or image and the runner reads the standard library, pytest and pluggy
from it. An agent must not be able to poison it in one round to forge the next: it cannot
write it (local: bound read-only, and covered in an attempt; Docker: a read-only volume),
and an entry whose source changed is never used (checked-hash bytecode).

Also the identity watch's memo (``_Watch._allowed``): a plugin object that passed the check
and is changed afterwards is checked again.
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, Sandbox
from evoround.sandboxes.local._isolation import bwrap_available
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.helpers import COUNTER

WORKING = (COUNTER / "rounds" / "01" / "solution" / "files" / "counter.py").read_text()

POISON = r"""
import os, sys
root = sys.argv[1]
done = []
for d, _dirs, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        for how in ("overwrite", "replace"):
            try:
                if how == "overwrite":
                    with open(p, "r+b") as fh:
                        fh.write(b"\0")
                else:
                    os.replace(p, p)  # a rename over it needs a writable folder
                    open(p + ".new", "wb").close()
                done.append(how + " " + p)
            except OSError:
                pass
    try:
        open(os.path.join(d, "planted.pyc"), "wb").close()
        done.append("plant " + d)
    except OSError:
        pass
    break
print("\n".join(done) or "nothing written")
"""


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = Path(d) / f
            h.update(str(p).encode() + p.read_bytes())
    return h.hexdigest()


def test_an_entry_stands_only_for_its_own_source(tmp_path: Path) -> None:
    """Checked-hash bytecode of a working module is not used for a changed source."""
    src = tmp_path / "pkg" / "counter.py"
    src.parent.mkdir()
    src.write_text(WORKING)
    prefix = tmp_path / "cache"
    cfile = f"{prefix}{src.parent}/counter.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(
        str(src), cfile=cfile, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
    )
    run = [sys.executable, "-I", "-B", "-X", f"pycache_prefix={prefix}", "-c"]
    probe = "import sys; sys.path.insert(0, sys.argv[1]); import counter; print(counter.__doc__)"
    src.write_text('"""stub"""\n')
    out = subprocess.run([*run, probe, str(src.parent)], capture_output=True, text=True)
    assert out.stdout.strip() == "stub", out.stderr


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
def test_local_agent_cannot_write_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    try:
        with provider.create(task, "t/verify") as attempt:
            cache = attempt.verifier_python().pycache
            assert cache is not None and Path(cache).is_dir(), "no bytecode cache was made"
            before = _digest(Path(cache))
            with provider.create(task, "t/agent") as agent:  # an attempt: never shown it
                seen = agent.exec(["ls", "-A", cache], timeout=60)
                assert seen.stdout.strip() == "", seen.stdout
            res = attempt.exec([sys.executable, "-c", POISON, cache], timeout=60)
            assert res.stdout.strip() == "nothing written", res.stdout
            attempt.write_file("counter.py", WORKING)
            out = run_pytest(attempt, active_tests(task, 1), 1, timeout=120)
        assert out.passed, out
        assert _digest(Path(cache)) == before
    finally:
        provider.close()


def test_docker_agent_cannot_write_the_cache(tmp_path: Path, docker_client) -> None:
    from evoround.sandboxes.docker import DockerProvider

    task = load_task(COUNTER)
    provider = DockerProvider(SnapshotStore(tmp_path / "store"), job="pycpoison")
    try:
        with provider.create(task, "t/attempt") as sb:
            cache = sb.verifier_python().pycache
            assert cache is not None, "no bytecode cache was mounted"
            before = _listing(sb, cache)
            assert before.count(".pyc") > 50, before[:300]
            res = sb.exec(["python3", "-c", POISON, cache], timeout=60)
            assert res.stdout.strip() == "nothing written", res.stdout
            assert _listing(sb, cache) == before
        with provider.create(task, "t/verify") as sb:
            sb.write_file("counter.py", WORKING)
            out = run_pytest(sb, active_tests(task, 1), 1, timeout=120)
        assert out.passed, out
    finally:
        provider.close()


def _listing(sb: Sandbox, root: str) -> str:
    script = (
        "import hashlib, os, sys\n"
        "for d, ds, fs in sorted(os.walk(sys.argv[1])):\n"
        "    ds.sort()\n"
        "    for f in sorted(fs):\n"
        "        p = os.path.join(d, f)\n"
        "        print(p, hashlib.sha256(open(p, 'rb').read()).hexdigest())\n"
    )
    return sb.exec(["python3", "-c", script, root], timeout=60).stdout


SWAPPED = (
    WORKING
    + """

import gc as _gc


class _Benign:  # looks like the standard library's own
    pass


_Benign.__module__ = "json"


class _Mine:
    pass


_plugin = _Benign()
for _o in _gc.get_objects():
    try:
        if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
            _o.pluginmanager.register(_plugin, "benign-%d" % id(_o))
    except Exception:
        pass

_count = count_words


def count_words(text):  # the first test's report has been checked: now it is the workspace's
    _plugin.__class__ = _Mine
    return _count(text)
"""
)


def test_a_plugin_changed_after_its_first_check_is_caught(tmp_path: Path) -> None:
    task = load_task(COUNTER)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    try:
        with provider.create(task, "t/verify") as sb:
            sb.write_file("counter.py", SWAPPED)
            res = run_pytest(sb, active_tests(task, 1), 1, timeout=120)
    finally:
        provider.close()
    assert not res.passed
    assert any("a plugin from the code under test was registered" in e for e in res.integrity), (
        res.integrity
    )
