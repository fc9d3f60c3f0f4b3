"""Signal attacks on the harness's processes, as scripted agents (issue 34, item 5).

Each attack implements nothing (the counter stub) and then signals what it can reach:
its parent, every ancestor, its process group, every process it can see (``-1``), the
pid namespace's init, itself; with SIGKILL and with SIGSTOP; during the agent's turn
(a shell step) and during verification (code the hidden tests import). Some leave a
daemon that keeps doing it. The honest verdict is always the agent's: ``failed``, a
timeout of the agent or of the verifier, or ``integrity_violation`` (the verifier's own
processes were killed); never ``infra``, never a retry.

:func:`signal_job` grades a list of them in ONE job: one task per attack (a copy of the
counter fixture under the attack's name), one round each (the stub fails round 1 and
fail-stop ends the attempt).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from evoround.engine import RunOptions, run_job
from evoround.results import JobView, Mode, load_job
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.adversarial.attacks import STUB
from tests.helpers import COUNTER

STEP_SEC = 3
"""Timeout of an attack's shell step: a stopped step costs this (plus the kill grace)."""

ANCESTORS = """
def _ancestors():
    out, p = [], os.getpid()
    while True:
        p = int(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])
        if p <= 1:
            return out
        out.append(p)
"""


def _shell(cmd: str) -> list[dict]:
    return [{"write": {"path": "counter.py", "content": STUB}}, {"run": cmd, "timeout": STEP_SEC}]


def _python(code: str) -> list[dict]:
    return _shell(f"python3 - <<'EOF'\nimport os, signal, time\n{ANCESTORS}\n{code}\nEOF")


def _imported(code: str) -> list[dict]:
    """The stub, doing ``code`` when the verifier's pytest imports it."""
    body = f"{STUB}import os, signal, time\n{ANCESTORS}\n{code}\n"
    return [{"write": {"path": "counter.py", "content": body}}]


_LOOP = "if os.fork() == 0:\n    os.setsid()\n    while True:\n        os.kill(-1, {sig}); time.sleep(0.05)"

ATTACKS: dict[str, list[dict]] = {
    # ---- during the agent's turn ------------------------------------------------------
    "kill-ppid": _shell("kill -9 $PPID; sleep 1"),
    "stop-ppid": _shell("kill -STOP $PPID; sleep 1"),
    "kill-all": _shell("kill -9 -1; sleep 1"),
    "stop-all": _shell("kill -STOP -1; sleep 1"),
    "kill-pgrp": _shell("kill -9 0"),
    "stop-pgrp": _shell("kill -STOP 0"),
    "kill-init": _shell("kill -9 1; sleep 1"),
    "stop-init": _shell("kill -STOP 1; sleep 1"),
    "stop-self": _shell("kill -STOP $$"),
    "kill-ancestors": _python("for p in reversed(_ancestors()): os.kill(p, 9)\ntime.sleep(1)"),
    "stop-ancestors": _python("for p in _ancestors(): os.kill(p, signal.SIGSTOP)\ntime.sleep(1)"),
    # a daemon that goes on stopping everything it sees (in Docker: every ``runc init`` of
    # a later exec too, which wedges the daemon's lock on the container)
    "stopper-daemon": _shell(
        "(setsid sh -c 'while :; do kill -STOP -1; sleep 0.05; done' >/dev/null 2>&1 "
        "</dev/null &); sleep 1"
    ),
    "killer-daemon": _shell(
        "(setsid sh -c 'while :; do kill -9 -1; sleep 0.05; done' >/dev/null 2>&1 "
        "</dev/null &); sleep 1"
    ),
    # ---- during verification (the tested module, imported by the hidden tests) --------
    "v-kill-ppid": _imported("os.kill(os.getppid(), 9)"),
    "v-stop-ppid": _imported("os.kill(os.getppid(), signal.SIGSTOP)"),
    "v-kill-all": _imported("os.kill(-1, 9)"),
    "v-stop-all": _imported("os.kill(-1, signal.SIGSTOP)"),
    "v-kill-pgrp": _imported("os.kill(0, 9)"),
    "v-kill-init": _imported("os.kill(1, 9)"),
    "v-kill-ancestors": _imported("for p in reversed(_ancestors()): os.kill(p, 9)"),
    "v-stop-ancestors": _imported("for p in _ancestors(): os.kill(p, signal.SIGSTOP)"),
    "v-stop-self": _imported("os.kill(os.getpid(), signal.SIGSTOP)"),
    "v-close-stdio": _imported("os.closerange(0, 65536)"),
    "v-killer-child": _imported(_LOOP.format(sig=9)),
    "v-stopper-child": _imported(_LOOP.format(sig="signal.SIGSTOP")),
}

HONEST = {"failed", "agent_timeout", "verifier_timeout", "integrity_violation"}
"""The agent's own verdicts: none of them is lost to the harness."""


def make_tasks(base: Path, names: list[str], verifier_sec: int) -> list[Path]:
    """One copy of the counter task per attack, named after it, with short timeouts."""
    out = []
    for name in names:
        task = base / "tasks" / name
        shutil.copytree(COUNTER, task)
        toml = task / "task.toml"
        text = toml.read_text().replace('name = "counter"', f'name = "{name}"')
        text = text.replace("verifier_timeout_sec = 60", f"verifier_timeout_sec = {verifier_sec}")
        toml.write_text(text)
        out.append(task)
    return out


def signal_job(
    tmp_path: Path, names: list[str], sandbox: str, verifier_sec: int = 8, job: str = "sig"
) -> JobView:
    """Run ``names`` (keys of :data:`ATTACKS`) as one job of one-round attempts, two at once."""
    tasks = make_tasks(tmp_path, names, verifier_sec)
    script = tmp_path / "signals.yaml"
    script.write_text(
        yaml.safe_dump({"name": "signals", "tasks": {n: {"1": ATTACKS[n]} for n in names}})
    )
    job_dir = tmp_path / "runs" / job
    run_job(
        [load_task(t) for t in tasks],
        ScriptedScaffold(load_script(script)),
        job_dir=job_dir,
        attempts=1,
        modes=[Mode.mt],
        sandbox=sandbox,
        store=SnapshotStore(tmp_path / "store"),
        options=RunOptions(concurrency=2, retries=0),
        rounds_window=(1, 1),
    )
    return load_job(job_dir)
