"""The jobs a viewer serves, read lazily and re-read when they change.

Why lazy: a benchmark job holds ~2,000 rounds; the viewer reads ``results.jsonl`` (one
file) to list them and opens a round's own folder only when its page is asked for. A job
still running is re-read when its results file grows (its size and mtime are the stamp),
so pages follow a live job without a restart.

The index is the only thing that maps a request to a file: a page names a job by its
position and a round by (task, mode, attempt, round), all checked against the job's own
records, so no part of a URL ever becomes a path (no traversal by construction).
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evoround.reports import headline_stats, job_uncertainty
from evoround.results import JobView, Mode, NotAJobDir, RoundResult, dedupe, load_job

RESULTS_FILE = "results.jsonl"
LOCK_FILE = "job.lock"
HEADLINE = ("MT@k", "SR", "Gap", "Comp", "CSR", "ISR")
"""The leaderboard's figures, as the reports name them."""


class ViewError(ValueError):
    """A folder given to the viewer is not a job folder (one line naming it)."""


@dataclass(frozen=True)
class RoundKey:
    """One round of one attempt: what a round page is named by."""

    task: str
    mode: str
    attempt: int
    round: int

    @property
    def slug(self) -> str:
        return f"{self.task}/{self.mode}/{self.attempt}/{self.round}"


def key_of(rec: RoundResult) -> RoundKey:
    return RoundKey(rec.task, str(rec.mode), rec.attempt, rec.round)


@dataclass
class JobEntry:
    """One served job: its folder, the view read at ``stamp``, and what is derived from it."""

    path: Path
    stamp: tuple[int, int] = (-1, -1)
    view: JobView | None = None
    rounds: dict[RoundKey, RoundResult] = field(default_factory=dict)
    points: dict[str, float | None] = field(default_factory=dict)
    """The leaderboard's point estimates (cheap: computed on every re-read)."""
    intervals: dict[str, Any] | None = None
    """Their bootstrap intervals, filled by a background thread (None until done)."""
    holder: Callable[[Path], bool] | None = None
    """Whether a live run holds the job (the engine's lock check, given by the caller:
    the viewer does not import the engine)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def running(self) -> bool:
        """A live run holds the job. Without the engine's check, a ``job.lock`` present is
        taken as running (a run killed with SIGKILL leaves one behind)."""
        if self.holder is not None:
            return self.holder(self.path)
        return (self.path / LOCK_FILE).exists()


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = (path / RESULTS_FILE).stat()
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)


class JobIndex:
    """The job folders given on the command line, each re-read when its results change."""

    def __init__(self, paths: list[Path], running: Callable[[Path], bool] | None = None) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self.entries: list[JobEntry] = []
        for p in paths:
            if not p.is_dir():
                raise ViewError(f"{p}: not a folder")
            e = JobEntry(path=p.resolve(), holder=running)
            try:  # read once here: the check that it is a job is the first load
                self._load(e, _stamp(e.path))
            except NotAJobDir as err:
                self.close()
                raise ViewError(str(err)) from None
            self.entries.append(e)

    def entry(self, i: int) -> JobEntry | None:
        """Job ``i`` (0-based), fresh; None when there is no such job."""
        if not 0 <= i < len(self.entries):
            return None
        e = self.entries[i]
        with self._lock:
            stamp = _stamp(e.path)
            if stamp != e.stamp or e.view is None:
                self._load(e, stamp)
        return e

    def position(self, name: str) -> int | None:
        """The position of the first job whose folder is named ``name`` (report.html links
        by name); None when none is."""
        return next((i for i, e in enumerate(self.entries) if e.name == name), None)

    def _load(self, e: JobEntry, stamp: tuple[int, int]) -> None:
        view = load_job(e.path)
        e.view, e.stamp, e.intervals = view, stamp, None
        e.rounds = {key_of(r): r for r in dedupe(view.records)}
        stats = headline_stats(view.records, view.n_rounds, view.config.attempts)
        e.points = {name: stats.get(name) for name in HEADLINE}
        future = self._pool().submit(intervals_of, e.path)
        future.add_done_callback(lambda f: self._got_intervals(e, stamp, f))

    def _pool(self) -> ProcessPoolExecutor:
        """One worker process for the bootstraps: a 2,000-round job's takes seconds of CPU,
        which in a thread would hold the GIL against every page request."""
        if self._executor is None:
            self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        return self._executor

    def _got_intervals(
        self, e: JobEntry, stamp: tuple[int, int], f: Future[dict[str, Any]]
    ) -> None:
        if f.cancelled() or f.exception() is not None:  # a page aid: the points stay
            return
        with self._lock:
            if e.stamp == stamp:
                e.intervals = f.result()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def intervals_of(path: Path) -> dict[str, Any]:
    """The leaderboard's intervals of one job (run in the worker process)."""
    u = job_uncertainty(load_job(path))
    return {name: u.headline[name].model_dump() for name in HEADLINE if name in u.headline}


def attempts_of(e: JobEntry) -> list[tuple[str, str, int]]:
    """(task, mode, attempt) of every recorded attempt, in task / mode / attempt order."""
    seen = {(k.task, k.mode, k.attempt) for k in e.rounds}
    order = {Mode.mt.value: 0, Mode.sr.value: 1}
    return sorted(seen, key=lambda t: (t[0], order.get(t[1], 2), t[2]))
