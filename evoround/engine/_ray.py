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
  on a multi-node cluster the job folder must be on a shared filesystem: before any unit,
  every node is probed (:func:`evoround.engine._cluster.probe_node`) and a node that cannot
  see the job folder or the tasks, or runs another evoround, is one line naming it.
* Each worker appends the engine's log of its units to ``<job>/.workers/<host>-<pid>.log``.
* A lost head stops the job (:class:`HeadWatch`) before Ray would end the driver silently.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evoround.engine._cluster import (
    PROBE_TIMEOUT_S,
    WORKERS_DIR,
    ClusterError,
    HeadWatch,
    NodeWatch,
    Tokens,
    gcs_endpoint,
    node_name,
    probe_node,
    verdict,
    worker_log,
)
from evoround.fileio import atomic_write
from evoround.results import Mode, RoundResult
from evoround.sandboxes import SandboxUnavailable
from evoround.scaffolds import Scaffold
from evoround.settings import evoround_home, settings
from evoround.verifiers.checklist import JudgeConfig

if TYPE_CHECKING:
    from evoround.engine._units import Unit

_DONE = object()
_STALLED = object()
"""What :meth:`RayRunner._refs` yields when a finished unit's stream stalled."""
_NODE = "node:"
"""The first item a unit yields: ``node:<id>`` of the Ray node it runs on (NodeWatch)."""
_END = "end:"
"""The last item of a unit that ran to its end. The driver stops reading there, not at the
stream's end: after a network cut the node came back from, its items came through but the
stream's end never did, and the driver waited on a finished unit for minutes."""
STALL_GRACE_S = 10.0
"""How long the driver waits for the stream once the unit's done file is there (see
:func:`done_file`) before it takes the unit's rounds from that file instead."""


def done_dir(job_dir: Path) -> Path:
    """The folder of the units' done files (:func:`done_file`)."""
    return job_dir / WORKERS_DIR / "done"


def done_file(job_dir: Path, key: str) -> Path:
    """Where a worker leaves every round a unit yielded, once the unit has run to its end:
    ``<job>/.workers/done/<key>.jsonl``. The stream is the unit's channel; this file is the
    driver's way out when the stream stalls (an item lost in a network cut stops Ray's
    ordered stream at that item for good), so a finished unit is never waited on forever."""
    return done_dir(job_dir) / f"{key}.jsonl"


def _leave_done(path: Path, rounds: list[str]) -> None:
    """Written whole or not at all; a folder the worker cannot write only loses the way
    out, never the unit."""
    try:
        atomic_write(path, "".join(f"{r}\n" for r in rounds))
    except OSError as e:
        logging.getLogger(__name__).warning("could not leave %s: %s", path, e)


@dataclass(frozen=True)
class UnitCall:
    """What a worker needs to run one unit, as plain values (pickled to the worker): the
    unit by task folder, mode, attempt and round; what the driver already recorded; the
    job's folder, sandbox backend, snapshot store, judge and snapshot policy."""

    task_path: str
    mode: str
    attempt: int
    round_index: int | None
    recorded: list[str]
    job_dir: str
    sandbox: str
    store_root: str
    judge: JudgeConfig | None
    keep_snapshots: bool
    key: str
    """This submission's name for its done file (a fresh token each time it is sent)."""

    @property
    def label(self) -> str:
        r = f" r{self.round_index:02d}" if self.round_index else ""
        return f"{Path(self.task_path).name} {self.mode}-{self.attempt:02d}{r}"


def _remote_unit(scaffold: Scaffold, call: UnitCall) -> Iterator[str]:
    """Runs on a Ray worker: one unit through the controller, yielding each recorded round;
    the engine's log of it goes to the job folder (``.workers/<host>-<pid>.log``)."""
    handler = worker_log(Path(call.job_dir))  # where units ran, and what the engine said there
    engine_log = logging.getLogger("evoround")
    level = engine_log.level
    if handler is not None:
        engine_log.addHandler(handler)
        engine_log.setLevel(logging.INFO)
    log = logging.getLogger(__name__)
    log.info("%s: started (%d rounds recorded before)", call.label, len(call.recorded))
    try:
        import ray

        yield _NODE + ray.get_runtime_context().get_node_id()
        rounds: list[str] = []
        for item in _unit_rounds(scaffold, call):
            rounds.append(item)
            yield item
        _leave_done(done_file(Path(call.job_dir), call.key), rounds)
        log.info("%s: done", call.label)
        yield _END
    except Exception:
        log.exception("%s: failed", call.label)
        raise
    finally:
        if handler is not None:
            engine_log.removeHandler(handler)
            engine_log.setLevel(level)
            handler.close()


