"""Harbor's ATIF trajectory (Agent Trajectory Interchange Format) -> evoround's events.

ATIF is a list of steps, each from ``user``, ``system`` or ``agent``: a message (text
or content parts), the agent's ``reasoning_content``, ``tool_calls``
(``tool_call_id``, ``function_name``, ``arguments``), an ``observation`` whose results
answer tool calls (``source_call_id``, ``content``), and per-step ``metrics``
(``prompt_tokens``, ``completion_tokens``, ``cached_tokens``, ``cost_usd``).

What is kept, and where: messages become ``message`` events (reasoning in
``arguments.reasoning_content``), tool calls ``tool_call`` events, observation results
``tool_result`` events, and a step's token counts the ``usage`` of its first event.
Steps marked ``is_copied_context`` (history copied in after a summarisation, already
reported when it happened) are skipped so a round's work is not counted twice. Cost in
USD does not fit evoround's integer usage record: it is kept in the step's first
event's ``arguments.cost_usd``. Token ids and logprobs are not kept.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from evoround.results import EventType, TrajectoryEvent, truncate

MAIN_FILE = re.compile(r"^trajectory(\.cont-\d+)?\.json$")
"""The agent's own trajectory files (continuations after summarisation included); other
``trajectory.*.json`` files are subagents', whose work the main file references."""


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, dict):
                if p.get("type") == "text" or "text" in p:
                    parts.append(str(p.get("text") or ""))
                else:
                    parts.append(f"[{p.get('type') or 'content'}]")
            else:
                parts.append(str(p))
        return "\n".join(parts)
    return str(content)


def _when(step: dict[str, Any]) -> dict[str, Any]:
    ts = step.get("timestamp")
    if isinstance(ts, str):
        try:
            return {"timestamp": datetime.fromisoformat(ts.replace("Z", "+00:00"))}
        except ValueError:
            pass
    return {}


def step_usage(metrics: Any) -> dict[str, int]:
    """ATIF step metrics as evoround usage (prompt, completion, cached and total tokens)."""
    if not isinstance(metrics, dict):
        return {}
    out: dict[str, int] = {}
    for k in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        v = metrics.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
    if "prompt_tokens" in out or "completion_tokens" in out:
        out["total_tokens"] = out.get("prompt_tokens", 0) + out.get("completion_tokens", 0)
    return out


def _results(step: dict[str, Any]) -> list[Any]:
    observation = step.get("observation") or {}
    return (observation.get("results") or []) if isinstance(observation, dict) else []


def _call_event(call: dict[str, Any], when: dict[str, Any]) -> TrajectoryEvent:
    """A call's arguments that are not an object are kept under ``value``."""
    args = call.get("arguments")
    return TrajectoryEvent(
        type=EventType.tool_call,
        tool_call_id=call.get("tool_call_id"),
        name=call.get("function_name"),
        arguments=args if isinstance(args, dict) else {"value": args},
        **when,
    )


def _result_event(res: dict[str, Any], when: dict[str, Any]) -> TrajectoryEvent:
    return TrajectoryEvent(
        type=EventType.tool_result,
        tool_call_id=res.get("source_call_id"),
        content=truncate(_text(res.get("content"))),
        **when,
    )


def _agent_events(step: dict[str, Any], text: str, when: dict[str, Any]) -> list[TrajectoryEvent]:
    """The agent's message (with its reasoning), its tool calls, then the observation's
    results; never empty: an agent step with nothing in it still used tokens."""
    out: list[TrajectoryEvent] = []
    reasoning = step.get("reasoning_content")
    if text or reasoning:
        out.append(
            TrajectoryEvent(
                type=EventType.message,
                role="assistant",
                content=text,
                arguments={"reasoning_content": reasoning} if reasoning else None,
                **when,
            )
        )
    out += [_call_event(c, when) for c in step.get("tool_calls") or [] if isinstance(c, dict)]
    out += [_result_event(r, when) for r in _results(step) if isinstance(r, dict)]
    return out or [TrajectoryEvent(type=EventType.message, role="assistant", **when)]


def _note_metrics(event: TrajectoryEvent, metrics: Any) -> None:
    """A step's token counts become the usage of its first event; its cost in USD, which
    evoround's integer usage cannot hold, goes in that event's ``arguments.cost_usd``."""
    usage = step_usage(metrics)
    if usage:
        event.usage = usage
    cost = metrics.get("cost_usd") if isinstance(metrics, dict) else None
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        event.arguments = {**(event.arguments or {}), "cost_usd": cost}


def _step_events(step: dict[str, Any]) -> list[TrajectoryEvent]:
    """A user or system step is one message (its metrics, if any, are not the agent's);
    an agent step is its events with the step's metrics on the first."""
    when = _when(step)
    source = step.get("source")
    text = _text(step.get("message"))
    if source in ("user", "system"):
        return [TrajectoryEvent(type=EventType.message, role=source, content=text, **when)]
    out = _agent_events(step, text, when)
    _note_metrics(out[0], step.get("metrics"))
    return out


def atif_events(trajectory: dict[str, Any]) -> list[TrajectoryEvent]:
    """One ATIF trajectory's steps as events, in order (copied context skipped)."""
    events: list[TrajectoryEvent] = []
    for step in trajectory.get("steps") or []:
        if isinstance(step, dict) and not step.get("is_copied_context"):
            events.extend(_step_events(step))
    return events


def context_usage(context: dict[str, Any]) -> dict[str, int]:
    """Harbor's ``AgentContext`` totals (subagents included) as evoround usage."""
    out: dict[str, int] = {}
    for src, dst in (
        ("n_input_tokens", "prompt_tokens"),
        ("n_output_tokens", "completion_tokens"),
        ("n_cache_tokens", "cached_tokens"),
    ):
        v = context.get(src)
        if isinstance(v, int) and not isinstance(v, bool):
            out[dst] = v
    if "prompt_tokens" in out or "completion_tokens" in out:
        out["total_tokens"] = out.get("prompt_tokens", 0) + out.get("completion_tokens", 0)
    return out
