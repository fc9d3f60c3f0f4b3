"""Red-team suite: each attack of :mod:`tests.adversarial.redteam` as a job, on Docker and
on the local sandbox under bubblewrap.

Every attack must end with the honest verdict its ``expect`` names (never a forged pass),
no round lost to the harness (``infra``), no hidden test or reference content (a random
token planted in each) in any snapshot, no process or container left, the engine's peak
RSS under 300 MB and the job bounded in time. Each job runs in a process of its own
(:mod:`tests.adversarial.redteam_job`) so its RSS is its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evoround.sandboxes.local._isolation import bwrap_available
from tests.adversarial.redteam import ATTACKS

RSS_LIMIT_MB = 300
WALL_LIMIT_SEC = 150
ROOT = Path(__file__).resolve().parents[2]

HONEST = {
    "fail": {"failed", "agent_timeout", "agent_error"},
    "pass": {"passed"},
    "reject": {"failed"},
    "pass_or_reject": {"passed", "failed"},
    "pass_or_fail": {"passed", "failed"},
}


def _run(name: str, backend: str, tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVOROUND_LOCAL_ISOLATION": "bwrap"}
    res = subprocess.run(
        [sys.executable, "-m", "tests.adversarial.redteam_job", name, backend, str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=WALL_LIMIT_SEC + 120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _check(name: str, out: dict) -> None:
    attack = ATTACKS[name]
    recs = out["records"]
    assert recs, out
    r1 = recs[0]
    assert r1["status"] != "infra", out  # no round lost to the harness
    assert r1["status"] in HONEST[attack.expect], out
    if r1["status"] == "passed":
        assert attack.expect.startswith("pass"), out  # a forged pass
    if attack.expect == "reject" or (attack.expect == "pass_or_reject" and not r1["passed"]):
        assert r1["error"].startswith("workspace:"), out
    assert attack.error_has in r1["error"], out
    if attack.later is not None and r1["passed"]:
        assert len(recs) >= 2 and recs[1]["status"] != "infra", out
    assert not any(r["integrity"] for r in recs if attack.expect.startswith("pass")), out
    for r in recs:
        assert r["leaked"] == [], out  # hidden material reached a snapshot
    assert out["processes"] == [], out
    assert out["leftovers"] == [], out  # a sandbox folder the engine could not remove
    assert out["containers"] == [], out
    assert out["rss_mb"] < RSS_LIMIT_MB, out
    assert out["wall"] < WALL_LIMIT_SEC, out


LOCAL = sorted(n for n, a in ATTACKS.items() if "local" in a.backends)
DOCKER = sorted(n for n, a in ATTACKS.items() if "docker" in a.backends)


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
@pytest.mark.parametrize("name", LOCAL)
def test_redteam_local_bwrap(name: str, tmp_path: Path) -> None:
    _check(name, _run(name, "local", tmp_path))


@pytest.mark.docker
@pytest.mark.parametrize("name", DOCKER)
def test_redteam_docker(name: str, tmp_path: Path, docker_client) -> None:  # noqa: ANN001
    _check(name, _run(name, "docker", tmp_path))