def _unit_rounds(scaffold: Scaffold, call: UnitCall) -> Iterator[str]:
    """The unit through the controller in a thread of the worker, each round as it comes."""
    from evoround.engine._controller import RunContext
    from evoround.engine._units import Unit, job_provider, run_unit
    from evoround.results import load_job
    from evoround.snapshots import SnapshotStore
    from evoround.tasks import load_task

    jd = Path(call.job_dir)
    cfg = load_job(jd).config  # the lock carries the protocol and the image map
    unit = Unit(
        load_task(Path(call.task_path)),
        Mode(call.mode),
        call.attempt,
        call.round_index,
        on_fail=cfg.on_fail,
        window=cfg.rounds_window,
    )
    store = SnapshotStore(call.store_root or evoround_home() / "store")
    provider = job_provider(
        call.sandbox,
        store,
        jd,
        scaffold,
        keep_snapshots=call.keep_snapshots,
        base_image_map=cfg.base_image_map,
        snapshot_mode=cfg.docker_snapshot,
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
            judge=call.judge,
        )
        try:
            run_unit(
                ctx,
                unit,
                [RoundResult.model_validate_json(r) for r in call.recorded],
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
                runtime_env=settings().ray_runtime_env,  # EVOROUND_RAY_RUNTIME_ENV
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
        endpoint = gcs_endpoint(ray.get_runtime_context().gcs_address or "")
        self._watch = HeadWatch(endpoint) if endpoint is not None else None
        self._nodes = NodeWatch(ray.nodes)

    def lost(self) -> str | None:
        """Why no more units can run: the head is gone (None: it answers)."""
        return self._watch.lost() if self._watch is not None else None

    def probe(self, tasks: list[Path]) -> None:
        """Before any unit: every node that can run units sees the job folder (a token
        written just now), the task folders and the same evoround; :class:`ClusterError`
        names the first node that does not. A snapshot store a node does not share is a
        warning (each node then builds its own reference states)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self.ray
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
        remote: Any = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        tokens = Tokens(self.job_dir, self.store_root)
        tokens.write()
        try:
            refs = {
                node_name(n): remote.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
                ).remote(
                    str(tokens.job_file),
                    str(tokens.store_file),
                    tokens.value,
                    [str(Path(t).resolve()) for t in tasks],
                )
                for n in nodes
            }
            unshared = self._answers(refs, tokens)
        finally:
            tokens.remove()
        if unshared:
            logging.getLogger(__name__).warning(
                "the snapshot store %s is not shared with Ray node(s) %s: each node builds "
                "its own reference states, and an attempt cut short on one node cannot "
                "continue on another (share EVOROUND_HOME: docs/cluster.md)",
                self.store_root,
                ", ".join(unshared),
            )

    def _answers(self, refs: dict[str, Any], tokens: Tokens) -> list[str]:
        """Each node's answer checked (the first wrong one raises); the nodes whose store
        is not the driver's."""
        ray = self.ray
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        unshared = []
        for name, ref in refs.items():
            try:
                seen = ray.get(ref, timeout=max(1.0, deadline - time.monotonic()))
            except ray.exceptions.GetTimeoutError:
                raise ClusterError(
                    f"Ray node {name} did not answer in {PROBE_TIMEOUT_S:.0f} s: is it "
                    "overloaded or cut off from the head?"
                ) from None
            except ray.exceptions.RayError as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[-1]
                raise ClusterError(
                    f"Ray node {name} cannot run evoround ({first[:200]}): install the same "
                    "evoround at the same path on every node, or pass it in a Ray "
                    "runtime_env (docs/cluster.md)"
                ) from None
            problem = verdict(name, seen, tokens)
            if problem is not None:
                raise ClusterError(problem)
            if not seen.get("store"):
                unshared.append(name)
        return unshared

    def __call__(
        self, unit: Unit, recorded: list[RoundResult], record: Callable[[RoundResult], None]
    ) -> None:
        ray = self.ray
        call = UnitCall(
            task_path=str(Path(unit.task.path).resolve()),
            mode=unit.mode.value,
            attempt=unit.attempt,
            round_index=unit.round,
            recorded=[r.model_dump_json() for r in recorded],
            job_dir=str(self.job_dir),
            sandbox=self.sandbox,
            store_root=str(self.store_root),
            judge=self.judge,
            keep_snapshots=self.keep_snapshots,
            key=secrets.token_hex(12),
        )
        done = done_file(self.job_dir, call.key)
        gen = self._remote.remote(self.scaffold, call)
        with self._lock:
            self._running.add(gen)
        node: list[str] = []  # where the unit runs, once it said so
        try:
            for ref in self._refs(gen, node, done):
                if ref is _STALLED:
                    self._rescue(call, done, record)
                    with contextlib.suppress(Exception):  # it ended: nothing may be left
                        ray.cancel(gen, force=True)
                    return
                try:
                    payload = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause()
                    raise cause from None
                except ray.exceptions.RayError as e:  # worker/node died, object lost
                    raise SandboxUnavailable(f"ray: {type(e).__name__}: {e}") from e
                if payload == _END:
                    return  # the unit is done: nothing more will come
                if payload.startswith(_NODE):
                    node.append(payload.removeprefix(_NODE))
                else:
                    record(RoundResult.model_validate_json(payload))
        except BaseException:
            ray.cancel(gen, force=True)
            raise
        finally:
            with self._lock:
                self._running.discard(gen)
            with contextlib.suppress(OSError):
                done.unlink(missing_ok=True)

    def _refs(self, gen: Any, node: list[str], done: Path) -> Iterator[Any]:
        """The unit's stream, item by item; :class:`SandboxUnavailable` once the head has
        marked the node it runs on (``node``, once known) dead, not when Ray's stream says
        so, which can be minutes later (:class:`NodeWatch`); :data:`_STALLED` when the
        unit's ``done`` file has been there :data:`STALL_GRACE_S` and the stream still
        gives nothing. ``_next_sync`` is Ray's own wait for the next item with a timeout
        (a nil ref when none came)."""
        next_sync = getattr(gen, "_next_sync", None)
        if next_sync is None:  # another Ray: its plain stream
            yield from gen
            return
        ended: float | None = None  # when the done file was first seen
        while True:
            try:
                ref = next_sync(timeout_s=1.0)
            except StopIteration:
                return
            if not ref.is_nil():
                yield ref
            elif node and self.lost() is None and self._nodes.dead(node[0]):
                if done.exists():  # it ended before its node was lost: its rounds are there
                    yield _STALLED
                    return
                raise SandboxUnavailable(
                    f"ray: the node {node[0][:12]} running the unit was marked dead "
                    "(killed or cut off)"
                )
            elif ended is None:
                ended = time.monotonic() if done.exists() else None
            elif time.monotonic() - ended > STALL_GRACE_S:
                yield _STALLED
                return

    @staticmethod
    def _rescue(call: UnitCall, done: Path, record: Callable[[RoundResult], None]) -> None:
        """The unit ended but its stream stalled: every round it yielded, from its done
        file (the executor's writer drops a round already recorded from the stream)."""
        try:
            rounds = [
                RoundResult.model_validate_json(line)
                for line in done.read_text().splitlines()
                if line.strip()
            ]
        except (OSError, ValueError) as e:  # pydantic's ValidationError is a ValueError
            raise SandboxUnavailable(
                f"ray: the stream of {call.label} stalled and its done file {done} "
                f"cannot be read: {e}"
            ) from e
        logging.getLogger(__name__).warning(
            "%s: the unit ended but Ray's stream stalled: its %d round(s) taken from %s",
            call.label,
            len(rounds),
            done,
        )
        for r in rounds:
            record(r)

    def close(self) -> None:
        """Cancel what still runs (abort path) and disconnect from the cluster; with the
        head lost there is nothing to cancel on, and talking to it would only hang. Done
        files no unit of this run took away (units of an earlier driver that was killed
        while they ended) are removed: the job holds its lock, nobody else reads them."""
        done = done_dir(self.job_dir)
        with contextlib.suppress(OSError):
            for f in list(done.iterdir()) if done.is_dir() else []:
                f.unlink(missing_ok=True)
        if self._watch is not None:
            self._watch.close()
            if self._watch.lost() is not None:
                return
        with self._lock:
            running = list(self._running)
        for gen in running:
            with contextlib.suppress(Exception):  # best effort on the way out
                self.ray.cancel(gen, force=True)
        self.ray.shutdown()
