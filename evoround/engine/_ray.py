"""Ray executor (``--executor ray --ray-address ADDR``): attempts run as Ray tasks.

Why this shape: a cluster has many machines, each with its own Docker engine and its own
snapshot store, but results.jsonl must have exactly one writer. So a unit runs on some
node as a *streaming* Ray task that yields each finished round (JSON) as soon as it is
recorded there; the driver consumes the stream and hands every round to the executor's
single writer (:class:`evoround.engine._executor.Executor`), which also dedupes by key.

* Reference snapshots are built where they are needed: each node uses its own
  ``EVOROUND_HOME`` store, so the reference cache is per node.
* Ray's own retries are off (``max_retries=0``): a worker or node lost mid-attempt
  surfaces here as :class:`SandboxUnavailable`, i.e. an infra failure, and the executor
  retries it (Ray places the new task on any live node), continuing after the last round
  the driver recorded. Continuing on another node needs the snapshot there: a shared
  ``EVOROUND_HOME`` (or a single node); otherwise the resume is an infra failure, reported.
* Artefacts (trajectories, junit.xml) are written by the worker under the job folder, so
  on a multi-node cluster the job folder should be on a shared filesystem.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evoround.results import Mode, RoundResult
from evoround.sandboxes import SandboxUnavailable
from evoround.scaffolds import Scaffold
from evoround.settings import evoround_home
from evoround.verifiers.checklist import JudgeConfig

if TYPE_CHECKING:
    from evoround.engine._units import Unit

_DONE = object()


def _remote_unit(
    scaffold: Scaffold,
    task_path: str,
    mode: str,
    attempt: int,
    round_index: int | None,
    recorded: list[str],
    job_dir: str,
    sandbox: str,
    store_root: str,
    judge: JudgeConfig | None,
    keep_snapshots: bool,
) -> Iterator[str]:
    """Runs on a Ray worker: one unit through the controller, yielding each recorded round."""
    from evoround.engine._controller import RunContext
    from evoround.engine._units import Unit, job_provider, run_unit
    from evoround.results import load_job
    from evoround.snapshots import SnapshotStore
    from evoround.tasks import load_task

    jd = Path(job_dir)
    workers = jd / ".workers"
    workers.mkdir(parents=True, exist_ok=True)
    (workers / f"{socket.gethostname()}-{os.getpid()}").touch()  # where units ran (debugging)
    task = load_task(Path(task_path))
    cfg = load_job(jd).config  # the lock carries the protocol and the image map
    unit = Unit(
        task, Mode(mode), attempt, round_index, on_fail=cfg.on_fail, window=cfg.rounds_window
    )
    store = SnapshotStore(store_root or evoround_home() / "store")
    provider = job_provider(
        sandbox,
        store,
        jd,
        scaffold,
        keep_snapshots=keep_snapshots,
        base_image_map=cfg.base_image_map,
    )
    out: queue.Queue[Any] = queue.Queue()

    def work() -> None:
        ctx = RunContext(
            job=jd.name,
            job_dir=jd,
            provider=provider,
            store=store,
            scaffold=scaffold,
            record=lambda r: None,
            judge=judge,
        )
        try:
            run_unit(
                ctx,
                unit,
                [RoundResult.model_validate_json(r) for r in recorded],
                lambda r: out.put(r.model_dump_json()),
            )
            out.put(_DONE)
        except BaseException as e:  # re-raised in the generator, so the driver sees it
            out.put(e)
        finally:
            provider.close()

    t = threading.Thread(target=work, daemon=True)
    t.start()
    while True:
        item = out.get()
        if item is _DONE:
            break
        if isinstance(item, BaseException):
            raise item
        yield item
    t.join()


class RayRunner:
    """The driver side: submits units as streaming Ray tasks and records what they yield."""

    def __init__(
        self,
        scaffold: Scaffold,
        *,
        job_dir: Path,
        sandbox: str,
        store_root: Path,
        judge: JudgeConfig | None,
        keep_snapshots: bool,
        address: str | None,
    ) -> None:
        import ray

        self.ray = ray
        if not ray.is_initialized():
            ray.init(
                address=address or os.environ.get("RAY_ADDRESS") or "auto",
                log_to_driver=False,
                configure_logging=False,
            )
        # ray's stubs type a remote function by its arity and its result as one ObjectRef:
        # a streaming generator task fits neither, so the handle is untyped here and what
        # it yields is checked where it arrives (RoundResult.model_validate_json).
        streaming: Any = ray.remote(num_returns="streaming", max_retries=0, num_cpus=1)
        self._remote = streaming(_remote_unit)
        self.scaffold = scaffold
        self.job_dir = job_dir.resolve()
        self.sandbox = sandbox
        self.store_root = store_root.resolve()
        self.judge = judge
        self.keep_snapshots = keep_snapshots
        self._lock = threading.Lock()
        self._running: set[Any] = set()

    def __call__(
        self, unit: Unit, recorded: list[RoundResult], record: Callable[[RoundResult], None]
    ) -> None:
        ray = self.ray
        gen = self._remote.remote(
            self.scaffold,
            str(Path(unit.task.path).resolve()),
            unit.mode.value,
            unit.attempt,
            unit.round,
            [r.model_dump_json() for r in recorded],
            str(self.job_dir),
            self.sandbox,
            str(self.store_root),
            self.judge,
            self.keep_snapshots,
        )
        with self._lock:
            self._running.add(gen)
        try:
            for ref in gen:
                try:
                    payload = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause()
                    raise cause from None
                except ray.exceptions.RayError as e:  # worker/node died, object lost
                    raise SandboxUnavailable(f"ray: {type(e).__name__}: {e}") from e
                record(RoundResult.model_validate_json(payload))
        except BaseException:
            ray.cancel(gen, force=True)
            raise
        finally:
            with self._lock:
                self._running.discard(gen)

    def close(self) -> None:
        """Cancel what still runs (abort path) and disconnect from the cluster."""
        with self._lock:
            running = list(self._running)
        for gen in running:
            with contextlib.suppress(Exception):  # best effort on the way out
                self.ray.cancel(gen, force=True)
        self.ray.shutdown()
