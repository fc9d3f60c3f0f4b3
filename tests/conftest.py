"""Shared fixtures: the Docker engine (fail in CI, skip elsewhere) and tiny tasks on disk.

Docker tests must not pass vacuously in CI: when ``CI=true`` and the engine or
the base image is missing, the ``docker_client`` fixture *fails* the test, so a
broken CI machine shows up red instead of green-with-skips.
"""

from __future__ import annotations

import os
import re
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

# litellm fetches its price map from GitHub at import unless told not to; with no network
# the fetch retries in a thread and logs warnings into whatever runs then (a CLI's output)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# xdist workers start with COLUMNS=80 and LINES=24 set; the CLI's consoles read them once
# at import and fold their tables to 80 columns, so a worker drops them to see what a
# serial run sees
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

DOCKERFILE = """ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
RUN python3 -c "import pytest" 2>/dev/null || pip install --no-cache-dir pytest
WORKDIR /workspace
"""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def docker_missing(reason: str) -> None:
    """Fail under CI, skip otherwise."""
    if in_ci():
        pytest.fail(f"Docker is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():  # noqa: ANN201 - docker.DockerClient (docker imported lazily)
    """A connected client with the base image present, or fail (CI) / skip."""
    try:
        import docker

        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as e:  # no SDK, no daemon, no permission
        docker_missing(f"Docker engine unavailable: {e}")
    from evoround.sandboxes.docker import default_base_image, image_id

    base = default_base_image()
    if image_id(client, base) is None:
        docker_missing(f"base image {base} missing: run `evoround images bootstrap`")
    return client


def _evoround_containers() -> set[str] | None:
    """What ``evoround cleanup`` would remove now (None: no engine to ask)."""
    try:
        import docker

        from evoround.sandboxes.docker import cleanup_docker

        return set(cleanup_docker(docker.from_env(timeout=30), dry_run=True).containers)
    except Exception:  # no SDK, no daemon: the Docker tests said so themselves
        return None


_BEFORE = pytest.StashKey[set[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    # the xdist controller (or a serial run) sees the whole run; a worker only its share
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if in_ci() and not worker and (found := _evoround_containers()) is not None:
        session.stash[_BEFORE] = found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI the whole run must leave no container behind, not only each test that checks:
    a test that forgets to close its provider leaks the spare it prestarted."""
    if (before := session.stash.get(_BEFORE, None)) is None:
        return
    deadline = time.monotonic() + 30  # removals a provider started in the background
    while (left := (_evoround_containers() or set()) - before) and time.monotonic() < deadline:
        time.sleep(1)
    if left:
        print(f"\nthe test run left {len(left)} evoround container(s): {sorted(left)[:10]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# The fast tier (``-m "not slow"``, a few minutes on 2 cores) leaves out every test that
# needs the Docker engine (marked ``docker``, or given that mark by its ``docker_client``
# fixture) and the files below, measured slowest without Docker (docs/testing.md has the
# numbers). CI runs everything.
SLOW_FILES = {
    "tests/adversarial/test_redteam.py",  # a whole job per attack
    "tests/verifiers/test_false_alarms.py",  # each honest suite graded three times
}


# Files that keep one worker longest, longest first (docs/testing.md, "Where the time
# goes"): they run before every other file, so the last files of a run are short ones and
# the two workers end together. With --dist loadfile a worker takes its next file when two
# tests of its current one are left; a long file taken last (xdist's own order is by number
# of tests, which put files of a few long tests such as the cluster's at the end) leaves
# the other worker idle. scripts/test.sh passes --no-loadscope-reorder so this order holds.
LONGEST_FIRST = [
    "tests/adversarial/test_redteam.py",
    "tests/verifiers/test_false_alarms.py",
    "tests/engine/test_cluster.py",
    "tests/engine/test_resume_kill.py",
    "tests/scaffolds/test_harbor.py",
    "tests/engine/test_invariance.py",
    "tests/sandboxes/test_conformance.py",
    "tests/engine/test_validate.py",
    "tests/sandboxes/test_docker_sandbox.py",
    "tests/architecture/test_house_rules.py",
    "tests/verifiers/test_twins.py",
    "tests/cli/test_bad_input.py",
    "tests/cli/test_malformed_sweep.py",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "docker: needs the Docker engine")
    config.addinivalue_line(
        "markers", "slow: not in the fast tier (-m 'not slow'); Docker tests and slow files"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        docker = item.get_closest_marker("docker") is not None
        if "docker_client" in getattr(item, "fixturenames", ()) and not docker:
            item.add_marker(pytest.mark.docker)
            docker = True
        if docker or item.path.relative_to(root).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    # a stable sort: each file's own order, and the other files' order, are kept
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))


# A skip whose reason matches one of these is a tool missing on this machine, not a test
# that does not apply: the end of the run names each, with the command that installs it.
# scripts/test.sh installs all of them but Docker itself (what CI runs).
MISSING_TOOLS: list[tuple[str, str, str]] = [
    (r"Docker engine unavailable", "Docker engine", "install Docker Engine and start dockerd"),
    (r"base image \S+ missing", "offline base image", "evoround images bootstrap"),
    (r"bubblewrap does not work", "bubblewrap", "apt-get install -y bubblewrap"),
    (r"no writable cgroup", "writable cgroup v2", "run as root on a cgroup v2 host"),
    (r"chromium not installed", "Chromium", "apt-get install -y chromium"),
    (r"no tmux", "tmux", "apt-get install -y tmux"),
    (r"Harbor .* not installed|install-harbor", "Harbor's interpreter", "evoround install-harbor"),
    (r"install-proxy|proxy venv", "LiteLLM proxy", "evoround install-proxy"),
    (r"no `evoround` script", "the evoround script", "pip install -e '.[dev]'"),
]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, "Skipped: why")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def missing_tools(reports: list[pytest.TestReport]) -> Counter[tuple[str, str]]:
    """How many skipped tests each missing tool accounts for: (tool, install command)."""
    found: Counter[tuple[str, str]] = Counter()
    for report in reports:
        reason = _skip_reason(report)
        for pattern, tool, command in MISSING_TOOLS:
            if re.search(pattern, reason):
                found[tool, command] += 1
                break
    return found


def pytest_terminal_summary(terminalreporter, exitstatus: int) -> None:  # noqa: ANN001
    """Outside CI a test that needs Docker (or bubblewrap, Chromium...) skips, which a
    green run would hide among its dots: say what did not run and how to get it."""
    found = missing_tools(terminalreporter.stats.get("skipped", []))
    if not found:
        return
    tr = terminalreporter
    tr.write_sep("=", f"{sum(found.values())} tests skipped for a missing tool", yellow=True)
    for (tool, command), n in found.most_common():
        tr.write_line(f"{n:5d} need {tool}: {command}")
    tr.write_line(
        "scripts/test.sh installs all but Docker itself and runs the full suite, as CI does"
    )


def write_task(
    root: Path,
    name: str = "tiny",
    *,
    rounds: int = 2,
    environment: str = "",
    dockerfile: str | None = DOCKERFILE,
    workspace: dict[str, str | bytes] | None = None,
) -> Path:
    """A minimal valid task: round i adds ``f{i}()`` to calc.py and a test for it."""
    task = root / name
    (task / "rounds").mkdir(parents=True)
    toml = f'[task]\nname = "{name}"\nactivity = "construction"\n'
    if environment:
        toml += "\n[environment]\n" + textwrap.dedent(environment)
    for i in range(1, rounds + 1):  # the loader wants one table per round folder
        toml += f'\n[[rounds]]\ntitle = "Add f{i}"\nchange_types = ["extension"]\n'
    (task / "task.toml").write_text(toml)
    if dockerfile is not None:
        (task / "environment").mkdir()
        (task / "environment" / "Dockerfile").write_text(dockerfile)
    ws = task / "workspace"
    ws.mkdir()
    for rel, content in (workspace or {"README.md": "tiny task\n"}).items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode() if isinstance(content, str) else content)
    for i in range(1, rounds + 1):
        d = task / "rounds" / f"{i:02d}"
        (d / "solution").mkdir(parents=True)
        (d / "tests").mkdir()
        (d / "instruction.md").write_text(f"Add f{i}() returning {i} to calc.py.\n")
        (d / "solution" / "solve.sh").write_text(
            f"printf 'def f{i}():\\n    return {i}\\n\\n' >> calc.py\n"
        )
        (d / "tests" / f"test_r{i}.py").write_text(
            f"from calc import f{i}\n\n\ndef test_f{i}():\n    assert f{i}() == {i}\n"
        )
    return task


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """``make_task(name=..., rounds=..., environment=..., dockerfile=..., workspace=...)``."""
    return lambda **kw: write_task(tmp_path / "tasks", **kw)
