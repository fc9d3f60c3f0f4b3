"""The live display of ``evoround run``: per-task progress, running attempts, failures, ETA.

Why a table and not one bar: with ``--concurrency N`` several attempts run at once and
the question during a long night is "which tasks are stuck, and is the harness or the
agent failing?", so failures are shown by class and infra retries separately.
Observer hooks come from worker threads; all state sits behind one lock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from evoround.engine import JobObserver, Unit
from evoround.results import RoundResult


class ProgressObserver(JobObserver):
    """A rich progress bar over rounds, with a live line on the running unit."""

    def __init__(self, progress: Progress, title: str) -> None:
        self.progress = progress
        self.title = title
        self.bar = progress.add_task(title, total=None)
        self.passed = 0
        self.failed = 0
        self._rounds_in_unit = 0

    def job_started(self, units: list[Unit], skipped: int) -> None:
        total = sum(u.rounds for u in units)
        done = sum(u.rounds for u in units[:skipped]) if skipped else 0
        self.progress.update(self.bar, total=total, completed=done)

    def unit_started(self, unit: Unit) -> None:
        self._rounds_in_unit = 0
        self._describe(unit.label)

    def round_recorded(self, unit: Unit, result: RoundResult) -> None:
        self._rounds_in_unit += 1
        self.passed += result.passed
        self.failed += not result.passed
        self.progress.advance(self.bar)
        self._describe(f"{unit.label} · round {result.round} {result.status.value}")

    def unit_finished(self, unit: Unit) -> None:
        # Fail-stop: the rounds an attempt never reached are done too.
        self.progress.advance(self.bar, unit.rounds - self._rounds_in_unit)

    def _describe(self, what: str) -> None:
        self.progress.update(
            self.bar,
            description=f"{self.title} [green]{self.passed}✓[/] [red]{self.failed}✗[/] {what}",
        )


def progress_bar(console: Console) -> Progress:
    """The demo's bar over rounds (one line, kept when done)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


class LiveObserver(JobObserver):
    def __init__(self, console: Console, title: str, notice: str | None = None) -> None:
        self.console = console
        self.title = title
        self.notice = notice
        """One line printed when the job starts (not before: an early error prints alone)."""
        self._lock = threading.Lock()
        self.total: Counter[str] = Counter()
        self.done: Counter[str] = Counter()
        self.running: dict[int, tuple[Unit, int | None]] = {}
        self.status: Counter[str] = Counter()
        self.retries = 0
        self.note = ""
        self._rounds_in_unit: dict[int, int] = {}
        self._t0 = time.monotonic()
        self._done_at_start = 0
        self._live: Live | None = None  # started with the job: an early error prints only itself

    # -- hooks (worker threads) ---------------------------------------------------------
    def job_started(self, units: list[Unit], skipped: int) -> None:
        with self._lock:
            for u in units:
                self.total[u.task.name] += u.rounds
            self._t0 = time.monotonic()
        if self.notice:
            self.console.print(self.notice, markup=False, highlight=False, soft_wrap=True)
        self._live = Live(self, console=self.console, refresh_per_second=4, transient=False)
        self._live.start()  # rich calls __rich__ on every refresh

    def job_skipped(self, units: list[Unit]) -> None:
        with self._lock:
            for u in units:
                self.done[u.task.name] += u.rounds
            self._done_at_start = sum(self.done.values())

    def unit_started(self, unit: Unit) -> None:
        with self._lock:
            self.running[id(unit)] = (unit, None)
            self._rounds_in_unit[id(unit)] = 0

    def round_recorded(self, unit: Unit, result: RoundResult) -> None:
        with self._lock:
            self.done[unit.task.name] += 1
            self._rounds_in_unit[id(unit)] = self._rounds_in_unit.get(id(unit), 0) + 1
            self.status[result.status.value] += 1
            self.running[id(unit)] = (unit, result.round)

    def unit_finished(self, unit: Unit) -> None:
        with self._lock:
            ran = self._rounds_in_unit.pop(id(unit), 0)
            self.running.pop(id(unit), None)
            # Fail-stop (or a stop request): rounds never reached count as settled.
            self.done[unit.task.name] += max(0, unit.rounds - ran)

    def unit_retry(self, unit: Unit, error: BaseException, n: int) -> None:
        with self._lock:
            self.retries += 1
            self.note = f"infra retry {n} of {unit.label}: {str(error)[:80]}"

    def stopping(self, grace_sec: float) -> None:
        with self._lock:
            self.note = (
                f"stopping: no new attempts; running rounds get {grace_sec:.0f}s "
                "(Ctrl-C again to abort now)"
            )

    def budget_reached(self, reason: str) -> None:
        with self._lock:
            self.note = f"budget: {reason}; no new rounds (running ones finish)"

    def aborting(self) -> None:
        with self._lock:
            self.note = "aborting: closing sandboxes"

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self, refresh=True)
            self._live.stop()
            self._live = None

    # -- rendering -----------------------------------------------------------------------
    def __rich__(self) -> Any:
        with self._lock:
            total = sum(self.total.values())
            done = sum(self.done.values())
            elapsed = time.monotonic() - self._t0
            fresh = done - self._done_at_start
            eta = (total - done) * elapsed / fresh if fresh else None
            table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
            table.add_column("task", no_wrap=True, overflow="ellipsis", max_width=36)
            table.add_column("rounds", justify="right")
            table.add_column("", width=24)
            for name in sorted(self.total)[:30]:
                table.add_row(
                    name,
                    f"{self.done[name]}/{self.total[name]}",
                    ProgressBar(total=self.total[name], completed=self.done[name], width=24),
                )
            running = ", ".join(
                f"{u.label}" + (f" (r{r} done)" if r else "") for u, r in self.running.values()
            )
            failures = " ".join(f"{k}={v}" for k, v in sorted(self.status.items()) if k != "passed")
            # One line that fits 80 columns: cropped, never folded into a second line.
            head = Text.assemble(
                (f"{self.title} ", "bold"),
                f"{done}/{total} · ",
                (f"{self.status['passed']}✓ ", "green"),
                (failures or "no failures", "red" if failures else "dim"),
                f" · retries {self.retries}" if self.retries else "",
                f" · {elapsed:.0f}s",
                f" · ETA {eta:.0f}s" if eta is not None else "",
                no_wrap=True,
                overflow="ellipsis",
            )
            lines: list[Any] = [head, table]
            if running:  # a finished job ends on its table, not on a stray "running: -"
                lines.append(
                    Text(f"running: {running}", style="cyan", no_wrap=True, overflow="ellipsis")
                )
            if self.note:
                lines.append(Text(self.note, style="yellow", no_wrap=True, overflow="ellipsis"))
            return Group(*lines)
