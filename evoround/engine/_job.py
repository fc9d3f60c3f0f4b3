"""A job: every (task, mode, attempt) of one agent, with its results and artefacts.

The job takes ``job.lock`` (one run at a time, :mod:`evoround.engine._joblock`), writes
``job.json`` (the config lock), then streams RoundResults to
``results.jsonl``. Units already fully recorded in results.jsonl are not re-run,
so re-running the same job directory continues where it stopped.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evoround.engine._cluster import ClusterError
from evoround.engine._controller import RunContext
from evoround.engine._executor import Executor, RunOptions, UnitRunner, unrun_result
from evoround.engine._joblock import job_lock
from evoround.engine._limits import LimitedProvider, Limits
from evoround.engine._resume import drop_infra_failures, set_aside_unusable
from evoround.engine._units import (
    JobObserver,
    LocalRunner,
    Unit,
    job_provider,
    plan_units,
    unit_done,
)
from evoround.fileio import atomic_write
from evoround.results import (
    JobConfig,
    Mode,
    ResultsWriter,
    RoundResult,
    TaskRef,
    read_results,
)
from evoround.sandboxes import SandboxError, make_provider, sweep_job_folder
from evoround.scaffolds import Scaffold
from evoround.settings import evoround_home, settings
from evoround.snapshots import SnapshotStore
from evoround.tasks import Task
from evoround.throttle import ModelLimit, model_limit
from evoround.verifiers.checklist import JudgeConfig

if TYPE_CHECKING:
    from evoround.engine._ray import RayRunner
    from evoround.scaffolds import ModelOptions
    from evoround.scaffolds.proxy import ModelProxy


class JobConfigMismatch(ValueError):
    pass


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _diff(a: object, b: object, where: str = "") -> list[str]:
    """``field: old -> new`` for each changed leaf, nested dicts by dotted path, so that a
    changed task digest is one short item, not two copies of the whole task table."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in list(a) + [k for k in b if k not in a]:
            if a.get(k) != b.get(k):
                out += _diff(a.get(k), b.get(k), f"{where}.{k}" if where else str(k))
        return out
    return [f"{where}: {_short(a)} -> {_short(b)}"]


def _identity(config: JobConfig) -> dict[str, Any]:
    """What makes a job the same job: its content, never where its folder or its tasks lie
    (a copied, renamed or moved job folder, or tasks moved elsewhere, is the same job), and
    never how many attempts it has (``--resume -k N`` may extend it: see
    :func:`write_job_config`)."""
    data = config.model_dump(mode="json", exclude={"job", "attempts"})
    data["tasks"] = {name: {**ref, "path": None} for name, ref in data["tasks"].items()}
    return data


def write_job_config(job_dir: Path, config: JobConfig) -> None:
    """Write the config lock, or check it against the one already there.

    The lock identifies the job by its content (:func:`_identity`): a job folder copied,
    renamed or moved resumes, and its lock is rewritten with today's name and task paths.
    More attempts than recorded extend the job (the recorded attempts are kept, the new
    ones run); fewer are refused, as is any other difference, in one line listing them.
    """
    path = job_dir / "job.json"
    if path.exists():
        try:
            old = JobConfig.model_validate_json(path.read_bytes())
        except (ValidationError, OSError) as e:
            raise JobConfigMismatch(
                f"{path} is not a readable job lock ({type(e).__name__}); refusing to write "
                "into this folder: choose another --job"
            ) from None
        # Fields added after this job.json was written were never locked: adopt today's
        # values (and write them down) rather than refuse every resume of an older job.
        added = set(JobConfig.model_fields) - old.model_fields_set
        old = old.model_copy(update={k: getattr(config, k) for k in added})
        a, b = _identity(old), _identity(config)
        if a != b:
            raise JobConfigMismatch(
                f"{path} was written for a different job; refusing to mix results: "
                + "; ".join(_diff(a, b))
            )
        if config.attempts < old.attempts:
            raise JobConfigMismatch(
                f"{path} records {old.attempts} attempts per task: a resume cannot run fewer "
                f"(-k {config.attempts}); leave out -k to resume it, or start a new --job"
            )
        if old == config and not added:  # added fields are written down
            return
    atomic_write(path, json.dumps(config.model_dump(mode="json"), indent=2))


