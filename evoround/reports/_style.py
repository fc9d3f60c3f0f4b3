"""How the report's charts look: one colour per agent, dash per series, integer axes,
legend outside, wrapped labels, error bars from intervals. Shared by every figure so the
rules of :mod:`evoround.reports._figures` hold in one place."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from evoround.reports._readers import NOT_RECORDED
from evoround.reports._uncertainty import Interval
from evoround.results import JobView

PALETTE = (
    "#1f77b4",  # blue
    "#ff7f0e",  # orange
    "#2ca02c",  # green
    "#d62728",  # red
    "#9467bd",  # purple
    "#8c564b",  # brown
    "#e377c2",  # pink
    "#17becf",  # cyan
    "#7f7f7f",  # grey
    "#000000",  # black
)
"""Ten well-separated hues (the category-10 set common in papers); with MT solid / SR dashed
and SR bars hatched, series stay apart in greyscale print too."""

MT_DASH, SR_DASH, ALT_DASH, ALT2_DASH = "solid", "dash", "dot", "dashdot"
SR_PATTERN = "/"
GRID = "#e3e3e3"
FONT = {"family": "Helvetica, Arial, sans-serif", "size": 12, "color": "#1d2330"}


# ---- identity and colour ----------------------------------------------------------------


def agent_key(view: JobView) -> str:
    """What a reader calls the agent: its name, and the model when one was recorded."""
    c = view.config
    return f"{c.agent} · {c.model}" if c.model else c.agent


def agent_colours(views: list[JobView]) -> dict[str, str]:
    """Job name -> colour. The colour follows the agent's name, not the order of the jobs,
    so an agent keeps its colour across reports; jobs of one agent share it."""
    keys = sorted({agent_key(v) for v in views})
    taken: dict[str, str] = {}
    used: set[int] = set()
    for key in keys:
        start = int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) % len(PALETTE)
        slot = start
        while slot in used and len(used) < len(PALETTE):
            slot = (slot + 1) % len(PALETTE)
        used.add(slot)
        taken[key] = PALETTE[slot]
    return {v.path.name: taken[agent_key(v)] for v in views}


def series_names(views: list[JobView]) -> dict[str, str]:
    """Job name -> legend name: the agent, with the job's name when one agent ran twice."""
    counts = Counter(agent_key(v) for v in views)
    return {
        v.path.name: agent_key(v)
        if counts[agent_key(v)] == 1
        else f"{agent_key(v)} ({v.path.name.rsplit('__', 1)[-1]})"
        for v in views
    }


# ---- axes and layout --------------------------------------------------------------------


def _nice_step(span: float, ticks: int = 8) -> int:
    """The smallest of 1, 2, 5, 10, 20, ... that draws at most ``ticks`` ticks."""
    if span <= ticks:
        return 1
    mag = 10 ** math.floor(math.log10(span / ticks))
    for m in (1, 2, 5, 10):
        if span / (m * mag) <= ticks:
            return int(m * mag)
    return int(10 * mag)


def count_axis(title: str, max_count: float) -> dict[str, Any]:
    """An axis of counts: starts at 0, integer ticks only."""
    top = max(1.0, float(max_count))
    return {
        "title": {"text": title},
        "tickmode": "linear",
        "tick0": 0,
        "dtick": _nice_step(top),
        "tickformat": "d",
        "range": [0, top * 1.12],
        "automargin": True,
        "gridcolor": GRID,
        "zeroline": False,
    }


def round_axis(title: str, last: int) -> dict[str, Any]:
    """An axis of round indices (or k): integer ticks 1..last, half a step of room each side."""
    last = max(1, last)
    return {
        "title": {"text": title},
        "tickmode": "linear",
        "tick0": 1,
        "dtick": _nice_step(last),
        "range": [0.5, last + 0.5],
        "automargin": True,
        "gridcolor": GRID,
        "zeroline": False,
    }


