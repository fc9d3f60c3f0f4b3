"""The live status of ``evoround run`` fits an 80-column terminal: no line is folded."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime

from rich.console import Console

from evoround.cli._live import LiveObserver
from evoround.engine import Unit
from evoround.results import Mode, RoundResult, RoundStatus
from evoround.tasks import load_tasks
from tests.helpers import COUNTER


def _result(unit: Unit, n: int, status: RoundStatus) -> RoundResult:
    return RoundResult(job="j", task=unit.task.name, task_digest="d", n_rounds=4,
                       mode=unit.mode, attempt=unit.attempt, round=n, agent="a", sandbox="local",
                       passed=status is RoundStatus.passed, status=status,
                       started_at=datetime.now(UTC))  # fmt: skip


def test_every_line_of_the_live_status_fits_80_columns() -> None:
    (task,) = load_tasks([COUNTER])
    meta = task.config.task.model_copy(update={"name": "a-task-with-a-long-name-" + "x" * 60})
    long = replace(task, config=task.config.model_copy(update={"task": meta}))
    units = [Unit(t, Mode.mt, a) for t in (task, long) for a in (1, 2, 3)]
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    obs = LiveObserver(console, "harbor:terminus-2-with-a-long-agent-name")
    with obs._lock:  # the display is drawn by the test, not started (no Live thread)
        for u in units:
            obs.total[u.task.name] += u.rounds
    for u in units:
        obs.unit_started(u)
    for n, status in enumerate([RoundStatus.passed, RoundStatus.failed, RoundStatus.infra,
                                RoundStatus.model_api, RoundStatus.agent_timeout], start=1):  # fmt: skip
        obs.round_recorded(units[n % len(units)], _result(units[n % len(units)], n, status))
    obs.unit_retry(units[0], RuntimeError("docker: " + "very long error " * 20), 2)
    obs.budget_reached("--max-cost $5 reached (spent $5.0123)")
    console.print(obs)
    lines = buf.getvalue().splitlines()
    # head, table header, one row per task, running, note: nothing folded into a 2nd line
    assert len(lines) == 6, "\n".join(lines)
    too_wide = [ln for ln in lines if len(ln) > 80]
    assert too_wide == [], too_wide
    assert lines[0].startswith("harbor:terminus-2")
