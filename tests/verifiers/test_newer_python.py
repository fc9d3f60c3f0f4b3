"""The verifier on a newer Python than the engine's: Debian trixie's 3.13 with PyPI's pytest.

Real tasks name ``python:3.12-slim`` and newer; the base image here is bookworm's 3.11, so
everything else in the suite grades on 3.11, while the runner leans on interpreter details
(fork with threads alive, which 3.12+ warns about; ``unittest`` and ``_pytest`` internals
it watches; a newer pytest's reports). Trixie's root filesystem is already on the machine
(``evoround install-harbor`` builds it for Harbor); imported into Docker with pytest added,
it stands in for ``python:3.12-slim``. A few honest suites must raise no alarm there and a
few forgeries must still be caught (the full false-alarm and forgery sets were run this way
by hand).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import docker
import pytest

from evoround.sandboxes.docker import DockerProvider
from evoround.settings import evoround_home
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import _guard, run_pytest
from tests.adversarial.attacks import ATTACKS
from tests.adversarial.conditional import CONDITIONAL
from tests.adversarial.targeted import TARGETED
from tests.conftest import in_ci
from tests.helpers import COUNTER
from tests.verifiers.test_false_alarms import BAD, OK, V

pytestmark = pytest.mark.docker

IMAGE = "evoround-test-py313"
"""Built once per Harbor version (its rootfs) and kept, like the other test images."""
HONEST = ("werror_session_threads", "filterwarnings_conftest", "mp", "sigchld_reap", "subtests")
FORGED = {
    "runtest_noop": ATTACKS["runtest_noop"],
    "report_factory": ATTACKS["report_factory"],
    "cond_plugin": CONDITIONAL["cond_plugin"],
    "first_call_reader": TARGETED["first_call_reader"],
}


@pytest.fixture(scope="module")
def py313(docker_client, tmp_path_factory: pytest.TempPathFactory) -> str:
    from evoround.scaffolds.harbor import harbor_root, harbor_version

    rootfs = harbor_root(evoround_home()) / "rootfs"
    if not (rootfs / "usr/bin/python3.13").exists():
        msg = f"no trixie root filesystem at {rootfs}: run `evoround install-harbor`"
        if in_ci():
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    image = f"{IMAGE}:harbor-{harbor_version()}"
    with contextlib.suppress(docker.errors.ImageNotFound):
        docker_client.images.get(image)
        return image
    ctx = tmp_path_factory.mktemp("py313")
    site = ctx / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(site),
         "--python-version", "3.13", "--only-binary=:all:", "--no-compile", "pytest"],
        check=True, capture_output=True,
    )  # fmt: skip
    raw = f"{IMAGE}:raw-{uuid.uuid4().hex[:8]}"
    tar = subprocess.Popen(
        ["tar", "-C", str(rootfs), "-c", "--exclude=./opt", "--exclude=./proc",
         "--exclude=./sys", "--exclude=./dev", "."],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    imported = subprocess.run(["docker", "import", "-", raw], stdin=tar.stdout, capture_output=True)
    tar.wait()
    assert imported.returncode == 0 and tar.returncode == 0, imported.stderr
    (ctx / "Dockerfile").write_text(
        f"FROM {raw}\nCOPY site /usr/local/lib/python3.13/dist-packages\nWORKDIR /workspace\n"
    )
    try:
        docker_client.images.build(path=str(ctx), tag=image, rm=True, forcerm=True)
    finally:
        docker_client.images.remove(raw, force=True)
    return image


def _grade(
    tmp_path: Path, image: str, files: dict[str, str], module: str, args: list[str] | None = None
):
    task_dir = tmp_path / "task"
    if not task_dir.exists():
        shutil.copytree(COUNTER, task_dir)
        if files:
            tests = task_dir / "rounds/01/tests"
            shutil.rmtree(tests)
            tests.mkdir()
            for name, text in files.items():
                (tests / name).write_text(text, encoding="utf-8")
    task = load_task(task_dir)
    provider = DockerProvider(
        SnapshotStore(tmp_path / "store"),
        job=f"py313-{uuid.uuid4().hex[:8]}",
        base_image_map={"python:3.12-slim": image},
    )
    # closing the provider removes the spare container it prestarted for the next create
    with provider, provider.create(task, "t/verify") as sb:
        version = sb.exec(["python3", "-c", "import sys; print(sys.version_info[:2])"])
        assert version.stdout.strip() == "(3, 13)", version
        sb.write_file("counter.py", module)
        return run_pytest(sb, active_tests(task, 1), 1, timeout=60, extra_args=args)


@pytest.mark.parametrize("name", HONEST)
def test_honest_suites_raise_no_alarm_on_python_313(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, py313: str, name: str
) -> None:
    monkeypatch.setattr(_guard, "HARNESS_FLOOR", 1.0)
    var = V[name]
    files = var["tests"]  # type: ignore[assignment]
    extra, args = str(var["extra"]), list(var["args"])  # type: ignore[call-overload]
    ok = _grade(tmp_path, py313, files, OK + extra, args)  # type: ignore[arg-type]
    assert (ok.passed, ok.integrity) == (True, []), ok.problems
    bad = _grade(tmp_path, py313, files, BAD + extra, args)  # type: ignore[arg-type]
    assert (bad.passed, bad.integrity) == (False, []), bad.problems


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forgeries_are_caught_on_python_313(tmp_path: Path, py313: str, name: str) -> None:
    res = _grade(tmp_path, py313, {}, FORGED[name])
    assert not res.passed
    assert res.integrity, (res.problems, res.tests)
