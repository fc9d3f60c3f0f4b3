"""Red-team suite: each attack of :mod:`tests.adversarial.redteam` as a job, on Docker and
on the local sandbox under bubblewrap.

Every attack must end with the honest verdict its ``expect`` names (never a forged pass),
no round lost to the harness (``infra``), no hidden test or reference content (a random
token planted in each) in any snapshot, no process or container left, the engine's peak
RSS under 300 MB and the job bounded in time. Each attack is a job of its own; the jobs of
one backend run one after another in one process apart from pytest's
(:mod:`tests.adversarial.redteam_job`, started once per backend by a module fixture, so the
first case of a backend carries the time of them all), which reports each job's own peak
RSS.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
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


def _lines(proc: subprocess.Popen[str], out: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        out.put(line)
    out.put(None)


def _run_all(backend: str, names: list[str], work: Path) -> dict[str, dict]:
    """Each attack's JSON line, from one runner process; an attack that took longer than
    its bound stops the runner (it and the attacks after it then have no line)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVOROUND_LOCAL_ISOLATION": "bwrap"}
    cmd = [sys.executable, "-m", "tests.adversarial.redteam_job", backend, str(work), *names]
    found: dict[str, dict] = {}
    lines: queue.Queue[str | None] = queue.Queue()
    with open(work / "runner.err", "w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err,
                                text=True)  # fmt: skip
        threading.Thread(target=_lines, args=(proc, lines), daemon=True).start()
        try:
            while (line := lines.get(timeout=WALL_LIMIT_SEC + 120)) is not None:
                if line.startswith('{"attack"'):
                    rec = json.loads(line)
                    found[rec["attack"]] = rec
        except queue.Empty:
            pass
        finally:
            proc.kill()
            proc.wait()
    found["<stderr>"] = {"tail": (work / "runner.err").read_text(errors="replace")[-3000:]}
    return found


def _selected(request: pytest.FixtureRequest, test: str) -> list[str]:
    """The attacks of ``test`` this session runs (all of them, unless ``-k`` chose some)."""
    items = request.session.items
    return [i.callspec.params["name"] for i in items if getattr(i, "originalname", "") == test]


def _outcome(found: dict[str, dict], name: str) -> dict:
    out = found.get(name)
    assert out is not None, f"the runner gave no line for {name}: {found['<stderr>']['tail']}"
    assert "crash" not in out, out["crash"]
    return out


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


@pytest.fixture(scope="module")
def local_outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    names = _selected(request, "test_redteam_local_bwrap")
    return _run_all("local", names, tmp_path_factory.mktemp("redteam-local"))


@pytest.fixture(scope="module")
def docker_outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, docker_client
):  # noqa: ANN001
    names = _selected(request, "test_redteam_docker")
    return _run_all("docker", names, tmp_path_factory.mktemp("redteam-docker"))


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
@pytest.mark.parametrize("name", LOCAL)
def test_redteam_local_bwrap(name: str, local_outcomes: dict[str, dict]) -> None:
    _check(name, _outcome(local_outcomes, name))


@pytest.mark.docker
@pytest.mark.parametrize("name", DOCKER)
def test_redteam_docker(name: str, docker_outcomes: dict[str, dict]) -> None:
    _check(name, _outcome(docker_outcomes, name))
