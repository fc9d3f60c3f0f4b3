"""Harbor's own interpreter: built once by ``evoround install-harbor``, or named by the user.

Why a separate interpreter: every ``harbor`` release needs Python >= 3.12 and evoround
runs on 3.11 (Debian bookworm has no 3.12). Debian trixie has Python 3.13, so the
installer debootstraps a minimal trixie root under ``$EVOROUND_HOME/tools/`` and pip
installs a pinned ``harbor`` into a venv inside it (PyPI and Debian packages only; no
registry, no container image). The bridge then runs in that root through ``chroot``
(as root) or ``unshare --map-root-user --root`` (as a user, where user namespaces are
allowed). ``EVOROUND_HARBOR_PYTHON`` skips all of this: any Python >= 3.12 with harbor.

Unlike the proxy, the interpreter is never built behind the user's back on first use:
it takes minutes, needs root for debootstrap, and a run should fail with one line that
says how to get it (``HarborNotInstalled``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evoround.fileio import atomic_write, file_lock
from evoround.sandboxes.docker import trim_rootfs
from evoround.settings import settings

DEFAULT_HARBOR_VERSION = "0.24.0"
"""The pinned release (``EVOROUND_HARBOR_VERSION`` overrides). 0.25.0 requires a
``certifi`` newer than some PyPI mirrors carry."""
SUITE = "trixie"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
VENV = "/opt/harbor"
"""The venv inside the root."""
BRIDGE_DIR = "/opt/evoround"
"""Where the bridge program is placed inside the root."""
HOST_CA = "/etc/evoround/host-ca.crt"
"""The host's CA bundle, copied into the root (corporate or proxy CAs keep working)."""
BRIDGE_FILE = Path(__file__).with_name("_bridge_main.py")

Log = Callable[[str], None]


class HarborError(RuntimeError):
    """Harbor's interpreter or bridge cannot be used; the message says what to do."""


class HarborNotInstalled(HarborError):
    """No Harbor interpreter: neither built by ``install-harbor`` nor named by the user."""


def harbor_version() -> str:
    return settings().harbor_version or DEFAULT_HARBOR_VERSION


def harbor_root(home: Path) -> Path:
    return home / "tools" / f"harbor-{harbor_version()}"


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class HarborRuntime:
    """How to start a process in Harbor's interpreter."""

    python: str
    """The interpreter as the started process sees it."""
    root: Path | None = None
    """The Debian root it runs in (``None``: a host interpreter, ``EVOROUND_HARBOR_PYTHON``)."""
    bridge_dir: Path | None = None
    """Host folder the bridge program is copied to when there is no root."""

    def place_bridge(self) -> str:
        """Copy the bridge program where the interpreter can read it; its path there.

        The file name carries the content hash, so bridges of different evoround versions
        never overwrite each other's file while running.
        """
        data = BRIDGE_FILE.read_bytes()
        name = f"evoround_harbor_bridge_{hashlib.sha256(data).hexdigest()[:12]}.py"
        if self.root is not None:
            host_dir, seen_dir = self.root / BRIDGE_DIR.lstrip("/"), BRIDGE_DIR
        else:
            assert self.bridge_dir is not None
            host_dir, seen_dir = self.bridge_dir, str(self.bridge_dir)
        target = host_dir / name
        if not target.is_file() or target.read_bytes() != data:
            atomic_write(target, data)
        return f"{seen_dir}/{name}"

    def argv(self, *args: str) -> list[str]:
        if self.root is None or os.geteuid() == 0:
            return [self.python, *args]  # as root, chroot happens in preexec (see preexec)
        return ["unshare", "--map-root-user", f"--root={self.root}", "--wd=/", self.python, *args]

    def preexec(self) -> Callable[[], None]:
        root = self.root if (self.root is not None and os.geteuid() == 0) else None

        def setup() -> None:
            if root is not None:
                os.chroot(root)
                os.chdir("/")
            with contextlib.suppress(Exception):  # a SIGKILLed engine takes its bridge along
                import ctypes

                ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL

        return setup

    def env(self) -> dict[str, str]:
        """The bridge's environment: the host's, minus what points into the host's paths."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA", "PIP_"))
        }
        env.update(
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            LITELLM_LOCAL_MODEL_COST_MAP="True",  # no fetch from GitHub at import
            LITELLM_TELEMETRY="False",
            LANG="C.UTF-8",
        )
        if self.root is not None:
            env.update(PATH=f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin", HOME="/root", TMPDIR="/tmp")
            for k in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
                env.pop(k, None)
            if (self.root / HOST_CA.lstrip("/")).is_file():
                env["SSL_CERT_FILE"] = env["REQUESTS_CA_BUNDLE"] = HOST_CA
            env.pop("SSL_CERT_DIR", None)
        return env


def harbor_runtime(home: Path) -> HarborRuntime:
    """``EVOROUND_HARBOR_PYTHON``, or the root ``install-harbor`` built; else an error."""
    named = settings().harbor_python
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise HarborNotInstalled(f"EVOROUND_HARBOR_PYTHON={named} is not an executable file")
        return HarborRuntime(python=named, bridge_dir=home / "tools" / "harbor-bridge")
    root = harbor_root(home)
    if not (root / ".installed").is_file():
        raise HarborNotInstalled(
            f"Harbor {harbor_version()} is not installed: run `evoround install-harbor` "
            f"(builds it under {root}) or set EVOROUND_HARBOR_PYTHON to a Python >= 3.12 "
            "with harbor installed"
        )
    return HarborRuntime(python=f"{VENV}/bin/python", root=root / "rootfs")


# ---- install ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InstallResult:
    root: Path
    version: str
    built: bool
    seconds: float


def _run(argv: list[str], what: str, log: Log, **kw: Any) -> None:
    log(f"$ {' '.join(argv[:6])}{' ...' if len(argv) > 6 else ''}")
    try:
        res = subprocess.run(argv, capture_output=True, text=True, **kw)
    except OSError as e:
        raise HarborError(f"{what} failed: {e}") from None
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip()[-1500:]
        raise HarborError(f"{what} failed (exit {res.returncode}): {tail}")


def _host_ca_bundle() -> Path | None:
    for cand in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        os.environ.get("REQUESTS_CA_BUNDLE"),
        ssl.get_default_verify_paths().cafile,
        "/etc/ssl/certs/ca-certificates.crt",
    ):
        if cand and Path(cand).is_file():
            return Path(cand)
    return None


def _debootstrap() -> str:
    found = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None
    )
    if not found:
        raise HarborError(
            "debootstrap is needed to build Harbor's interpreter: `apt-get install debootstrap` "
            "(as root), or set EVOROUND_HARBOR_PYTHON to a Python >= 3.12 with harbor"
        )
    return found


_PASSED_THROUGH_ENV = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_DEFAULT_TIMEOUT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
"""The host's pip and proxy settings, given to pip in the root (same index, same proxy)."""


