"""report.html: one self-contained file (plotly.js inlined) that opens with no network.

The numbers come from :mod:`evoround.reports._analysis`; this module only renders
them. Plots are drawn in the browser from the same figure specs ``--json``
prints. The page records JavaScript errors and render time on ``<body>``
(``data-js-errors``, ``data-render-ms``, ``data-plots``) so a headless browser
test can check it without a DevTools client.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from evoround.fileio import atomic_write
from evoround.reports._analysis import build_report
from evoround.reports._readers import CLASS_SHORT, NOT_RECORDED
from evoround.reports._uncertainty import DEFAULT_SEED
from evoround.reports._viewer import job_link, round_link, viewer_base
from evoround.results import JobView

MAX_EVENTS = 200
"""Trajectory events shown per round; the rest are counted (the file stays openable)."""
MAX_CONTENT = 3000
"""Characters shown per trajectory event, head and tail kept."""


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle shipped inside the plotly wheel (inlined: no CDN)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _fmt(v: Any) -> str:
    """Percentages (two decimals) for fractions; the literal 'not recorded' stays visible."""
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{100 * v:.2f}"  # two decimals, as the benchmark's JSON and the text report
    return str(v)


def _clip(text: Any, limit: int = MAX_CONTENT) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    if len(s) <= limit:
        return s
    half = limit // 2
    return f"{s[:half]}\n[... {len(s) - limit} characters not shown ...]\n{s[-half:]}"


def _script_json(data: Any) -> str:
    """JSON that is safe inside <script type=application/json>."""
    return (
        json.dumps(data, separators=(",", ":"), allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("evoround.reports", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = _fmt
    env.filters["clip"] = _clip
    env.filters["short"] = lambda code: CLASS_SHORT.get(code, code)
    env.filters["tojson_compact"] = lambda v: json.dumps(v, ensure_ascii=False)
    return env


def _details(row: dict[str, Any]) -> dict[str, Any]:
    """What a round's panel shows, clipped so one huge trajectory cannot bloat the page."""
    events = row.get("trajectory") or []
    return {
        "error": row["error"],
        "verifier_problems": row["verifier_problems"],
        "failing_tests": [
            {**t, "message": _clip(t.get("message") or "", 1500)} for t in row["failing_tests"]
        ],
        "checks_expected": row.get("checks_expected", True),
        "checks": None
        if row["checks"] is None
        else [
            {
                **c,
                "evidence": _clip(c.get("evidence") or c.get("reason") or "", 1500),
            }
            for c in row["checks"]
        ],
        "n_events": len(events),
        "trajectory": [
            {
                "type": e.get("type"),
                "role": e.get("role"),
                "name": e.get("name"),
                "exit_code": e.get("exit_code"),
                "arguments": _clip(e["arguments"]) if e.get("arguments") else None,
                "content": _clip(e.get("content") or ""),
            }
            for e in events[:MAX_EVENTS]
        ],
    }


PLOT_CONFIG = {"displayModeBar": False, "displaylogo": False, "responsive": True}
"""No modebar: it covered chart titles, and a printed chart has no use for it."""


def protocol_grid(jobs: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """The Protocol rows of several jobs as one table: (what, one value per job), rows in
    first-seen order, repeated rows of a job joined; a reader compares jobs across a line
    instead of scrolling through one table per job."""
    order: dict[str, None] = {}
    per_job: list[dict[str, list[str]]] = []
    for job in jobs:
        rows: dict[str, list[str]] = {}
        for row in job["protocol"]:
            order.setdefault(row["what"], None)
            rows.setdefault(row["what"], []).append(row["value"])
        per_job.append(rows)
    return [(what, ["; ".join(rows.get(what, ["—"])) for rows in per_job]) for what in order]


def _viewer_links(viewer: str | None) -> dict[str, Any]:
    """What the template needs to link into a viewer at ``viewer`` (nothing without one)."""
    if viewer is None:
        return {"viewer": None}
    base = viewer_base(viewer)
    return {
        "viewer": base,
        "viewer_job": lambda job: job_link(base, job),
        "viewer_round": lambda r: round_link(
            base, r["job"], r["task"], r["mode"], r["attempt"], r["round"]
        ),
    }


def render_html(
    data: dict[str, Any], *, inline_js: str | None = None, viewer: str | None = None
) -> str:
    """Render report data (with trajectories) to a standalone HTML string; ``viewer``: the
    address of an ``evoround view`` serving these jobs, linked from every job and round
    (None: the file links nowhere outside itself)."""
    figures = {name: fig["plotly"] for name, fig in data["figures"].items() if fig["available"]}
    rounds_by_id = {row["id"]: row for rows in data["rounds"].values() for row in rows}
    details = {rid: _details(row) for rid, row in rounds_by_id.items()}
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            data=data,
            rounds_by_id=rounds_by_id,
            figures_json=_script_json(figures),
            plot_config_json=_script_json(PLOT_CONFIG),
            rounds_json=_script_json(details),
            plotly_js=plotly_js() if inline_js is None else inline_js,
            not_recorded=NOT_RECORDED,
            max_events=MAX_EVENTS,
            protocol_grid=protocol_grid(data["jobs"]),
            **_viewer_links(viewer),
        )
    )


def default_html_path(run_dirs: list[Path]) -> Path:
    """One job: inside it. Several: their common parent folder."""
    if len(run_dirs) == 1:
        return run_dirs[0] / "report.html"
    parent = Path(os.path.commonpath([str(p.resolve()) for p in run_dirs]))
    return parent / "report.html"


def write_html_report(
    views: list[JobView],
    path: Path,
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
    viewer: str | None = None,
) -> Path:
    """Write report.html atomically (a half-written report is never left behind);
    ``viewer``: see :func:`render_html`."""
    if viewer is not None:
        viewer_base(viewer)  # a bad address fails before the analysis, not after
    data = build_report(views, trajectories=True, resamples=resamples, seed=seed)
    html = render_html(data, viewer=viewer)
    atomic_write(path, html)
    return path
