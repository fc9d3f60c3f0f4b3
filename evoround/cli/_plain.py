"""Plain progress for a job nobody watches: a CI log, ``> log 2>&1``, ``nohup``.

The live display draws nothing when stderr is not a terminal, so a long job wrote nothing
for half an hour and looked hung. This observer takes the same round events as the live
display (:class:`evoround.engine.JobObserver` hooks, from worker threads) and writes one
flushed line per recorded round, plus a heartbeat every ``EVOROUND_HEARTBEAT_SEC`` seconds
(default 60) so a quiet stretch (a slow agent, an image build) still shows the job alive.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import IO, TYPE_CHECKING

from evoround.engine import JobObserver, Unit
from evoround.results import RoundResult

if TYPE_CHECKING:
    from rich.console import Console

    from evoround.cli._live import LiveObserver


class PlainObserver(JobObserver):
    """One line per event on ``stream``; all state behind one lock."""

    def __init__(
        self, stream: IO[str], title: str, heartbeat_sec: float = 60.0, notice: str | None = None
    ) -> None:
        self.stream = stream
        self.notice = notice
        self.title = title
        self.heartbeat_sec = heartbeat_sec
        self._lock = threading.Lock()
        self.total = 0
        self.done = 0
        self.status: Counter[str] = Counter()
        self.running: dict[int, Unit] = {}
        self._rounds_in_unit: dict[int, int] = {}
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _line(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        try:
            self.stream.write(f"[{stamp}] {self.title}: {text}\n")
            self.stream.flush()  # a log tailed by a person or a CI page: now, not at exit
        except (OSError, ValueError):  # a closed or broken log must not stop the job
            pass

    def _elapsed(self) -> str:
        sec = int(time.monotonic() - self._t0)
        return (
            f"{sec // 3600}h{sec % 3600 // 60:02d}m{sec % 60:02d}s"
            if sec >= 3600
            else (f"{sec // 60}m{sec % 60:02d}s" if sec >= 60 else f"{sec}s")
        )

    # -- hooks (worker threads) ---------------------------------------------------------
    def job_started(self, units: list[Unit], skipped: int) -> None:
        with self._lock:
            self.total += sum(u.rounds for u in units)
            self._t0 = time.monotonic()
            total = self.total
        already = f" ({skipped} of {len(units)} units done already)" if skipped else ""
        if self.notice:  # when the job starts: an early error prints alone
            self._line(self.notice)
        self._line(f"job started: {total} rounds in {len(units)} units{already}")
        if self._beat is None:
            self._beat = threading.Thread(
                target=self._heartbeat, name="evoround-heartbeat", daemon=True
            )
            self._beat.start()

    def job_skipped(self, done: list[Unit]) -> None:
        """Units a resume finds done: settled already (job_started counted their rounds
        in the total)."""
        with self._lock:
            self.done += sum(u.rounds for u in done)

    def unit_started(self, unit: Unit) -> None:
        with self._lock:
            self.running[id(unit)] = unit
            self._rounds_in_unit[id(unit)] = 0

    def round_recorded(self, unit: Unit, result: RoundResult) -> None:
        with self._lock:
            self.done += 1
            self._rounds_in_unit[id(unit)] = self._rounds_in_unit.get(id(unit), 0) + 1
            self.status[result.status.value] += 1
            done, total = self.done, self.total
        self._line(
            f"{unit.task.name} {unit.mode.value}-{unit.attempt:02d} round {result.round} "
            f"{result.status.value} ({done}/{total})"
        )

    def unit_finished(self, unit: Unit) -> None:
        with self._lock:
            ran = self._rounds_in_unit.pop(id(unit), 0)
            self.running.pop(id(unit), None)
            self.done += max(0, unit.rounds - ran)  # fail-stop: rounds never reached settle

    def unit_retry(self, unit: Unit, error: BaseException, n: int) -> None:
        self._line(f"infra retry {n} of {unit.label}: {' '.join(str(error).split())[:200]}")

    def stopping(self, grace_sec: float) -> None:
        self._line(
            f"stopping: no new attempts; running rounds get {grace_sec:.0f}s "
            "(a second SIGINT/SIGTERM aborts now)"
        )

    def budget_reached(self, reason: str) -> None:
        self._line(f"budget: {reason}; no new rounds (running ones finish)")

    def aborting(self) -> None:
        self._line("aborting: closing sandboxes")

    # -- heartbeat and end ---------------------------------------------------------------
    def heartbeat(self) -> str:
        """The state of the job in one line (what the heartbeat prints)."""
        with self._lock:
            running = ", ".join(u.label for u in self.running.values()) or "-"
            done, total = self.done, self.total
        return f"{done}/{total} rounds · running: {running} · elapsed {self._elapsed()}"

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_sec):
            self._line(f"alive: {self.heartbeat()}")

    def close(self) -> None:
        """Stop the heartbeat; a job that started ends on one line (finished or stopped)."""
        self._stop.set()
        if self._beat is None:
            return
        self._beat.join(timeout=5)
        self._beat = None
        with self._lock:
            counts = " ".join(f"{k}={v}" for k, v in sorted(self.status.items()))
            recorded = sum(self.status.values())
            done, total = self.done, self.total
        # settled counts the rounds a fail-stop attempt never reached; recorded, what ran
        self._line(
            f"ended: {done}/{total} rounds settled, {recorded} recorded "
            f"({counts or 'none'}) in {self._elapsed()}"
        )


class QuietObserver(JobObserver):
    """``--progress none``: nothing while the job runs but its notice (the report prints)."""

    def __init__(self, console: Console, notice: str | None = None) -> None:
        self.console = console
        self.notice = notice

    def job_started(self, units: list[Unit], skipped: int) -> None:
        if self.notice:  # when the job starts: an early error prints alone
            self.console.print(self.notice, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        pass


def job_observer(
    progress: str, console: Console, title: str, notice: str | None = None
) -> LiveObserver | PlainObserver | QuietObserver:
    """The display ``--progress`` asks for; ``auto`` is live on a terminal, plain otherwise.

    ``notice``: one line printed when the job starts."""
    if progress == "auto":
        progress = "live" if console.is_terminal else "plain"
    if progress == "live":
        from evoround.cli._live import LiveObserver

        return LiveObserver(console, title, notice)
    if progress == "none":
        return QuietObserver(console, notice)
    from evoround.settings import settings

    return PlainObserver(console.file, title, settings().heartbeat_sec, notice)
