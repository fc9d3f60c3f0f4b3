"""Docker images for tasks: an offline base image and content-hashed task images.

Why this module exists:

- There may be no container registry (air-gapped machines, CI). The base image is
  therefore built locally from Debian packages (``debootstrap`` + ``docker import``)
  by :func:`bootstrap_base_image`, which is idempotent: it returns at once when the
  tag exists.
- A task's own ``FROM`` is used whenever that image is on this machine (or can be
  pulled). Substituting a local image is explicit: ``--base-image-map FROM=LOCAL``
  (:func:`resolve_bases`), or a Dockerfile that itself takes its base as a build arg
  (``ARG BASE_IMAGE=python:3.12-slim`` / ``FROM ${BASE_IMAGE}``, the bundled tasks), to
  which evoround passes its local base when the declared default is not here. Every
  substitution is recorded in job.json and shown in the report; a task whose base cannot
  be had fails before any attempt, naming the image and the two fixes. The classic
  builder with ``pull=False`` resolves a local tag without touching a registry.
- A task image is tagged by a hash of its build context, Dockerfile path, build args
  and the *id* of the base image (rebuilding the base invalidates task images). An
  existing tag is reused; a file lock makes concurrent attempts build it once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from evoround.fileio import file_lock
from evoround.settings import settings
from evoround.tasks import Task

DEFAULT_BASE_IMAGE = "evoround-base:bookworm"
"""Tag of the locally bootstrapped base image (override with ``EVOROUND_BASE_IMAGE``)."""

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-pytest", "git", "bash", "coreutils", "procps")
"""What every sandbox needs: pytest for the verifier, git/bash/coreutils for agents
(``timeout`` from coreutils wraps every exec), procps so agents can see processes."""

ENV_REPOSITORY = "evoround-env"
HASH_VERSION = "1"
"""Bump to invalidate every cached task image when the hashing scheme changes."""

ROLE_LABEL = "evoround.role"
"""Label on every image evoround makes: ``base``, ``env`` or ``snapshot``."""

Log = Callable[[str], None]


class ImageError(RuntimeError):
    """An image could not be built or found; the message says what to do."""


def _noop(_: str) -> None:
    pass


def default_base_image() -> str:
    return settings().base_image or DEFAULT_BASE_IMAGE


_ARG_DEFAULT = re.compile(r"^\s*ARG\s+BASE_IMAGE(?:=(\S+))?\s*$", re.M | re.I)
_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)((?:\s+AS\s+(\S+))?)", re.M | re.I)


@dataclass(frozen=True)
class BaseChoice:
    """Which image one ``FROM`` (or ``environment.image``) of a task resolves to, and why."""

    wanted: str
    """The task's own image: a ``FROM``, ``ARG BASE_IMAGE``'s default, or environment.image."""
    used: str
    via: str
    """``own`` (the task's own image), ``map`` (``--base-image-map``) or ``build-arg``
    (a ``FROM ${BASE_IMAGE}`` Dockerfile given evoround's local base)."""
    build_arg: bool
    """The Dockerfile takes ``BASE_IMAGE``: pass ``used`` as that build arg (else rewrite FROM)."""

    def describe(self) -> str:
        return self.wanted if self.via == "own" else f"{self.wanted} -> {self.used} ({self.via})"


def dockerfile_bases(text: str) -> list[tuple[str | None, bool]]:
    """Every external base of a Dockerfile, in order: (image, is the ``BASE_IMAGE`` build arg).

    A ``FROM`` naming an earlier stage (``FROM build``) is not external."""
    stages: set[str] = set()
    out: list[tuple[str | None, bool]] = []
    for m in _FROM.finditer(text):
        ref, alias = m.group(3), m.group(5)
        if ref.lower() not in stages:
            if ref.strip("${}") == "BASE_IMAGE":
                d = _ARG_DEFAULT.search(text)
                item: tuple[str | None, bool] = (d.group(1) if d and d.group(1) else None, True)
            else:
                item = (ref, False)
            if item not in out:
                out.append(item)
        if alias:
            stages.add(alias.lower())
    return out


def dockerfile_base(text: str) -> tuple[str | None, bool]:
    """The first stage's base (see :func:`dockerfile_bases`)."""
    bases = dockerfile_bases(text)
    return bases[0] if bases else (None, False)


def _present_or_pulled(client: docker.DockerClient, ref: str) -> bool:
    if image_id(client, ref) is not None:
        return True
    try:  # a machine with a registry: the task's own image, as published
        client.images.pull(ref)
    except (docker.errors.APIError, docker.errors.ImageNotFound, ValueError):
        return False
    return image_id(client, ref) is not None


def _choose(
    client: docker.DockerClient,
    task: Task,
    wanted: str,
    takes_arg: bool,
    mapping: dict[str, str],
    default: str,
    where: str,
) -> BaseChoice:
    if wanted in mapping:
        local = mapping[wanted]
        if image_id(client, local) is None:
            raise ImageError(
                f"--base-image-map {wanted}={local}: image {local!r} is not on this machine"
            )
        return BaseChoice(wanted, local, "map", takes_arg)
    if _present_or_pulled(client, wanted):
        return BaseChoice(wanted, wanted, "own", takes_arg)
    if takes_arg:
        if image_id(client, default) is not None:
            return BaseChoice(wanted, default, "build-arg", True)
        raise ImageError(
            f"task {task.name}: neither its base {wanted!r} nor evoround's base {default!r} "
            "(given as ARG BASE_IMAGE) is on this machine: run `evoround images bootstrap`, "
            f"or --base-image-map {wanted}=LOCAL_IMAGE"
        )
    raise ImageError(
        f"task {task.name}: image {wanted!r} ({where}) is not on this machine and cannot be "
        f"pulled: build or load it (docker build/load -t {wanted}), or run with "
        f"--base-image-map {wanted}=LOCAL_IMAGE (e.g. {default})"
    )


def resolve_bases(
    client: docker.DockerClient,
    task: Task,
    base_image_map: dict[str, str] | None = None,
    default_base: str | None = None,
) -> list[BaseChoice]:
    """Every image a task's sandbox is built from, resolved (empty: no Dockerfile and no
    ``environment.image``). Raises :class:`ImageError` in one line when one cannot be had."""
    env = task.config.environment
    default = default_base or default_base_image()
    mapping = base_image_map or {}
    if env.image:
        return [_choose(client, task, env.image, False, mapping, default, "environment.image")]
    dockerfile = task.path / env.dockerfile if env.dockerfile else None
    if dockerfile is None or not dockerfile.is_file():
        return []
    out: list[BaseChoice] = []
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    for wanted, takes_arg in dockerfile_bases(text):
        if wanted is None:  # ARG BASE_IMAGE without a default: evoround's base is the choice
            out.append(BaseChoice("${BASE_IMAGE}", default, "build-arg", True))
        else:
            out.append(_choose(client, task, wanted, takes_arg, mapping, default, str(dockerfile)))
    return out


def resolve_base(
    client: docker.DockerClient,
    task: Task,
    base_image_map: dict[str, str] | None = None,
    default_base: str | None = None,
) -> BaseChoice | None:
    """The first of :func:`resolve_bases` (None when there is none)."""
    choices = resolve_bases(client, task, base_image_map, default_base)
    return choices[0] if choices else None


def connect(timeout: int = 600) -> docker.DockerClient:
    """A client for the local engine; raises :class:`ImageError` with a hint if unreachable."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as e:  # DockerException, connection refused, permission denied
        raise ImageError(
            f"cannot reach the Docker engine ({e}); is dockerd running and DOCKER_HOST right?"
        ) from e
    return client


def image_id(client: docker.DockerClient, ref: str) -> str | None:
    """The id of a local image, or None (never pulls)."""
    try:
        return str(client.api.inspect_image(ref)["Id"])
    except docker.errors.ImageNotFound:
        return None


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "evoround-locks"


# ---- base image ----------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    tag: str
    image_id: str
    built: bool
    seconds: float = 0.0


def _run(argv: list[str], log: Log) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise ImageError(f"{' '.join(argv[:3])} ... exited {proc.returncode}:\n{tail}")
    log(f"$ {' '.join(argv[:4])} ... ok")


def _ensure_debootstrap(log: Log) -> str:
    found = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None
    )
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log("debootstrap not found; installing it with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (["apt-get", "update"], ["apt-get", "install", "-y", "debootstrap"]):
            proc = subprocess.run(argv, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise ImageError(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
        found = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
        if os.path.exists(found):
            return found
    raise ImageError(
        "debootstrap is needed to build the base image offline: "
        "`apt-get install debootstrap` (as root), or pass --rootfs-tar with a prebuilt rootfs"
    )


def trim_rootfs(root: Path) -> None:
    """Drop package caches and docs from a debootstrapped root: nothing a sandbox or a tool
    interpreter needs (the base image and Harbor's interpreter both use it)."""
    for rel in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
        d = root / rel
        if d.is_dir():
            for child in d.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        child.unlink()


IMPORT_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    # Without a UTF-8 locale Python would mangle unicode file names in the workspace.
    "ENV LANG=C.UTF-8",
    "WORKDIR /workspace",
    'CMD ["/bin/bash"]',
)


def split_tag(ref: str) -> tuple[str, str]:
    """``repo[:tag]`` -> (repo, tag), minding registry ports (``host:5000/repo``)."""
    name = ref.rsplit("/", 1)[-1]
    if ":" in name:
        repo, _, tag = ref.rpartition(":")
        return repo, tag
    return ref, "latest"


def _import_tar(client: docker.DockerClient, tar_stream: Any, tag: str, suite: str) -> str:
    repo, tg = split_tag(tag)
    changes = [*IMPORT_CHANGES, f"LABEL {ROLE_LABEL}=base evoround.suite={suite}"]
    # A generator goes chunked (stream_src); a file object is sent with its length.
    client.api.import_image(
        src=tar_stream,
        repository=repo,
        tag=tg,
        changes=changes,
        stream_src=not hasattr(tar_stream, "read"),
    )
    found = image_id(client, tag)
    if found is None:
        raise ImageError(f"docker import did not produce {tag}")
    return found


def bootstrap_base_image(
    client: docker.DockerClient | None = None,
    *,
    tag: str = DEFAULT_BASE_IMAGE,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    packages: tuple[str, ...] = BASE_PACKAGES,
    rootfs_tar: Path | None = None,
    force: bool = False,
    log: Log = _noop,
    lock_dir: Path | None = None,
) -> BootstrapResult:
    """Build the local base image without any registry; a no-op when ``tag`` exists.

    With ``rootfs_tar`` (a tarball of a root filesystem made elsewhere, for machines
    without even a Debian mirror) the tarball is imported as is. Otherwise a minimal
    Debian is debootstrapped from ``mirror`` (``EVOROUND_DEBIAN_MIRROR`` or
    deb.debian.org), trimmed, and streamed into ``docker import``.
    """
    import time

    client = client or connect()
    with file_lock(lock_dir or default_lock_dir(), "base-image"):
        existing = image_id(client, tag)
        if existing and not force:
            return BootstrapResult(tag=tag, image_id=existing, built=False)
        start = time.monotonic()
        if rootfs_tar is not None:
            log(f"importing {rootfs_tar} as {tag}")
            with open(rootfs_tar, "rb") as f:
                new_id = _import_tar(client, f, tag, suite)
            return BootstrapResult(tag, new_id, True, time.monotonic() - start)
        if os.geteuid() != 0:
            raise ImageError("debootstrap needs root; run `evoround images bootstrap` as root")
        debootstrap = _ensure_debootstrap(log)
        mirror = mirror or settings().debian_mirror or DEFAULT_MIRROR
        work = Path(tempfile.mkdtemp(prefix="evoround-rootfs-", dir="/var/tmp"))
        rootfs = work / "rootfs"
        try:
            log(f"debootstrap {suite} from {mirror} (about a minute)")
            _run(
                [
                    debootstrap,
                    "--variant=minbase",
                    f"--include={','.join(packages)}",
                    suite,
                    str(rootfs),
                    mirror,
                ],
                log,
            )
            trim_rootfs(rootfs)
            (rootfs / "workspace").mkdir(exist_ok=True)
            log(f"docker import -> {tag}")
            tar = subprocess.Popen(
                ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            out, err = tar.stdout, tar.stderr
            assert out is not None and err is not None  # both asked for as pipes
            try:
                new_id = _import_tar(client, iter(lambda: out.read(1 << 20), b""), tag, suite)
            finally:
                out.close()
                tar.wait()
            if tar.returncode != 0:
                raise ImageError(f"tar of the rootfs failed: {err.read()!r}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return BootstrapResult(tag, new_id, True, time.monotonic() - start)


# ---- task images ---------------------------------------------------------------


def _context_files(context: Path) -> list[Path]:
    out = []
    for p in sorted(context.rglob("*")):
        if p.is_file() or p.is_symlink():
            out.append(p)
    return out


def context_hash(context: Path, dockerfile: str, buildargs: dict[str, str], base_id: str) -> str:
    """sha256 over the build context (paths, exec bits, bytes), Dockerfile, args, base id."""
    h = hashlib.sha256()
    h.update(f"v{HASH_VERSION}\0{dockerfile}\0{base_id}\0".encode())
    for k in sorted(buildargs):
        h.update(f"arg:{k}={buildargs[k]}\0".encode())
    for p in _context_files(context):
        rel = p.relative_to(context).as_posix()
        if p.is_symlink():
            h.update(f"link:{rel}->{os.readlink(p)}\0".encode())
            continue
        mode = "x" if os.access(p, os.X_OK) else "-"
        h.update(f"file:{rel}:{mode}\0".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class TaskImage:
    ref: str
    image_id: str
    built: bool
    """False when an existing image was reused."""


def ensure_base_image(client: docker.DockerClient, base_image: str) -> str:
    """The id of the base image; a clear error when the default base was never bootstrapped."""
    found = image_id(client, base_image)
    if found is None:
        raise ImageError(
            f"base image {base_image!r} is not on this machine and there is no registry: "
            "run `evoround images bootstrap` (or set EVOROUND_BASE_IMAGE to a local image)"
        )
    return found


def ensure_task_image(
    client: docker.DockerClient,
    task: Task,
    *,
    base_image: str | None = None,
    lock_dir: Path | None = None,
    log: Log = _noop,
    base_image_map: dict[str, str] | None = None,
) -> TaskImage:
    """The image a task's sandboxes start from: built once per content hash, then reused.

    ``environment.image`` names a ready image (used as is, never pulled). Without a
    Dockerfile the base image itself is the environment.
    """
    env = task.config.environment
    base = base_image or default_base_image()
    choices = resolve_bases(client, task, base_image_map, base)
    if env.image:
        image = choices[0].used
        return TaskImage(image, ensure_base_image(client, image), built=False)
    dockerfile = task.path / env.dockerfile if env.dockerfile else None
    if dockerfile is None or not dockerfile.is_file():
        return TaskImage(base, ensure_base_image(client, base), built=False)
    plan = _plan_build(client, task, dockerfile, choices, base)
    found = image_id(client, plan.ref)
    if found:
        return TaskImage(plan.ref, found, built=False)
    with file_lock(lock_dir or default_lock_dir(), f"image-{plan.digest[:32]}"):
        found = image_id(client, plan.ref)  # someone else built it while we waited
        if found:
            return TaskImage(plan.ref, found, built=False)
        log(f"building {plan.ref} from {dockerfile}")
        with _build_context(plan) as build_dir:
            _build(client, task, plan, build_dir)
        found = image_id(client, plan.ref)
        if found is None:
            raise ImageError(f"build of {plan.ref} reported success but the image is missing")
        return TaskImage(plan.ref, found, built=True)


@dataclass(frozen=True)
class _BuildPlan:
    """What a task image is built from, and the tag its content hash gives it."""

    context: Path
    dockerfile: str
    buildargs: dict[str, str]
    rewrites: dict[str, str]
    """``FROM`` images an explicit ``--base-image-map`` replaces (wanted -> used)."""
    digest: str
    ref: str


def _plan_build(
    client: docker.DockerClient,
    task: Task,
    dockerfile: Path,
    choices: list[BaseChoice],
    base: str,
) -> _BuildPlan:
    """The build's inputs and its tag: the hash covers the context, the build arguments,
    every rewritten ``FROM`` and the base images' ids, so a changed base rebuilds."""
    arg = next((c for c in choices if c.build_arg), None)
    rewrites = {c.wanted: c.used for c in choices if not c.build_arg and c.used != c.wanted}
    base_ids = [ensure_base_image(client, c.used) for c in choices] or [
        ensure_base_image(client, base)
    ]
    buildargs = {"BASE_IMAGE": arg.used if arg else base}
    hashed = dict(buildargs)
    for k, v in sorted(rewrites.items()):
        hashed[f"evoround-from:{k}"] = v  # in the hash only: a rewritten FROM
    digest = context_hash(dockerfile.parent, dockerfile.name, hashed, ",".join(base_ids))
    ref = f"{ENV_REPOSITORY}/{task.name}:{digest[:20]}"
    return _BuildPlan(dockerfile.parent, dockerfile.name, buildargs, rewrites, digest, ref)


@contextlib.contextmanager
def _build_context(plan: _BuildPlan) -> Iterator[Path]:
    """The folder to build from: the task's own context, or, when an explicit
    ``--base-image-map`` rewrites a plain ``FROM X``, a temporary copy whose Dockerfile
    names the local image (the task's files stay as is)."""
    if not plan.rewrites:
        yield plan.context
        return
    tmp = tempfile.mkdtemp(prefix="evoround-ctx-")
    try:  # from here on: a full disk while copying leaves no half copy behind either
        build_dir = Path(tmp) / "ctx"
        shutil.copytree(plan.context, build_dir, symlinks=True)
        text = (build_dir / plan.dockerfile).read_text(encoding="utf-8")
        text = _FROM.sub(
            lambda m: (
                m.group(1) + m.group(2) + plan.rewrites.get(m.group(3), m.group(3)) + m.group(4)
            ),
            text,
        )
        (build_dir / plan.dockerfile).write_text(text, encoding="utf-8")
        yield build_dir
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build(client: docker.DockerClient, task: Task, plan: _BuildPlan, build_dir: Path) -> None:
    """Run the build to its end; a failure is an :class:`ImageError` with the log's tail."""
    lines: list[str] = []
    failure: str | None = None
    try:
        for chunk in client.api.build(
            path=str(build_dir),
            dockerfile=plan.dockerfile,
            tag=plan.ref,
            buildargs=plan.buildargs,
            pull=False,
            rm=True,
            forcerm=True,
            decode=True,
            labels={
                ROLE_LABEL: "env",
                "evoround.task": task.name,
                "evoround.context_hash": plan.digest,
            },
        ):
            if "stream" in chunk:
                lines.append(str(chunk["stream"]))
            if "error" in chunk and failure is None:
                # Keep reading to the end: the daemon removes the failed step's
                # container (forcerm) only after it sent the error; hanging up now
                # would leave that container behind.
                failure = str(chunk["error"])
    except docker.errors.APIError as e:
        raise ImageError(f"building {task.name}'s image failed: {e}" + _build_hint(str(e))) from e
    if failure is not None:
        raise ImageError(
            f"building {task.name}'s image failed: {failure}\n"
            + "".join(lines)[-2000:]
            + _build_hint(failure)
        )


def _build_hint(error: str) -> str:
    if "pull access denied" in error or "no such host" in error or "manifest" in error:
        return (
            "\nhint: nothing can be pulled here; build or load the image locally, or map it "
            "to a local one with --base-image-map FROM=LOCAL"
        )
    return ""
