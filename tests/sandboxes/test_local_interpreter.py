"""The local verifier starts its Python without ``site`` (``-I -S``) and puts back what
``site`` adds to ``sys.path`` (see evoround/sandboxes/local/_interpreter.py): the tested
code must see the same imports and builtins as under ``-I``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from evoround.sandboxes import LocalProvider
from evoround.sandboxes.local._interpreter import site_path
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import run_pytest
from tests.helpers import COUNTER

# an honest solution that needs what site gives: a package from site-packages, and the
# builtins site defines
CODE = """import jsonlines  # from site-packages


def count_words(text):
    assert callable(exit) and callable(quit) and help is not None and copyright is not None
    return len(text.split())
"""


def test_the_probe_is_the_interpreters_own_sys_path() -> None:
    with_site = subprocess.run(
        [sys.executable, "-I", "-c", "import sys; print(repr([p for p in sys.path if p]))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert repr(list(site_path(sys.executable) or ())) == with_site


def test_a_virtual_environment_keeps_site(tmp_path: Path) -> None:
    # site also sets sys.prefix there: without it, code reading sys.prefix would differ
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True
    )
    assert site_path(str(tmp_path / "venv/bin/python")) is None
    assert site_path(str(tmp_path / "nothing/python")) is None


def test_the_verifier_sees_site_packages_and_the_site_builtins(tmp_path: Path) -> None:
    task_dir = tmp_path / "task"
    shutil.copytree(COUNTER, task_dir)
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/verify") as sb:
        vp = sb.verifier_python()
        assert vp.argv[1:] == ("-I", "-S") and vp.path_last == site_path(sys.executable)
        sb.write_file("counter.py", CODE)
        res = run_pytest(sb, active_tests(task, 1), 1, timeout=120)
    assert res.passed, (res.problems, res.integrity, [t for t in res.tests if not t.passed])