def run_job(
    tasks: list[Task],
    scaffold: Scaffold,
    *,
    job_dir: Path,
    attempts: int,
    modes: list[Mode],
    sandbox: str = "local",
    script_digest: str | None = None,
    store: SnapshotStore | None = None,
    observer: JobObserver | None = None,
    judge: JudgeConfig | None = None,
    keep_snapshots: bool = False,
    options: RunOptions | None = None,
    models: ModelOptions | None = None,
    proxy: ModelProxy | None = None,
    on_fail: str = "stop",
    base_image_map: dict[str, str] | None = None,
    rounds_window: tuple[int, int | None] | None = None,
    docker_snapshot: str | None = None,
) -> Path:
    """Run (or continue) a job; returns the job directory.

    ``on_fail``: ``stop`` (fail-stop, the paper's MT@k) or ``continue`` (EvoCode-Bench's
    current runner: later rounds run in the same sandbox and session). ``base_image_map``:
    explicit ``FROM`` substitutions for task images (docker sandbox), recorded in job.json.
    ``rounds_window`` (A, B or None): ``--rounds A-B``; rounds before A are fast-forwarded
    from the reference state, metrics cover A..B. ``docker_snapshot``: the Docker snapshot
    mode (None: ``EVOROUND_DOCKER_SNAPSHOT``, else ``workspace``), recorded in job.json.

    Continuing re-runs no recorded round: finished units are skipped and an interrupted MT
    attempt resumes after its last recorded round (see :mod:`evoround.engine._resume`).
    ``models``: how a model-backed scaffold was configured, recorded in the lock (never the
    API key) so a resume can rebuild the same agent. ``proxy``: a started
    :class:`ModelProxy` the scaffold already talks to; rounds are tagged and its calls
    folded into their trajectories (the caller owns its lifetime).
    """
    options = options or RunOptions()
    _check_executor(options, proxy)
    check_window(tasks, rounds_window)
    store = store or SnapshotStore(evoround_home() / "store")
    bases = _base_images(tasks, sandbox, store, job_dir.name, base_image_map or {})
    config = JobConfig(
        job=job_dir.name,
        agent=scaffold.name,
        model=scaffold.model,
        script_digest=script_digest,
        attempts=attempts,
        modes=modes,
        sandbox=sandbox,
        judge_model=judge.model if judge else None,
        api_base=models.api_base if models else None,
        max_steps=models.max_steps if models else None,
        model_args=(models.model_args or None) if models else None,
        judge_api_base=judge.api_base if judge else None,
        judge_votes=judge.votes if judge else None,
        judge_model_args=_judge_args(judge),
        on_fail=on_fail,
        base_image_map=dict(base_image_map or {}),
        base_images=bases,
        docker_snapshot=snapshot_mode(sandbox, docker_snapshot),
        rounds_window=rounds_window,
        agent_notes=list(getattr(scaffold, "notes", [])),
        tasks={
            t.name: TaskRef(digest=t.digest, n_rounds=t.n_rounds, path=str(t.path)) for t in tasks
        },
    )
    job = _Job(
        tasks=tasks,
        scaffold=scaffold,
        config=config,
        job_dir=job_dir,
        store=store,
        judge=judge,
        keep_snapshots=keep_snapshots,
        proxy=proxy,
    )
    return _run_locked(job, observer or JobObserver(), options)


def _run_locked(job: _Job, observer: JobObserver, options: RunOptions) -> Path:
    """Under the job lock: connect the cluster (Ray), write the config lock, run. A cluster
    that cannot run the job (:class:`ClusterError`) leaves no new job folder behind."""
    created = not job.job_dir.exists()
    try:
        with job_lock(job.job_dir):  # released at the end, on Ctrl-C/SIGTERM and on errors
            ray = _connect(job, options)  # every node probed before job.json is written
            try:
                write_job_config(job.job_dir, job.config)
            except BaseException:
                if ray is not None:
                    ray.close()
                raise
            try:
                return _execute(job, observer, options, ray)
            finally:  # still under the lock: no unit of this folder is live any more
                left = sweep_job_folder(job.sandbox, job.job_dir)
                if left:
                    logging.getLogger(__name__).warning(
                        "%s: removed %d sandbox(es) a lost node left: %s",
                        job.job_dir,
                        len(left),
                        ", ".join(left[:5]),
                    )
    except ClusterError:
        if created:  # nothing ran
            shutil.rmtree(job.job_dir, ignore_errors=True)
        raise


def _connect(job: _Job, options: RunOptions) -> RayRunner | None:
    """``--executor ray``: the cluster, connected and probed (:class:`ClusterError` names a
    node that cannot run this job); None for the local executor."""
    if options.executor != "ray":
        return None
    from evoround.engine._ray import RayRunner

    ray = RayRunner(
        job.scaffold,
        job_dir=job.job_dir,
        sandbox=job.sandbox,
        store_root=job.store.root,
        judge=job.judge,
        keep_snapshots=job.keep_snapshots,
        address=options.ray_address,
    )
    try:
        ray.probe([Path(t.path) for t in job.tasks])
    except BaseException:
        ray.close()
        raise
    return ray


def check_window(tasks: list[Task], window: tuple[int, int | None] | None) -> None:
    """``--rounds A-B`` must fit every task: one line naming the task that it does not."""
    if window is None:
        return
    first, last = window
    if first < 1 or (last is not None and last < first):
        raise ValueError(f"--rounds {first}-{last or ''}: expected 1 <= A <= B")
    for t in tasks:
        if first > t.n_rounds:
            raise ValueError(
                f"--rounds {first}-{last or ''}: task {t.name} has {t.n_rounds} rounds"
            )


def snapshot_mode(sandbox: str, given: str | None) -> str | None:
    """The Docker snapshot mode a job records (None for the local sandbox): the given one,
    else the setting, else ``workspace``. Recorded, so every node of a cluster and every
    resume snapshots the same way, whatever their own environment says."""
    if sandbox != "docker":
        return None
    return given or settings().docker_snapshot or "workspace"


