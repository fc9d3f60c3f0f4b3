"""Installing the LiteLLM proxy that ``--proxy`` runs, once, with its progress shown.

The proxy's dependencies (FastAPI, uvicorn, boto3, ...) pin versions that clash with the
agents' (rich), so it lives in its own venv under ``$EVOROUND_HOME/tools``, built on first
use (or by ``evoround install-proxy``) with the same LiteLLM version as ours; it needs the
package index once (``EVOROUND_PROXY_PYTHON`` points at an existing one instead). The
``proxy`` extra is installed requirement by requirement, because from 1.110.0 on it names
a ``litellm-proxy`` that is not on PyPI.

An install takes minutes (pip resolves and downloads some sixty packages), so it is never
silent: a line per step with the time since it began, and while pip runs a line every
:data:`HEARTBEAT_SEC` seconds, on a terminal or in a CI log alike.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from evoround.fileio import atomic_write, file_lock
from evoround.settings import settings

HEARTBEAT_SEC = 30.0
"""While a step runs, a line this often says it still does (and for how long)."""

Say = Callable[[str], None]


class ProxyError(RuntimeError):
    """The proxy could not be installed or started."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Steps:
    """The install's progress: ``evoround: [m:ss] what``, m:ss since the install began."""

    def __init__(self, say: Say = _stderr, heartbeat: float = HEARTBEAT_SEC) -> None:
        self.say = say
        self.heartbeat = heartbeat
        self.t0 = time.monotonic()

    def clock(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}:{s % 60:02d}"

    def __call__(self, what: str) -> None:
        self.say(f"evoround: [{self.clock()}] {what}")

    def run(self, argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
        """``argv`` to its end, its output captured; ``what`` said when it starts, every
        ``heartbeat`` seconds while it runs and when it ends (with how long it took)."""
        self(f"{what} ...")
        t = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while True:
            try:
                out, err = proc.communicate(timeout=self.heartbeat)
                break
            except subprocess.TimeoutExpired:  # no output is lost: communicate goes on
                self(f"{what}: still running ({time.monotonic() - t:.0f} s)")
        ok = "done" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        self(f"{what}: {ok} in {time.monotonic() - t:.1f} s")
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def litellm_version() -> str:
    """The proxy runs the same litellm as evoround; without it (a lean install) there is
    no version to pin."""
    try:
        return importlib.metadata.version("litellm")
    except importlib.metadata.PackageNotFoundError:
        raise ProxyError(
            "the LiteLLM proxy needs litellm: pip install 'evoround[models]'"
        ) from None


def proxy_python(home: Path, say: Say = _stderr) -> Path:
    """A Python with ``litellm[proxy]``: ``EVOROUND_PROXY_PYTHON`` or a venv built once
    (its progress told through ``say``, a line at a time)."""
    env = settings().proxy_python
    if env:
        if not os.access(env, os.X_OK):
            raise ProxyError(f"EVOROUND_PROXY_PYTHON={env} is not an executable Python")
        return Path(env)
    version = litellm_version()
    root = home / "tools" / f"litellm-proxy-{version}"
    marker = root / ".installed"
    if not marker.exists():
        with file_lock(home / "tools", f"litellm-proxy-{version}"):
            if not marker.exists():
                _install(root, version, Steps(say))
    return root / "bin" / "python"


def _install(root: Path, version: str, steps: Steps) -> None:
    """The venv, litellm[proxy] into it, the check that the proxy imports: three steps."""
    shutil.rmtree(root, ignore_errors=True)
    python = root / "bin" / "python"
    steps(f"installing the LiteLLM proxy {version} into {root} (one time, a few minutes)")
    _run_or_fail(steps, [sys.executable, "-m", "venv", str(root)], "step 1/3: venv")
    _pip_install_proxy(python, version, steps)
    _run_or_fail(
        steps, [str(python), "-c", "import litellm.proxy.proxy_cli"], "step 3/3: import check"
    )
    atomic_write(root / ".installed", version)
    steps(f"the LiteLLM proxy {version} is installed")


def proxy_requirements() -> list[str]:
    """``litellm[proxy]`` spelled out: our litellm pinned plus each requirement of its
    ``proxy`` extra that applies here, so that one of them can be left out (below)."""
    from packaging.requirements import Requirement

    reqs = [f"litellm=={litellm_version()}"]
    for line in importlib.metadata.requires("litellm") or []:
        req = Requirement(line)
        marker = req.marker
        if marker and marker.evaluate({"extra": "proxy"}) and not marker.evaluate({"extra": ""}):
            reqs.append(str(req).split(";")[0].strip())
    return reqs


_NOT_ON_INDEX = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-]+)")


def _pip_install_proxy(python: Path, version: str, steps: Steps | None = None) -> None:
    """Why not ``pip install litellm[proxy]``: since 1.110.0 the extra names a
    ``litellm-proxy`` distribution that PyPI does not carry (the proxy's code still ships
    inside the litellm wheel), so the extra cannot be resolved at all. A requirement pip
    finds no distribution of is dropped, with a line saying so, and the install retried;
    the import check after it tells whether the proxy works without it."""
    steps = steps or Steps()
    reqs = proxy_requirements()
    for n in range(1, len(reqs) + 1):
        argv = [str(python), "-m", "pip", "install", "-q", *reqs]
        what = f"step 2/3: pip install litellm=={version} and {len(reqs) - 1} requirements"
        res = steps.run(argv, what + (f" (try {n})" if n > 1 else ""))
        if res.returncode == 0:
            return
        missing = _NOT_ON_INDEX.search(res.stderr or "")
        name = _canon(missing.group(1)) if missing else ""
        dropped = [r for r in reqs[1:] if _req_name(r) == name]
        if not dropped:
            break
        steps(
            f"{dropped[0]} (from litellm[proxy]) is not on the package index; retrying without it"
        )
        reqs = [r for r in reqs if r not in dropped]
    raise ProxyError(
        f"installing the LiteLLM proxy {version} failed (pip install): "
        f"{(res.stderr or res.stdout).strip()[-800:]}"
    )


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    from packaging.requirements import Requirement

    return _canon(Requirement(req).name)


def _run_or_fail(steps: Steps, argv: list[str], what: str) -> None:
    res = steps.run(argv, what)
    if res.returncode != 0:
        raise ProxyError(
            f"installing the LiteLLM proxy failed ({' '.join(argv[:4])}...): "
            f"{(res.stderr or res.stdout).strip()[-800:]}"
        )
