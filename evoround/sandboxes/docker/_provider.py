"""The Docker provider: task images, containers and their prestarted pool, clones from
snapshots, and the cache policy applied at close."""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
import uuid
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import Mount
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from evoround.sandboxes.common import (
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxUnavailable,
    check_content,
    remove_tree,
)
from evoround.sandboxes.docker._archive import tar_of_dir
from evoround.sandboxes.docker._bytecode import BYTECODE, ensure_bytecode
from evoround.sandboxes.docker._config import (
    BACKEND,
    LABEL,
    LABEL_ATTEMPT,
    LABEL_JOB,
    LABEL_JOB_FOLDER,
    LABEL_TASK,
    SCRATCH,
    SnapshotMode,
    is_image_locator,
    safe_name,
)
from evoround.sandboxes.docker._exec import KEEPALIVE
from evoround.sandboxes.docker._hostws import (
    HostFolder,
    ImageFacts,
    daemon_is_local,
    sweep_workspaces,
    workspaces_root,
)
from evoround.sandboxes.docker._images import (
    ROLE_LABEL,
    ImageError,
    TaskImage,
    connect,
    default_base_image,
    ensure_task_image,
    image_id,
    resolve_bases,
)
from evoround.sandboxes.docker._pool import Spare, SparePool
from evoround.sandboxes.docker._pristine import PRISTINE, PristinePython, ensure_pristine
from evoround.sandboxes.docker._sandbox import DockerSandbox
from evoround.sandboxes.docker._trees import ImageTrees
from evoround.settings import settings
from evoround.snapshots import (
    Snapshot,
    SnapshotKind,
    SnapshotStore,
    SnapshotTree,
    dir_tree,
    overlay,
)
from evoround.tasks import Task, resolve_host_env

RECYCLE_WAIT_SEC = 3.0
"""How long a clone waits for a folder being recycled that may hold its parent snapshot
(repairing and starting its container takes well under that; an agent turn is longer)."""
RECYCLE_WAIT_BYTES = 16 << 20
"""Smaller workspaces are written whole at once rather than waiting for a recycled folder."""
RECYCLE_MIN_BYTES = RECYCLE_WAIT_BYTES
"""A smaller workspace is written whole as fast as a difference: its closed folder is
recycled (a container start, the dear part) only when spares run short."""

_LIVE_PROVIDERS: weakref.WeakSet[DockerProvider] = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    """Exceptions and Ctrl-C that escape the engine still remove every container."""
    for provider in list(_LIVE_PROVIDERS):
        with contextlib.suppress(Exception):
            provider.close()


REMOVAL_WAIT_SEC = 60.0
"""How long a removal another call started is waited for before it is called a failure."""


class _StillRemoving(docker.errors.APIError):
    """The daemon is still removing the container (another call's removal)."""