def _build_root(debootstrap: str, rootfs: Path, log: Log) -> None:
    """A minimal Debian with Python 3.13, venv and CA certificates."""
    mirror = settings().debian_mirror or DEFAULT_MIRROR
    include = f"--include={','.join(PACKAGES)}"
    argv = [debootstrap, "--variant=minbase", include, SUITE, str(rootfs), mirror]
    _run(argv, f"debootstrap {SUITE}", log)


def _copy_host_files(rootfs: Path) -> Path | None:
    """The host's CA bundle (so a proxying CA keeps working for pip) and resolv.conf (DNS
    for pip, as the host resolves); returns the bundle copied, if any."""
    ca = _host_ca_bundle()
    if ca is not None:
        dest = rootfs / HOST_CA.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ca, dest)
    with contextlib.suppress(OSError):
        shutil.copyfile("/etc/resolv.conf", rootfs / "etc" / "resolv.conf")
    return ca


def _pip_env(ca: Path | None) -> dict[str, str]:
    """The environment of every command run in the root: a clean one, plus the host's
    pip and proxy settings."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
    }
    if ca is not None:
        env["PIP_CERT"] = HOST_CA
    for k in _PASSED_THROUGH_ENV:
        if os.environ.get(k):
            env[k] = os.environ[k]
    return env


def _install_in_root(rootfs: Path, version: str, env: dict[str, str], log: Log) -> None:
    """A venv with ``harbor==version``, then a smoke import (a broken install fails here,
    not in the first attempt)."""
    chroot = [shutil.which("chroot") or "/usr/sbin/chroot", str(rootfs)]
    _run([*chroot, "python3", "-m", "venv", VENV], "creating the venv", log, env=env)
    pip = [*chroot, f"{VENV}/bin/pip", "install", "-q", f"harbor=={version}"]
    _run(pip, f"pip install harbor=={version}", log, env=env)
    smoke = [*chroot, f"{VENV}/bin/python", "-c", "import harbor.agents.factory"]
    smoke_env = {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    _run(smoke, "importing harbor", log, env=smoke_env)


def install_harbor(home: Path, *, force: bool = False, log: Log = _quiet) -> InstallResult:
    """Build Harbor's interpreter under ``$EVOROUND_HOME/tools`` (idempotent; locked).

    Steps: ``debootstrap --variant=minbase trixie`` (Python 3.13, venv, CA certificates),
    the host's CA bundle copied in (so a proxying CA keeps working for pip), a venv with
    ``pip install harbor==VERSION``, then a smoke import. The root is built beside its
    final place and renamed only when complete, so a crash never leaves a half root
    that looks installed.
    """
    version = harbor_version()
    final = harbor_root(home)
    start = time.monotonic()
    if settings().harbor_python:
        raise HarborError(
            "EVOROUND_HARBOR_PYTHON is set: evoround uses that interpreter and builds none"
        )
    with file_lock(home / "tools", f"harbor-{version}"):
        if (final / ".installed").is_file() and not force:
            return InstallResult(final, version, built=False, seconds=0.0)
        if os.geteuid() != 0:
            raise HarborError(
                "building Harbor's interpreter needs root (debootstrap, chroot); or set "
                "EVOROUND_HARBOR_PYTHON to a Python >= 3.12 with harbor installed"
            )
        debootstrap = _debootstrap()
        work = final.with_name(f"{final.name}.partial")
        shutil.rmtree(work, ignore_errors=True)
        rootfs = work / "rootfs"
        _build_root(debootstrap, rootfs, log)
        env = _pip_env(_copy_host_files(rootfs))
        _install_in_root(rootfs, version, env, log)
        trim_rootfs(rootfs)
        (work / ".installed").write_text(f"harbor {version}\n", encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)
        os.replace(work, final)
    return InstallResult(final, version, built=True, seconds=time.monotonic() - start)
