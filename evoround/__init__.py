"""evoround: multi-turn, stateful evaluation of coding agents.

The library's door is :mod:`evoround.api` (docs/api.md)::

    from evoround import load_tasks, report, run

    result = run(agent="oracle", modes=["mt"])
    print(result.metrics.mt_at_k, result.cost, result.exit_code)

The names below are loaded on first use, so ``import evoround.settings`` (which every room
does) stays cheap and imports no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evoround.api import (
        JobReport,
        Report,
        ResumeError,
        RunRequest,
        RunResult,
        load_tasks,
        report,
        run,
    )

__all__ = [
    "JobReport",
    "Report",
    "ResumeError",
    "RunRequest",
    "RunResult",
    "load_tasks",
    "report",
    "run",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from evoround import api

        return getattr(api, name)
    raise AttributeError(f"module 'evoround' has no attribute {name!r}")