def rate_axis(title: str) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "range": [-0.05, 1.05],
        "tickformat": ".0%",
        "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
        "automargin": True,
        "gridcolor": GRID,
        "zeroline": False,
    }


def category_axis(title: str = "") -> dict[str, Any]:
    """Horizontal category labels (long ones are wrapped by :func:`wrap`, never rotated into
    the axis title); plotly grows the margin to fit them."""
    return {
        "title": {"text": title},
        "automargin": True,
        "tickangle": 0,
        "type": "category",
        "tickfont": {"size": 11},
    }


def wrap(label: str, width: int = 12) -> str:
    """Break a category label into lines of about ``width`` characters (``<br>``)."""
    words, lines, line = label.replace("_", " ").split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "<br>".join(lines)


def layout(title: str, xaxis: dict[str, Any], yaxis: dict[str, Any], **extra: Any) -> dict:
    return {
        "title": {"text": title, "x": 0, "xanchor": "left", "y": 0.97, "yanchor": "top"},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "margin": {"l": 70, "r": 20, "t": 56, "b": 56},
        "height": 400,
        "font": FONT,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "showlegend": True,
        "legend": {
            "x": 1.02,
            "xanchor": "left",
            "y": 1,
            "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0)",
            "font": {"size": 11},
        },
        **extra,
    }


def jitter(index: int, count: int, width: float = 0.06) -> float:
    """Sideways shift of series ``index`` of ``count`` so coinciding lines stay visible."""
    return 0.0 if count <= 1 else (index - (count - 1) / 2) * width


def _spread(iv: Interval | None) -> tuple[float, float] | None:
    """(above, below) the estimate, or None when the point has no complete interval."""
    if iv is None or iv.estimate is None or iv.lo is None or iv.hi is None:
        return None
    return max(0.0, iv.hi - iv.estimate), max(0.0, iv.estimate - iv.lo)


def error_bars(ivs: Sequence[Interval | None]) -> dict[str, Any] | None:
    """Asymmetric error bars from intervals (None where a point has no interval)."""
    spreads = [_spread(iv) for iv in ivs]
    if all(s is None for s in spreads):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [s[0] if s else None for s in spreads],
        "arrayminus": [s[1] if s else None for s in spreads],
        "thickness": 1,
        "width": 3,
    }


def line(
    name: str,
    xs: list[float],
    ys: list[float | None],
    colour: str,
    dash: str,
    *,
    group: str,
    true_x: list[int] | None = None,
    error: dict[str, Any] | None = None,
    symbol: str = "circle",
) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": xs,
        "y": ys,
        "line": {"color": colour, "dash": dash, "width": 2},
        "marker": {"color": colour, "size": 6, "symbol": symbol},
        "legendgroup": group,
    }
    if true_x is not None:
        trace["customdata"] = true_x
        trace["hovertemplate"] = "%{fullData.name}<br>%{customdata}: %{y:.1%}<extra></extra>"
    if error is not None:
        trace["error_y"] = {**error, "color": colour}
    return trace


def unavailable(title: str, note: str = NOT_RECORDED) -> dict[str, Any]:
    return {"title": title, "available": False, "note": note, "series": [], "plotly": None}


def figure(title: str, series: list, data: list, layout: dict, note: str = "") -> dict:
    """A drawable figure, or the one-line note when it has nothing to draw."""
    if not data:
        return {**unavailable(title, note or "nothing to show"), "series": series}
    return {
        "title": title,
        "available": True,
        "note": note,
        "series": series,
        "plotly": {"data": data, "layout": layout},
    }


def bar(name: str, xs: list, ys: list, colour: str, *, sr: bool = False, **extra: Any) -> dict:
    marker: dict[str, Any] = {"color": colour, "line": {"color": colour, "width": 1}}
    if sr:
        marker = {
            "color": "white",
            "line": {"color": colour, "width": 1.5},
            "pattern": {"shape": SR_PATTERN, "fgcolor": colour, "solidity": 0.45},
        }
    return {"type": "bar", "name": name, "x": xs, "y": ys, "marker": marker, **extra}