class DockerProvider(SandboxProvider):
    """Creates :class:`DockerSandbox` es for one job; ``close()`` applies the cache policy.

    Cache policy: containers never outlive the provider; ``commit``-mode agent
    snapshot images are removed at :meth:`close` unless ``keep_snapshots``;
    reference snapshot images, task images and the base image are caches and stay
    (``evoround cleanup --all`` removes them). ``workspace``-mode snapshots live in
    the snapshot store and follow its lifecycle.
    """

    name = BACKEND

    def __init__(
        self,
        store: SnapshotStore,
        job: str | None = None,
        keep_snapshots: bool = False,
        *,
        base_image: str | None = None,
        snapshot_mode: SnapshotMode | str | None = None,
        prestart: bool = True,
        client: docker.DockerClient | None = None,
        log: Callable[[str], None] | None = None,
        agent_mounts: dict[str, str] | None = None,
        base_image_map: dict[str, str] | None = None,
        job_folder: str | None = None,
    ) -> None:
        self.store = store
        self.job_folder = job_folder
        """:func:`job_folder_key` of the job folder, labelled on every container, so the
        run that holds the job can remove what a lost cluster node left (None: ad hoc)."""
        self.base_image_map = dict(base_image_map or {})
        """Explicit ``FROM`` -> local image substitutions (``--base-image-map``)."""
        self.agent_mounts = dict(agent_mounts or {})
        """Host folder -> container path, bind-mounted read-only into every container: an
        agent's own files (the 370 MB ``claude`` binary) without a copy per container."""
        self.job = safe_name(job or f"adhoc-{os.getpid()}")
        self.keep_snapshots = keep_snapshots
        self.base_image = base_image or default_base_image()
        mode = snapshot_mode or settings().docker_snapshot or "workspace"
        self.snapshot_mode = SnapshotMode(mode)
        self._ws_root: Path | None = None
        """Host-folder workspaces (``workspace`` mode with a daemon on this machine)."""
        self._picked = False
        sweep_workspaces(store.root)  # what an engine killed with -9 left
        self.prestart = prestart
        self._client = client
        self._log = log or (lambda _msg: None)
        self._lock = threading.RLock()
        self._images: dict[str, TaskImage] = {}
        self._pristine: dict[str, PristinePython] = {}
        self._bytecode: dict[str, str | None] = {}
        self._workdir_empty: dict[str, bool] = {}
        owned = {LABEL: "1", LABEL_JOB: self.job, **self._folder_label()}
        self._facts = ImageFacts(lambda: self.client.api, store, owned)
        self._trees = ImageTrees(lambda: self.client.api, store, owned)
        self._live: dict[str, DockerSandbox] = {}
        self._pool = SparePool()
        self._pending: set[Future[Any]] = set()
        self._created_images: list[str] = []
        self._executor = ThreadPoolExecutor(2, thread_name_prefix="evoround-docker")
        # removals (and renames) have their own threads: a burst of closes (a task's SR rounds
        # opening one after another) does not queue behind spare starts, nor they behind it
        self._removals = ThreadPoolExecutor(2, thread_name_prefix="evoround-docker-rm")
        self._ncpu: float | None = None
        self._closed = False
        _LIVE_PROVIDERS.add(self)

    # -- engine access --
    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                self._client = connect()
            except ImageError as e:
                raise SandboxUnavailable(str(e)) from e
        if not self._picked:
            self._picked = True
            self._pick_workspace_backend(self._client)
        return self._client

    def _pick_workspace_backend(self, client: docker.DockerClient) -> None:
        """``workspace`` mode keeps workspaces in host folders when the daemon can mount them
        (it runs on this machine), else falls back to archives streamed through the API."""
        if self.snapshot_mode is SnapshotMode.workspace:
            if daemon_is_local(str(client.api.base_url)):
                self._ws_root = workspaces_root(self.store.root)
            else:
                self.snapshot_mode = SnapshotMode.archive

    @property
    def host_workspaces(self) -> bool:
        """Whether containers' workspaces are host folders (see :mod:`._hostws`)."""
        _ = self.client
        return self._ws_root is not None

    def base_images(self, tasks: list[Task]) -> dict[str, str]:
        """Before any attempt: each task's base image choice (``FROM`` or ``X -> Y (via)``).

        Raises :class:`ImageError` naming the image and the fixes when one cannot be had."""
        out: dict[str, str] = {}
        for task in tasks:
            choices = resolve_bases(self.client, task, self.base_image_map, self.base_image)
            if choices:
                out[task.name] = "; ".join(c.describe() for c in choices)
        return out

    def task_image(self, task: Task) -> TaskImage:
        """The task's image (built on first use, content-hashed, shared across runs)."""
        with self._lock:
            cached = self._images.get(task.digest)
        if cached is not None:
            return cached
        try:
            img = ensure_task_image(
                self.client,
                task,
                base_image=self.base_image,
                lock_dir=self.store.root / "locks",
                log=self._log,
                base_image_map=self.base_image_map,
            )
        except ImageError as e:
            raise SandboxUnavailable(str(e)) from e
        with self._lock:
            self._images[task.digest] = img
        return img

    def has_snapshot(self, snapshot: Snapshot) -> bool:
        """Whether a snapshot's content still exists (images may have been cleaned up)."""
        if snapshot.backend != BACKEND:
            return False
        if is_image_locator(snapshot.locator):
            return image_id(self.client, snapshot.locator) is not None
        try:
            self.store.manifest(snapshot.locator)
        except FileNotFoundError:
            return False
        return True

    def snapshot_tree(self, task: Task, snapshot: Snapshot) -> SnapshotTree | None:
        """A store manifest's files, or a commit-mode image's workdir (see :mod:`._trees`)."""
        return self._trees.tree(task, snapshot)

    def initial_tree(self, task: Task) -> SnapshotTree:
        """What the image ships in its workdir with the task's workspace copied over it
        (what :meth:`create` gives a sandbox without a snapshot)."""
        env = task.config.environment
        top = dir_tree(task.workspace_dir, max_files=env.max_workspace_files)
        shipped = self._facts.workspace(self.task_image(task).image_id, env.workdir)
        return overlay(self.store.tree(shipped), top) if shipped else top

    def pristine_python(self, task: Task) -> PristinePython | None:
        """Commit mode only: the task image's pristine tools (volume made on first use)."""
        if self.snapshot_mode is not SnapshotMode.commit:
            return None
        img = self.task_image(task)
        with self._lock:
            cached = self._pristine.get(img.image_id)
        if cached is None:
            cached = ensure_pristine(self.client, img.image_id)
            with self._lock:
                self._pristine[img.image_id] = cached
        return cached

    def bytecode_volume(self, task: Task) -> str | None:
        """The task image's read-only bytecode cache for the verifier (see ``_bytecode``),
        filled on first use; None where it cannot be made."""
        from evoround.settings import evoround_home

        img = self.task_image(task)
        with self._lock:
            if img.image_id in self._bytecode:
                return self._bytecode[img.image_id]
        volume = ensure_bytecode(self.client, img.image_id, evoround_home())
        with self._lock:
            return self._bytecode.setdefault(img.image_id, volume)

    def _bytecode_mount(self, task: Task) -> str | None:
        """Where the containers of ``task`` have its bytecode cache (None: they have none)."""
        return BYTECODE if self.bytecode_volume(task) is not None else None

    # -- containers --
    def _host_config(self, task: Task, folder: HostFolder | None = None) -> dict[str, Any]:
        env = task.config.environment
        pp = self.pristine_python(task)
        pristine = (
            [Mount(target=PRISTINE, source=pp.volume, type="volume", read_only=True)] if pp else []
        )
        cache = self.bytecode_volume(task)
        if cache is not None:  # read-only in every container: no agent can write it
            pristine.append(Mount(target=BYTECODE, source=cache, type="volume", read_only=True))
        if self._ncpu is None:
            self._ncpu = float(self.client.info().get("NCPU") or os.cpu_count() or 1)
        cpus = min(env.cpus, self._ncpu)
        return self.client.api.create_host_config(
            init=False,  # our own pid 1 (KEEPALIVE): signals from inside cannot reach it
            privileged=False,
            security_opt=["no-new-privileges:true"],
            network_mode="bridge" if env.network else "none",
            nano_cpus=int(cpus * 1e9),
            mem_limit=f"{env.memory_mb}m",
            memswap_limit=f"{env.memory_mb}m",
            pids_limit=env.pids,
            # no device nodes in a host-folder workspace (nor anywhere else)
            cap_drop=["MKNOD"] if folder is not None else None,
            mounts=[Mount(target=SCRATCH, source=None, type="volume")]
            + (
                [Mount(target=env.workdir, source=str(folder.ws), type="bind")]
                if folder is not None
                else []
            )
            + pristine
            + [
                Mount(target=dest, source=src, type="bind", read_only=True)
                for src, dest in sorted(self.agent_mounts.items())
            ],
        )

    def _folder_label(self) -> dict[str, str]:
        return {LABEL_JOB_FOLDER: self.job_folder} if self.job_folder else {}

    def _start_container(
        self, task: Task, image: str, name: str, attempt: str, folder: HostFolder | None = None
    ) -> str:
        labels = {
            LABEL: "1",
            ROLE_LABEL: "sandbox",
            LABEL_JOB: self.job,
            LABEL_TASK: task.name,
            LABEL_ATTEMPT: attempt,
            **self._folder_label(),
        }
        cname = f"evoround-{self.job}-{safe_name(name)}-{uuid.uuid4().hex[:6]}"
        api = self.client.api
        if folder is not None:
            self._facts.adopt_owner(image, task.config.environment.workdir, folder.ws)
        try:
            cid = api.create_container(
                image,
                entrypoint=["sh", "-c", KEEPALIVE, "evoround-init"],
                command=[],
                working_dir=task.config.environment.workdir,
                environment=resolve_host_env(task.config.environment.env) or None,
                labels=labels,
                name=cname,
                hostname="sandbox",
                host_config=self._host_config(task, folder),
            )["Id"]
        except docker.errors.APIError as e:
            raise SandboxUnavailable(f"cannot create a container for {name}: {e}") from e
        try:
            api.start(cid)
        except BaseException as e:
            with contextlib.suppress(Exception):
                api.remove_container(cid, force=True, v=True)
            if isinstance(e, docker.errors.APIError):
                raise SandboxUnavailable(f"cannot start the container for {name}: {e}") from e
            raise
        return str(cid)

    def _pool_key(self, task: Task, image: str) -> tuple[Any, ...]:
        env = task.config.environment
        return (
            image,
            task.name,
            env.workdir,
            env.cpus,
            env.memory_mb,
            env.pids,
            env.network,
            tuple(sorted(env.env.items())),
        )

    def _refill(self, key: tuple[Any, ...], task: Task, image: str, holds: str | None) -> None:
        """Prepare a spare in the background: started, and (host folders) holding manifest
        ``holds`` (None: empty), so a later clone writes only a difference."""
        if not self.prestart or self._closed or not self._pool.begin_fill(key, holds):
            return

        def work() -> None:
            spare: Spare | None = None
            folder = HostFolder(self._ws_root, self.job) if self._ws_root else None
            try:
                if folder is not None and holds:
                    folder.write(self.store, holds, None)
                cid = self._start_container(task, image, "spare", "spare", folder)
                spare = Spare(cid, folder)
                folder = None
            finally:
                if folder is not None:
                    self._drop(folder)
                if self._closed and spare is not None:
                    self._remove_spare(spare)
                    spare = None
                for old in self._pool.end_fill(key, holds, spare):
                    self._remove_spare(old)

        self._submit(work)

    def _remove_spare(self, spare: Spare) -> None:
        with contextlib.suppress(Exception):
            self._remove_container(spare.container_id)
        if spare.folder is not None:
            self._drop(spare.folder)

    def _submit(self, fn: Callable[[], None], *, removal: bool = False) -> bool:
        """Run ``fn`` in the background; False if that is impossible (interpreter exit)."""
        try:
            fut = (self._removals if removal else self._executor).submit(fn)
        except RuntimeError:
            return False
        with self._lock:
            self._pending.add(fut)
        fut.add_done_callback(self._forget)
        return True

    def _forget(self, fut: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(fut)

    def _acquire(
        self,
        task: Task,
        image: str,
        name: str,
        want: str | None = None,
        parent: str | None = None,
        size: int = 0,
    ) -> Spare:
        """A started container of ``image``: a prestarted spare when one is ready (with host
        folders, preferably one already holding ``want`` or its ``parent``)."""
        key = self._pool_key(task, image)
        wait = RECYCLE_WAIT_SEC if size >= RECYCLE_WAIT_BYTES else 0.0
        spare = self._pool.take(key, want, parent, wait=wait)
        if spare is not None:  # its sandbox's name, for `docker ps`: off the clone's path
            new_name = f"evoround-{self.job}-{safe_name(name)}-{uuid.uuid4().hex[:6]}"
            self._submit(partial(self._rename, spare.container_id, new_name), removal=True)
        else:
            folder = HostFolder(self._ws_root, self.job) if self._ws_root else None
            try:
                spare = Spare(self._start_container(task, image, name, name, folder), folder)
            except BaseException:
                if folder is not None:
                    self._drop(folder)
                raise
        self._refill(key, task, image, None)  # keep a started spare ready
        if want and size >= RECYCLE_WAIT_BYTES and not self._pool.holding(key):
            # a big workspace: a second folder in circulation, so one is always ready while
            # the other is recycled (one full copy, off the hot path)
            self._refill(key, task, image, want)
        return spare

    def _rename(self, cid: str, new_name: str) -> None:
        with contextlib.suppress(docker.errors.APIError):  # gone already: nothing to name
            self.client.api.rename(cid, new_name)

    def expect(self, task: Task, count: int) -> None:
        """Start spares for ``count`` announced creations of ``task`` in the background (commit
        mode starts clones from snapshot images, not spares: nothing to do)."""
        if self.prestart and not self._closed and self.snapshot_mode is not SnapshotMode.commit:
            image = self.task_image(task).image_id
            key = self._pool_key(task, image)
            for _ in range(self._pool.expect(key, count)):
                self._refill(key, task, image, None)

    def _image_workdir_empty(self, sb: DockerSandbox) -> bool:
        key = sb.image.image_id
        with self._lock:
            known = self._workdir_empty.get(key)
        if known is None:
            res = sb.exec(["sh", "-c", 'ls -A "$0" | head -n 1', sb.workdir], timeout=60)
            known = res.exit_code == 0 and not res.stdout.strip()
            with self._lock:
                self._workdir_empty[key] = known
        return known

    def create(self, task: Task, name: str, snapshot: Snapshot | None = None) -> Sandbox:
        if self._closed:
            raise SandboxError("the Docker provider is closed")
        if snapshot is not None and snapshot.backend != BACKEND:
            raise SandboxError(f"snapshot {snapshot.id} is a {snapshot.backend} snapshot")
        img = self.task_image(task)
        folder: HostFolder | None = None
        if snapshot is not None and is_image_locator(snapshot.locator):
            if image_id(self.client, snapshot.locator) is None:
                raise SandboxError(
                    f"snapshot {snapshot.id}: image {snapshot.locator[:19]} is gone "
                    "(removed by the cache policy or `evoround cleanup`; see --keep-snapshots)"
                )
            cid = self._start_container(task, snapshot.locator, name, name)
        else:
            if snapshot is not None:
                check_content(self.store, snapshot)
            want = snapshot.locator if snapshot is not None else None
            size = snapshot.size_bytes if snapshot is not None else 0
            spare = self._acquire(
                task, img.image_id, name, want, self._parent_manifest(snapshot), size
            )
            cid, folder = spare.container_id, spare.folder
        sb = DockerSandbox(self, cid, name, task, img, self.pristine_python(task), folder)
        sb.bytecode = self._bytecode_mount(task)
        self._register(sb)
        try:
            if folder is not None:
                self._fill_folder(folder, task, img, snapshot)
            elif snapshot is None:
                if task.workspace_dir.is_dir():
                    sb.copy_in(str(task.workspace_dir), sb.workdir)
            elif not is_image_locator(snapshot.locator):
                self._restore_workspace(sb, snapshot)
        except BaseException:
            sb.close()
            raise
        return sb

    def _register(self, sb: DockerSandbox) -> None:
        """Count a started sandbox as live, so close() removes it; if close() ran while its
        container was started (another thread's), close() did not see it: remove it now."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._live[sb.container_id] = sb
        if closed:
            sb._closed = True
            with contextlib.suppress(Exception):
                self._remove_container(sb.container_id)
            if sb.folder is not None:
                self._drop(sb.folder)
            raise SandboxError("the Docker provider is closed")

    def _parent_manifest(self, snapshot: Snapshot | None) -> str | None:
        if snapshot is None or not snapshot.parent:
            return None
        try:
            return self.store.get(snapshot.parent).locator
        except KeyError:
            return None

    def _fill_folder(
        self, folder: HostFolder, task: Task, img: TaskImage, snapshot: Snapshot | None
    ) -> None:
        """Write a (not yet used) container's host workspace (see :meth:`HostFolder.fill`)."""
        base = (
            "" if snapshot else self._facts.workspace(img.image_id, task.config.environment.workdir)
        )
        folder.fill(self.store, snapshot, base, task.workspace_dir)

    def _restore_workspace(self, sb: DockerSandbox, snapshot: Snapshot) -> None:
        """Archive mode: the snapshot's tree put into the container as one tar."""
        if not self._image_workdir_empty(sb):
            # The image ships files in its workdir; the snapshot is the whole truth.
            sb.exec(["find", sb.workdir, "-mindepth", "1", "-delete"], timeout=120)
        tmp = Path(tempfile.mkdtemp(prefix="evoround-restore-"))
        try:
            self.store.materialize(snapshot.locator, tmp / "ws")
            sb._put(tar_of_dir(tmp / "ws", sb.workdir), f"restore snapshot {snapshot.id}")
        finally:
            remove_tree(tmp)

    # -- teardown --
    def _remove_container(self, cid: str) -> None:
        """Remove a container and return once it is gone: a removal already in progress
        (a timed-out call's, which the daemon goes on with) is waited for, up to
        :data:`REMOVAL_WAIT_SEC`, so a closed provider leaves nothing behind."""
        api = self.client.api
        for attempt in Retrying(
            stop=stop_after_delay(REMOVAL_WAIT_SEC),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception_type(_StillRemoving),
            reraise=True,
        ):
            with attempt:
                try:
                    api.remove_container(cid, force=True, v=True)
                    return
                except docker.errors.NotFound:
                    return
                except docker.errors.APIError as e:
                    if "already in progress" not in str(e):
                        raise
                    raise _StillRemoving(f"container {cid[:12]}: {e}") from e

    def release_sandbox(self, sb: DockerSandbox) -> None:
        """Remove a closed sandbox's container, in the background when possible."""

        key = self._pool_key(sb.task, sb.image.image_id)
        recycle = (
            sb.folder is not None
            and sb.folder.written is not None
            and not self._closed
            and (sb.folder.written_bytes >= RECYCLE_MIN_BYTES or self._pool.short(key))
        )
        if recycle:
            self._pool.begin_recycle(key)

        def work() -> None:
            try:
                self._remove_container(sb.container_id)
                if sb.folder is not None and recycle:
                    self._recycle(sb.folder, sb.task, sb.image.image_id)
                elif sb.folder is not None:
                    self._drop(sb.folder)
            finally:
                if recycle:
                    self._pool.end_recycle(key)
                with self._lock:
                    self._live.pop(sb.container_id, None)

        if self._closed or not self._submit(work, removal=True):
            work()

    def _drop(self, folder: HostFolder) -> None:
        folder.remove()
        self.store.forget(folder.path)  # its file hashes can never hit again (issue 14: RSS)

    def _recycle(self, folder: HostFolder, task: Task, image: str) -> None:
        """A closed clone's folder, repaired to its snapshot, under a new spare container:
        the next clone of a child snapshot writes only the difference (see _hostws)."""
        spare: Spare | None = None
        try:
            if self._closed or not self.prestart or not folder.repair(self.store):
                return
            cid = self._start_container(task, image, "spare", "spare", folder)
            spare = Spare(cid, folder)
        finally:
            if spare is None:
                self._drop(folder)
        for old in self._pool.add(self._pool_key(task, image), spare):
            self._remove_spare(old)
        if self._closed:
            for s in self._pool.drain():
                self._remove_spare(s)

    def track_image(self, image: str, kind: SnapshotKind) -> None:
        if kind is not SnapshotKind.reference:
            with self._lock:
                self._created_images.append(image)

    def wait_idle(self) -> None:
        """Block until background removals and refills are done (tests, benchmarks)."""
        while True:
            with self._lock:
                pending = list(self._pending)
            if not pending:
                return
            for fut in pending:
                with contextlib.suppress(Exception):
                    fut.result()

    def close(self) -> None:
        with self._lock:
            if self._closed and not self._live and self._pool.empty():
                return
            self._closed = True
        _LIVE_PROVIDERS.discard(self)
        self.wait_idle()
        self._executor.shutdown(wait=True)
        self._removals.shutdown(wait=True)
        with self._lock:
            live = list(self._live.values())
        for sb in live:
            sb._closed = True
            sb._close_relays()
            with contextlib.suppress(Exception):
                self._remove_container(sb.container_id)
            if sb.folder is not None:
                self._drop(sb.folder)
            with self._lock:
                self._live.pop(sb.container_id, None)
        for spare in self._pool.drain():
            self._remove_spare(spare)
        if not self.keep_snapshots:
            with self._lock:
                images, self._created_images = self._created_images, []
            for image in reversed(images):  # children (clones of clones) before parents
                with contextlib.suppress(docker.errors.NotFound):
                    try:
                        self.client.api.remove_image(image, force=True)
                    except docker.errors.APIError as e:
                        self._log(f"could not remove snapshot image {image[:19]}: {e}")

    def __enter__(self) -> DockerProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