def _judge_args(judge: JudgeConfig | None) -> dict[str, Any] | None:
    """The judge's sampling settings as given (temperature only when not the default 0)."""
    if judge is None or not judge.model:
        return None
    args = {**({"temperature": judge.temperature} if judge.temperature else {}), **judge.model_args}
    return args or None


class BaseImageUnavailable(ValueError):
    """A task's base image cannot be had (and no --base-image-map covers it)."""


def _base_images(
    tasks: list[Task], sandbox: str, store: SnapshotStore, job: str, mapping: dict[str, str]
) -> dict[str, str]:
    """Before any attempt: which base image each task builds on; fails in one line if one
    cannot be had (the message names the image and the two fixes)."""
    if sandbox == "local":
        if mapping:
            raise BaseImageUnavailable("--base-image-map needs --sandbox docker")
        return {}
    probe = make_provider(sandbox, store, job=job, base_image_map=mapping)
    try:
        return probe.base_images(tasks)
    except (RuntimeError, SandboxError) as e:  # ImageError, SandboxUnavailable
        raise BaseImageUnavailable(str(e).splitlines()[0]) from None
    finally:
        probe.close()


@dataclass(frozen=True)
class _Job:
    """What the job's units run with, once its lock is written."""

    tasks: list[Task]
    scaffold: Scaffold
    config: JobConfig
    job_dir: Path
    store: SnapshotStore
    judge: JudgeConfig | None
    keep_snapshots: bool
    proxy: ModelProxy | None

    @property
    def sandbox(self) -> str:
        return self.config.sandbox


def _check_executor(options: RunOptions, proxy: ModelProxy | None) -> None:
    if proxy is not None and options.executor == "ray":
        raise ValueError("--proxy listens on this machine's loopback: use --executor local")


def _execute(job: _Job, observer: JobObserver, options: RunOptions, ray: RayRunner | None) -> Path:
    """Plan what is left, then hand it to the executor (threads or Ray), the single writer."""
    existing, todo = _plan(job, observer, options)
    limits = Limits(
        concurrency=options.concurrency,
        containers=options.max_containers,
        image_builds=options.max_image_builds,
        model_connections=options.max_model_connections,
    )
    writer = ResultsWriter(job.job_dir / "results.jsonl")
    runner, close = _runner(job, limits, ray)
    scaffold = job.scaffold
    executor = Executor(
        runner,
        writer,
        existing,
        observer=observer,
        options=options,
        make_unrun_result=lambda unit, rnd, e: unrun_result(
            job.job_dir.name, scaffold.name, scaffold.model, job.sandbox, unit, rnd, e
        ),
        on_abort=close,
    )
    try:
        with model_limit(ModelLimit(limits.model_connections)):  # agents' and judge's calls
            executor.run(todo)
    finally:
        writer.close()
        close()
    return job.job_dir


def _plan(
    job: _Job, observer: JobObserver, options: RunOptions
) -> tuple[list[RoundResult], list[Unit]]:
    """The rounds already recorded and the units still to run (a re-run continues)."""
    config = job.config
    window = config.rounds_window
    set_aside = set_aside_unusable(job.job_dir, window[0] if window else 1)
    if set_aside is not None:
        logging.getLogger(__name__).warning("%s", set_aside)
    if options.retry_failed:
        drop_infra_failures(job.job_dir)
    existing, _ = read_results(job.job_dir / "results.jsonl")
    units = plan_units(
        job.tasks,
        config.modes,
        config.attempts,
        on_fail=config.on_fail,
        window=config.rounds_window,
    )
    todo = [u for u in units if not unit_done(u, existing)]
    logging.getLogger(__name__).info(
        "job %s: %d tasks, %d units (%d already done), sandbox %s",
        job.job_dir,
        len(job.tasks),
        len(units),
        len(units) - len(todo),
        job.sandbox,
    )
    observer.job_started(units, len(units) - len(todo))
    pending = {id(u) for u in todo}
    observer.job_skipped([u for u in units if id(u) not in pending])
    return existing, todo


def _runner(
    job: _Job, limits: Limits, ray: RayRunner | None
) -> tuple[UnitRunner, Callable[[], None]]:
    """The unit runner (Ray tasks on the connected cluster, or threads of this process on a
    limited provider) and what closes it: on abort and at the end, whatever ran."""
    if ray is not None:
        return ray, ray.close
    inner = job_provider(
        job.sandbox,
        job.store,
        job.job_dir,
        job.scaffold,
        keep_snapshots=job.keep_snapshots,
        base_image_map=job.config.base_image_map,
        snapshot_mode=job.config.docker_snapshot,
    )
    provider = LimitedProvider(inner, limits)
    ctx = RunContext(
        job=job.job_dir.name,
        job_dir=job.job_dir,
        provider=provider,
        store=job.store,
        scaffold=job.scaffold,
        record=lambda _r: None,
        judge=job.judge,
        proxy=job.proxy,
    )
    return LocalRunner(ctx), provider.close


def default_job_name(agent: str) -> str:
    stamp = datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in agent)
    return f"{stamp}__{safe}"
