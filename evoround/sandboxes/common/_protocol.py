"""The sandbox contract every backend (local directory, Docker) implements.

A sandbox is where commands run and files live for one attempt. The engine only
talks to this interface, so the round controller is backend-agnostic; the
conformance suite in ``tests/engine/test_sandbox_conformance.py`` pins the contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType

from evoround.snapshots import Snapshot, SnapshotLabel, SnapshotStore, SnapshotTree, dir_tree
from evoround.tasks import Task


class SandboxError(RuntimeError):
    """Base class of sandbox failures that are the harness's problem, not the agent's."""


READ_LIMIT = 64 << 20
"""Default cap of :meth:`Sandbox.read_file` (64 MiB)."""


class UnsafeFile(OSError):
    """A path the harness reads is a link, FIFO, device or over its size cap."""


class SandboxUnavailable(SandboxError):
    """The sandbox died or cannot be reached (container gone, daemon error)."""


def check_content(store: SnapshotStore, snapshot: Snapshot) -> None:
    """Raise :class:`SandboxError` unless ``store`` still holds ``snapshot``'s content (a
    store pruned or moved since the snapshot was registered), before a sandbox is built
    from it: every host-side backend opens a sandbox from a manifest of the store."""
    try:
        store.manifest(snapshot.locator)
    except FileNotFoundError:
        raise SandboxError(f"snapshot {snapshot.id}: content missing from {store.root}") from None


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    duration_sec: float
    timed_out: bool = False
    oom_killed: bool = False
    truncated_bytes: int = 0
    """Output dropped from the middle of stdout/stderr by the capture cap (see _capture)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class VerifierPython:
    """How the verifier starts Python in a sandbox it does not trust.

    ``argv`` is the interpreter and its isolation flags; ``path_first`` / ``path_last`` are
    ``sys.path`` entries the verifier's runner puts before / after the interpreter's own
    (used when the interpreter runs without ``site``).
    """

    argv: tuple[str, ...]
    path_first: tuple[str, ...] = ()
    path_last: tuple[str, ...] = ()
    pycache: str | None = None
    """A read-only bytecode cache the harness prepared for this interpreter (see
    ``common._bytecode``), used as ``pycache_prefix``; None: a fresh, empty one per run."""


class Sandbox(ABC):
    """One isolated place to run an attempt (or a verification) in.

    ``workdir`` is the workspace path as commands in the sandbox see it;
    ``scratch`` is an engine-private directory outside the workspace that is never
    part of a snapshot (the verifier puts tests and reports there).
    """

    workdir: str
    scratch: str
    python: str
    """How to start the sandbox's Python (the verifier runs pytest with it)."""

    @abstractmethod
    def exec(
        self,
        cmd: str | list[str],
        *,
        timeout: float | None = None,
        stdin: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run a command (a string goes through ``bash -c``); kill its whole tree on timeout."""

    @abstractmethod
    def read_file(
        self, path: str, *, limit: int = READ_LIMIT, follow_symlinks: bool = False
    ) -> bytes:
        """Read a regular file; relative paths are relative to ``workdir``.

        Everything under a sandbox is written by the agent, so the read is hostile-safe:
        a symlink (unless ``follow_symlinks``), FIFO, socket or device raises
        :class:`UnsafeFile` (an ``OSError``) without blocking, and so does a file larger
        than ``limit`` bytes, which is never loaded.
        """

    @abstractmethod
    def write_file(self, path: str, data: str | bytes) -> None:
        """Write a file, creating parent directories; relative paths are under ``workdir``."""

    @abstractmethod
    def copy_in(self, src_dir: str, dest: str) -> None:
        """Copy a host directory's contents into ``dest`` inside the sandbox."""

    @abstractmethod
    def snapshot(self, label: SnapshotLabel) -> Snapshot:
        """Freeze the workspace as it is now and register it in the snapshot store."""

    def verifier_python(self) -> VerifierPython:
        """The Python the verifier runs pytest with: ``-I`` (no ``PYTHON*`` environment, no
        user site, no script directory or cwd on ``sys.path``). Backends whose interpreter
        the agent may have changed override this with a pristine one."""
        return VerifierPython((self.python, "-I"))

    def stop_strays(self) -> None:
        """Kill every process a finished command left running in the sandbox, so nothing
        the tested code started can still write while the harness reads the verdict.

        Nothing to do by default: a hardened local sandbox's commands take their processes
        with them (a pid namespace each); a container's ``exec`` does not (Docker)."""

    def expose_endpoint(self, url: str) -> str:
        """Make one host endpoint (a model API) reachable from commands in the sandbox.

        Returns the URL to use inside the sandbox. A sandbox that shares the
        host's network (the local one) returns ``url`` as it is; an isolated one
        opens exactly that endpoint and nothing else (see ``sandboxes.docker._relay``).
        """
        return url

    @abstractmethod
    def close(self) -> None:
        """Release everything; calling it twice is harmless."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SandboxProvider(ABC):
    """Creates sandboxes of one backend for one job."""

    name: str

    @abstractmethod
    def create(self, task: Task, name: str, snapshot: Snapshot | None = None) -> Sandbox:
        """A fresh sandbox for ``task``: the initial workspace, or the state of ``snapshot``.

        ``name`` is unique within the job (e.g. ``ledger/mt-01``) and is used for labels.
        """

    def has_snapshot(self, snapshot: Snapshot) -> bool:
        """Whether a registered snapshot's content still exists (a cleanup may remove it)."""
        return True

    @abstractmethod
    def snapshot_tree(self, task: Task, snapshot: Snapshot) -> SnapshotTree | None:
        """The files of one of this backend's snapshots, read where its bytes live (the
        store, an image on this provider's engine): what the process checklist diffs, so
        diff-based checks score the same on every backend. None when the content is gone
        or cannot be read within the task's workspace limits (the checks are then
        not_applicable, never guessed)."""

    def initial_tree(self, task: Task) -> SnapshotTree:
        """The workspace a sandbox made without a snapshot starts with (the ``before`` of a
        round with no parent snapshot): the task's workspace folder by default."""
        env = task.config.environment
        return dir_tree(task.workspace_dir, max_files=env.max_workspace_files)

    def base_images(self, tasks: list[Task]) -> dict[str, str]:
        """Checked before any attempt: task -> the base image it will run on (``X`` or
        ``X -> Y (why)`` when substituted). Raises when a task's base cannot be had."""
        return {}

    def expect(self, task: Task, count: int) -> None:
        """A hint: about ``count`` sandboxes of ``task`` will be created soon (a task's SR
        rounds, announced while their reference chain is built), so a provider may start
        them ahead, overlapping that work. Nothing by default."""

    def close(self) -> None:
        """Release provider-wide resources (none by default)."""
