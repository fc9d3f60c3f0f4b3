"""How a job ran, where it changes the numbers: the Protocol table of every report.

Why one module: the text report, report.html and ``--json`` must say the same thing, and
each item here changes what a figure means (fail-stop vs continue, a round window, a base
image that is not the task's own, a pass threshold other than EvoCode-Bench's 0.999, a
trial reward other than the mean over steps, and what the agent itself could not do).
"""

from __future__ import annotations

from pathlib import Path

from evoround.results import JobView
from evoround.tasks import TaskFormatError, load_task

BENCHMARK_PASS = 0.999
"""EvoCode-Bench's pass test of a step's reward (``compute_metrics.py``)."""


def _threshold(value: float | dict[str, float]) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} >= {v:g}" for k, v in sorted(value.items()))
    return f"reward >= {value:g}"


def _task_rows(view: JobView) -> list[tuple[str, str]]:
    """Each task's pass threshold (min_reward) and trial-reward strategy: one row per task
    that differs from EvoCode-Bench's defaults, one summary row per common case (a large
    job does not get one row per task)."""
    rows: list[tuple[str, str]] = []
    common: dict[str, list[str]] = {}
    for name, ref in sorted(view.config.tasks.items()):
        try:
            task = load_task(Path(ref.path))
        except (TaskFormatError, OSError):
            common.setdefault("unknown (task not readable at its recorded path)", []).append(name)
            continue
        spec = task.config.verifier
        role = (
            "only an early stop, as in Harbor"
            if spec.min_reward_semantics == "early_stop"
            else "its pass threshold, also an early stop"
        )
        overrides = [
            f"round {r.index}: {_threshold(r.spec.min_reward)} is {role}"
            for r in task.rounds
            if r.spec.min_reward is not None
        ]
        if spec.kind != "script":
            common.setdefault(f"{spec.kind} verifier (its tests decide)", []).append(name)
        elif spec.min_reward == BENCHMARK_PASS and not overrides:
            common.setdefault(f"reward >= {BENCHMARK_PASS} (EvoCode-Bench's)", []).append(name)
        else:
            rows.append(
                (f"min_reward of {name}", "; ".join([_threshold(spec.min_reward), *overrides]))
            )
        strategy = task.config.task.metadata.get("multi_step_reward_strategy")
        if strategy not in (None, "mean"):
            rows.append(
                (
                    f"reward strategy of {name}",
                    f"{strategy!r} in the source; evoround's mean reward is the mean over "
                    "rounds ('mean') for every task",
                )
            )
    for text, names in common.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        rows.append(("pass threshold", f"{text}: {len(names)} task(s) ({shown})"))
    return rows


def protocol_rows(view: JobView) -> list[tuple[str, str]]:
    """(what, value) pairs, in the order a reader needs them."""
    cfg = view.config
    rows = [
        (
            "on failed round",
            "stop (fail-stop: the paper's MT@k)"
            if cfg.on_fail == "stop"
            else "continue (later rounds run in the same workspace and session: "
            "EvoCode-Bench's current runner)",
        )
    ]
    if cfg.rounds_window:
        a, b = cfg.rounds_window
        rows.append(
            (
                "rounds (window)",
                f"{a}-{b or 'end'} (rounds before {a} fast-forwarded from the reference; "
                "metrics over the window)",
            )
        )
    else:
        rows.append(("rounds (window)", "all"))
    for src, dst in sorted(cfg.base_image_map.items()):
        rows.append(("base image substitution", f"{src} -> {dst} (--base-image-map)"))
    for name, image in sorted(cfg.base_images.items()):
        rows.append((f"base image of {name}", image))
    rows += _task_rows(view)
    rows.append(
        (
            "reward strategy",
            "mean reward = per attempt, rounds passed / rounds (Harbor's 'mean'); then the "
            "mean over attempts and over evaluated tasks",
        )
    )
    for note in cfg.agent_notes:
        rows.append(("agent note", f"{cfg.agent} {note}"))
    return rows
