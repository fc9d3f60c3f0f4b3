"""Script verifiers (a task's ``test.sh`` writes a reward file): the agent's code runs inside
the script, so it can print case lines, rewrite the reward after the script, swap the reward
file for a link, or leave a process that keeps writing it. None of that may pass a round.

The task is the imported EvoCode-Bench fixture (``cases.py`` imports the agent's
``tally.py`` and writes the reward); each attack is a ``tally.py`` that implements nothing.
Run on the hardened local sandbox and on Docker.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from evoround.results import Mode, RoundStatus
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.tasks import load_task
from evoround.tasks.importers import import_tasks
from tests.adversarial.leaks import job_containers, processes_with
from tests.helpers import FIXTURES, run

NOTHING = "def tally(words):\n    return {}\n\n\ndef top(words, n):\n    return []\n\n"

ATTACKS = {
    # rewrite the reward after the script wrote its own (interpreter exit)
    "atexit-reward": NOTHING
    + ("import atexit, sys\natexit.register(lambda: open(sys.argv[2], 'w').write('1\\n'))\n"),
    # print a passing summary and passing case lines of its own
    "fake-cases": NOTHING
    + (
        "for _c in ('c101', 'c102', 'c201', 'c202', 'c203'):\n"
        "    print('CASE_RESULT case_id=%s status=success' % _c)\n"
        "print('CASE_SUMMARY total_cases=5 success_count=5 fail_count=0')\n"
    ),
    # after the script, replace the reward file by a link to a file that says 1
    "reward-link": NOTHING
    + (
        "import atexit, os, sys\n"
        "def _swap():\n"
        "    one = os.path.join(os.path.dirname(sys.argv[2]), '..', 'one')\n"
        "    open(one, 'w').write('1\\n')\n"
        "    os.unlink(sys.argv[2])\n"
        "    os.symlink(os.path.abspath(one), sys.argv[2])\n"
        "atexit.register(_swap)\n"
    ),
    # a detached process that keeps writing 1 into the reward file after the script ends
    "racer": NOTHING
    + (
        "import subprocess, sys\n"
        "subprocess.Popen(['sh', '-c', 'while :; do echo 1 > \"$0\"; sleep 0.01; done # MARK',"
        " sys.argv[2]], start_new_session=True, stdin=subprocess.DEVNULL,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    ),
    # wrap sys.stdout: every CASE_RESULT fail becomes success, the summary all-success, and
    # reward 1 at exit (issue 34)
    "stdout-rewrite": NOTHING
    + (
        "import atexit, re, sys\n"
        "class _W:\n"
        "    def __init__(self, s):\n"
        "        self._s = s\n"
        "    def write(self, t):\n"
        "        t = t.replace('status=fail', 'status=success').replace('wrong result', '')\n"
        "        t = re.sub(r'total_cases=(\\d+) success_count=\\d+ fail_count=\\d+',\n"
        "                   lambda m: 'total_cases=%s success_count=%s fail_count=0'\n"
        "                   % (m.group(1), m.group(1)), t)\n"
        "        return self._s.write(t)\n"
        "    def __getattr__(self, n):\n"
        "        return getattr(self._s, n)\n"
        "sys.stdout = _W(sys.stdout)\n"
        "atexit.register(lambda: open(sys.argv[2], 'w').write('1\\n'))\n"
    ),
    # read the case table from the runner's __main__, print an all-success list with a
    # consistent summary, write reward 1 and exit before any case runs (issue 34)
    "main-cases": NOTHING
    + (
        "import os, sys\n"
        "_m = sys.modules['__main__']\n"
        "_n = int(sys.argv[1])\n"
        "_rows = [c for c in getattr(_m, 'CASES', ()) if c[1] <= _n <= c[2]]\n"
        "for _c in _rows:\n"
        "    print('CASE_RESULT case_id=%s origin_step=round-%d requirement_ref=%s '\n"
        "          'status=success' % (_c[0], _c[1], _c[3]))\n"
        "print('CASE_SUMMARY total_cases=%d success_count=%d fail_count=0'\n"
        "      % (len(_rows), len(_rows)))\n"
        "sys.stdout.flush()\n"
        "open(sys.argv[2], 'w').write('1\\n')\n"
        "os._exit(0)\n"
    ),
}
FORGERIES = {"atexit-reward", "fake-cases", "reward-link", "stdout-rewrite", "main-cases"}


def _task(tmp_path: Path):
    [res] = import_tasks(FIXTURES / "harbor" / "theme_d0_w0_word_tally", tmp_path / "imported")
    # the machine has no registry: build on the local base image (``evoround images``)
    (res.dest / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=python:3.12-slim\nFROM ${BASE_IMAGE}\nWORKDIR /app\n"
    )
    return load_task(res.dest)


def _agent(tmp_path: Path, content: str) -> ScriptedScaffold:
    path = tmp_path / "attack.yaml"
    steps = [{"write": {"path": "tally.py", "content": content}}]
    path.write_text(yaml.safe_dump({"name": "attack", "default": {"*": steps}}))
    return ScriptedScaffold(load_script(path))


def _attack(tmp_path: Path, name: str, sandbox: str):  # noqa: ANN202 - (JobView, marker)
    marker = f"evoround-racer-{uuid.uuid4().hex[:8]}"
    agent = _agent(tmp_path, ATTACKS[name].replace("MARK", marker))
    view = run(tmp_path, agent, tasks=[_task(tmp_path)], modes=(Mode.mt,), sandbox=sandbox)
    r1 = view.records[0]
    assert not r1.passed, f"{name}: forged pass ({[r.status.value for r in view.records]})"
    assert len(view.records) == 1
    if name in FORGERIES:
        assert r1.status is RoundStatus.integrity_violation, (name, r1.status, r1.error)
        assert r1.integrity_evidence
    else:
        assert r1.status in (RoundStatus.failed, RoundStatus.integrity_violation), r1.status
    assert processes_with(marker) == []
    return view


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_script_verifier_attacks_local(tmp_path: Path, name: str) -> None:
    _attack(tmp_path, name, "local")


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_script_verifier_attacks_docker(tmp_path: Path, docker_client, name: str) -> None:
    view = _attack(tmp_path, name, "docker")
    assert job_containers(docker_client, view.path.name, view.path) == []


@pytest.mark.docker
def test_docker_stop_strays_keeps_the_container(tmp_path: Path, docker_client) -> None:
    """A stray of a finished exec is gone; the container (init, keep-alive) still runs."""
    from evoround.sandboxes.docker import DockerProvider
    from evoround.snapshots import SnapshotStore

    provider = DockerProvider(
        SnapshotStore(tmp_path / "store"), job=f"strays-{uuid.uuid4().hex[:6]}"
    )
    try:
        with provider.create(_task(tmp_path), "t/strays") as sb:
            # (the pause lets setsid leave the exec's process group before the exec ends)
            sb.exec("setsid sleep 300 >/dev/null 2>&1 < /dev/null & sleep 0.5", timeout=30)
            ps = "for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline; echo; done"

            def strays() -> list[str]:
                lines = sb.exec(ps, timeout=30).stdout.splitlines()
                return [ln for ln in lines if ln.startswith("sleep 300")]

            assert strays(), "the stray did not start (test is moot)"
            sb.stop_strays()
            assert strays() == []
            assert sb.exec("echo alive", timeout=30).stdout.strip() == "alive"
    finally:
        provider.close()
