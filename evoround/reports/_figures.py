"""The report's charts as plotly data, drawn so an author can print them.

Rules every chart follows (issue 16), so the page, ``--json`` and ``--figures`` agree:

- One colour per agent in every chart of every report: the colour is picked from a fixed
  palette of ten well-separated hues by a hash of the agent's name (and model), not by its place in
  the job list; two agents of one report that hash alike take the next free colour, in
  name order. Within a colour, MT is a solid line / filled bar and SR a dashed line /
  hatched bar; other series (ISR, conditional rates) use dotted or dash-dot lines.
- Count and round axes have integer ticks only; rates run 0-100 % with a little room so a
  line at 100 % is not cut by the frame; lines of several agents are shifted sideways by a
  few hundredths of a round (``jitter``) so coinciding lines stay visible, and hovering
  shows the true round.
- Legends sit outside the plotting area (right), titles left-aligned above it, every axis
  auto-sized so no tick label is clipped; the modebar is hidden (the page sets it).
- A chart with nothing to draw is replaced by a one-line note (``available: False``).
- Intervals come from :mod:`evoround.reports._uncertainty`, as error bars.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from evoround.reports._compliance import compute_compliance
from evoround.reports._readers import NOT_RECORDED, label_of, records_of
from evoround.reports._style import (
    ALT2_DASH,
    ALT_DASH,
    GRID,
    MT_DASH,
    SR_DASH,
    agent_colours,
    category_axis,
    count_axis,
    jitter,
    rate_axis,
    round_axis,
    series_names,
    wrap,
)
from evoround.reports._style import bar as _bar
from evoround.reports._style import error_bars as _error
from evoround.reports._style import figure as _figure
from evoround.reports._style import layout as _layout
from evoround.reports._style import line as _line
from evoround.reports._uncertainty import (
    CurvePoint,
    Interval,
    JobUncertainty,
    RoundProfile,
    job_uncertainty,
)
from evoround.results import JobView, Metrics, Mode

FF_BINS = [(0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0)]


# ---- the figures --------------------------------------------------------------------------


def _first_failure(view: JobView, m: Metrics) -> dict[str, Any]:
    absolute: Counter[str] = Counter()
    normalised = [0] * len(FF_BINS)
    completed = 0
    window = view.config.rounds_window
    first = window[0] if window else 1  # under --rounds A-B, t.n_rounds counts A..B only
    for t in m.tasks:
        for f in t.first_failure:
            if f is None:
                completed += 1
                continue
            absolute[str(f)] += 1
            x = (f - first + 1) / t.n_rounds
            idx = next(j for j, (lo, hi) in enumerate(FF_BINS) if lo < x <= hi or j == 0 and x == 0)
            normalised[idx] += 1
    return {
        "label": label_of(view),
        "by_round": dict(sorted(absolute.items(), key=lambda kv: int(kv[0]))),
        "normalised_bins": [
            {"bin": f"({lo:.1f}, {hi:.1f}]", "attempts": n}
            for (lo, hi), n in zip(FF_BINS, normalised, strict=True)
        ],
        "completed": completed,
    }


Figure = dict[str, Any]
"""One chart: ``title``, ``available``, ``note``, ``series`` (plain data) and ``plotly``."""


@dataclass(frozen=True)
class FigureInputs:
    """What every figure reads, computed once so all charts of a report agree: the same
    metrics, intervals, colour and legend name per agent."""

    views: list[JobView]
    metrics: list[Metrics]
    per_round: dict[str, list[dict[str, Any]]]
    unc: dict[str, JobUncertainty]
    colour: dict[str, str]
    names: dict[str, str]
    last_round: int
    """The longest task's round count over all jobs: every by-round chart shares the axis."""

    @property
    def n(self) -> int:
        return len(self.views)

    def ident(self, view: JobView) -> tuple[str, str, str]:
        """(colour, legend group, legend name) of one job's series."""
        return self.colour[view.path.name], view.path.name, self.names[view.path.name]


# ---- headline figures with their intervals, one colour per agent -------------------------

HEADS = ("MT@k", "SR", "Gap", "Comp", "CSR", "ISR")


def _headline_trace(fi: FigureInputs, view: JobView, shown: dict[str, Interval]) -> Figure:
    """One agent's headline estimates as markers, its intervals as error bars."""
    colour = fi.colour[view.path.name]
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "markers",
        "name": fi.names[view.path.name],
        "x": list(shown),
        "y": [iv.estimate for iv in shown.values()],
        "offsetgroup": view.path.name,
        "legendgroup": view.path.name,
        "marker": {"color": colour, "size": 9},
    }
    err = _error(list(shown.values()))
    if err is not None:
        trace["error_y"] = {**err, "color": colour}
    return trace


def _headline_layout(fi: FigureInputs, floor: float) -> dict[str, Any]:
    """The x title names k, resamples and seed; the y range reaches down to the lowest bound."""
    ks = sorted({fi.unc[v.path.name].k for v in fi.views})
    some = next(iter(fi.unc.values()), None)
    return _layout(
        "Headline figures with 95% bootstrap intervals",
        category_axis(
            f"figure (k = {', '.join(map(str, ks))}"
            + (f"; {some.resamples} resamples over tasks, seed {some.seed})" if some else ")")
        ),
        {k: v for k, v in rate_axis("percent").items() if k != "tickvals"}
        | {"range": [min(0.0, floor) - 0.05, 1.05]},
        scattermode="group",
    )


def _headline_intervals(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    floor = 0.0
    for view in fi.views:
        u = fi.unc[view.path.name]
        ivs = {h: u.headline.get(h) for h in HEADS}
        series.append(
            {
                "label": label_of(view),
                "k": u.k,
                "resamples": u.resamples,
                "seed": u.seed,
                "figures": {h: iv.model_dump(mode="json") for h, iv in ivs.items() if iv},
            }
        )
        shown = {h: iv for h, iv in ivs.items() if iv is not None and iv.estimate is not None}
        if not shown:
            continue
        traces.append(_headline_trace(fi, view, shown))
        lows = [iv.lo for iv in ivs.values() if iv is not None and iv.lo is not None]
        floor = min([floor, *lows])
    return _figure(
        "Headline figures with 95% bootstrap intervals",
        series,
        traces,
        _headline_layout(fi, floor),
        "no headline figure could be computed",
    )


# ---- SR vs MT by round index, with intervals ---------------------------------------------


def _dump(iv: Interval | None) -> dict[str, Any] | None:
    return iv.model_dump(mode="json") if iv is not None else None


def _sr_vs_mt_traces(
    fi: FigureInputs, j: int, view: JobView, m: Metrics, prof: dict[int, RoundProfile]
) -> list[Figure]:
    """MT (solid) and SR (dashed) of one agent, each with its error bars; a mode that never
    ran draws no line. MT and SR get their own sideways shift."""
    c, g, nm = fi.ident(view)
    rounds = [r.round for r in m.by_round]
    out = []
    mt = [r.mt_pass_rate for r in m.by_round]
    if any(v is not None for v in mt):
        err = _error([prof[i].mt if i in prof else None for i in rounds])
        xs = [i + jitter(2 * j, 2 * fi.n, 0.04) for i in rounds]
        out.append(_line(f"{nm} MT", xs, mt, c, MT_DASH, group=g, true_x=rounds, error=err))
    sr = [r.sr_pass_rate for r in m.by_round]
    if any(v is not None for v in sr):
        err = _error([prof[i].sr if i in prof else None for i in rounds])
        xs = [i + jitter(2 * j + 1, 2 * fi.n, 0.04) for i in rounds]
        out.append(
            _line(
                f"{nm} SR",
                xs,
                sr,
                c,
                SR_DASH,
                group=g,
                true_x=rounds,
                error=err,
                symbol="diamond-open",
            )
        )
    return out


def _sr_vs_mt_by_round(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    for j, (view, m) in enumerate(zip(fi.views, fi.metrics, strict=True)):
        prof = {p.round: p for p in fi.unc[view.path.name].by_round}
        rounds = [r.round for r in m.by_round]
        series.append(
            {
                "label": label_of(view),
                "round": rounds,
                "mt": [r.mt_pass_rate for r in m.by_round],
                "sr": [r.sr_pass_rate for r in m.by_round],
                "mt_interval": [_dump(prof[i].mt) if i in prof else None for i in rounds],
                "sr_interval": [_dump(prof[i].sr) if i in prof else None for i in rounds],
            }
        )
        traces += _sr_vs_mt_traces(fi, j, view, m, prof)
    return _figure(
        "SR vs MT pass rate by round index",
        series,
        traces,
        _layout(
            "Pass rate by round: MT (solid) vs SR (dashed), 95% CI",
            round_axis("round", fi.last_round),
            rate_axis("pass rate"),
        ),
        "no rounds recorded",
    )


# ---- conditional pass rate by round (MT): after a passed / a failed previous round -------

CONDITIONS = (("mt_after_pass", MT_DASH, "after pass"), ("mt_after_fail", ALT2_DASH, "after fail"))
"""(RoundProfile field, dash, legend suffix) of each conditional series."""


def _conditional_traces(
    fi: FigureInputs, j: int, view: JobView, rows: list[RoundProfile]
) -> list[Figure]:
    c, g, nm = fi.ident(view)
    out = []
    for key, dash, label in CONDITIONS:
        pts: list[tuple[int, Interval]] = []
        for p in rows:
            iv = getattr(p, key)
            if iv is not None and iv.estimate is not None:
                pts.append((p.round, iv))
        if pts:
            out.append(
                _line(
                    f"{nm} {label}",
                    [i + jitter(j, fi.n) for i, _ in pts],
                    [iv.estimate for _, iv in pts],
                    c,
                    dash,
                    group=g,
                    true_x=[i for i, _ in pts],
                    error=_error([iv for _, iv in pts]),
                )
            )
    return out


def _conditional_by_round(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    for j, view in enumerate(fi.views):
        u = fi.unc[view.path.name]
        rows = [p for p in u.by_round if p.mt_after_pass is not None]
        series.append(
            {
                "label": label_of(view),
                "continues_after_failure": u.continues_after_failure,
                "by_round": [
                    {
                        "round": p.round,
                        "after_pass": _dump(p.mt_after_pass),
                        "after_fail": _dump(p.mt_after_fail),
                    }
                    for p in rows
                ],
            }
        )
        traces += _conditional_traces(fi, j, view, rows)
    after_fail = any(s["continues_after_failure"] for s in series)
    return _figure(
        "Conditional pass rate by round (MT)",
        series,
        traces,
        _layout(
            "P(round i passes | round i-1 passed / failed), MT, 95% CI"
            if after_fail
            else "P(round i passes | round i-1 passed), MT, 95% CI",
            round_axis("round", fi.last_round),
            rate_axis("pass rate"),
        ),
        "no MT attempt ran two rounds",
    )


# ---- MT@k and perfect@k over k ------------------------------------------------------------

CURVES = (("mt_at_k", MT_DASH, "MT@k"), ("pass_at_k", ALT_DASH, "perfect@k"))
"""(CurvePoint field, dash, legend suffix) of each curve over k."""


def _curve_traces(
    fi: FigureInputs, j: int, view: JobView, curves: list[CurvePoint]
) -> list[Figure]:
    c, g, nm = fi.ident(view)
    ks = [p.k for p in curves]
    xs = [x + jitter(j, fi.n) for x in ks]
    out = []
    for attr, dash, label in CURVES:
        ivs: list[Interval] = [getattr(p, attr) for p in curves]
        if any(iv.estimate is not None for iv in ivs):
            ys = [iv.estimate for iv in ivs]
            out.append(
                _line(f"{nm} {label}", xs, ys, c, dash, group=g, true_x=ks, error=_error(ivs))
            )
    return out


def _curves_over_k(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    max_k = max((len(fi.unc[v.path.name].curves) for v in fi.views), default=1)
    for j, view in enumerate(fi.views):
        curves = fi.unc[view.path.name].curves
        series.append(
            {
                "label": label_of(view),
                "k": [c.k for c in curves],
                "mt_at_k": [c.mt_at_k.model_dump(mode="json") for c in curves],
                "pass_at_k": [c.pass_at_k.model_dump(mode="json") for c in curves],
            }
        )
        if max_k >= 2:  # one attempt per task everywhere: no curve to draw
            traces += _curve_traces(fi, j, view, curves)
    return _figure(
        "MT@k and perfect@k over k",
        series,
        traces,
        _layout(
            "MT@k (solid) and perfect@k (dotted) over k, 95% CI",
            round_axis("k (attempts)", max_k),
            rate_axis("rate"),
        ),
        "one attempt per task: no curve over k",
    )


# ---- compliance decay (CSR, ISR by round), from the checklist engine's own numbers --------


class _ComplianceRound(TypedDict):
    round: int
    csr: float | None
    isr: float | None
    scored_checks: int


def _compliance_traces(
    fi: FigureInputs, j: int, view: JobView, rows: list[_ComplianceRound]
) -> list[Figure]:
    c, g, nm = fi.ident(view)
    xs = [b["round"] for b in rows]
    lines = (
        ("CSR", MT_DASH, [b["csr"] for b in rows]),
        ("ISR", ALT_DASH, [b["isr"] for b in rows]),
    )
    return [
        _line(f"{nm} {name}", [x + jitter(j, fi.n) for x in xs], ys, c, dash, group=g, true_x=xs)
        for name, dash, ys in lines
    ]


def _compliance_by_round(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    for j, view in enumerate(fi.views):
        comp = compute_compliance(view.records)
        rows: list[_ComplianceRound] = [
            {"round": int(r.key), "csr": r.csr, "isr": r.isr, "scored_checks": r.passed + r.failed}
            for r in comp.by_round
        ]
        recorded = comp.checks > 0
        series.append(
            {
                "label": label_of(view),
                "recorded": recorded,
                "csr": comp.csr,
                "isr": comp.isr_round,
                "errors": comp.totals.error,
                "by_round": rows,
            }
        )
        if recorded and comp.csr is not None:
            traces += _compliance_traces(fi, j, view, rows)
    return _figure(
        "Compliance decay: CSR and ISR by round (MT)",
        series,
        traces,
        _layout(
            "Compliance decay (MT): CSR (solid), ISR (dotted) by round",
            round_axis("round", fi.last_round),
            rate_axis("rate"),
        ),
        "checks recorded, none scored (all not applicable or errors)"
        if any(x["recorded"] for x in series)
        else NOT_RECORDED,
    )


# ---- first-failure distribution, normalised by task length -------------------------------

FF_CATEGORIES = ["0-20%", "20-40%", "40-60%", "60-80%", "80-100%", "completed"]


def _first_failure_chart(fi: FigureInputs) -> Figure:
    series = [_first_failure(v, m) for v, m in zip(fi.views, fi.metrics, strict=True)]
    traces = []
    top = 0
    for view, s, m in zip(fi.views, series, fi.metrics, strict=True):
        if m.mt_at_k is None:
            continue
        ys = [b["attempts"] for b in s["normalised_bins"]] + [s["completed"]]
        top = max(top, *ys)
        c, g, nm = fi.ident(view)
        traces.append(_bar(nm, FF_CATEGORIES, ys, c, legendgroup=g))
    return _figure(
        "First failure: where MT attempts die (round / task length)",
        series,
        traces,
        _layout(
            "Where MT attempts first fail (share of the task's rounds)",
            {
                **category_axis("first failed round / rounds in task"),
                "categoryorder": "array",
                "categoryarray": FF_CATEGORIES,
            },
            count_axis("attempts", top),
            barmode="group",
        ),
        "no MT attempts",
    )


# ---- failure classes: one colour per agent, MT filled / SR hatched -----------------------


def _failure_classes(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    top = 0
    classes = sorted(
        {c for m in fi.metrics for counts in m.failed_rounds_by_class.values() for c in counts}
    )
    for view, m in zip(fi.views, fi.metrics, strict=True):
        colour, g, nm = fi.ident(view)
        for mode in Mode:
            counts = m.failed_rounds_by_class.get(mode.value, {})
            series.append(
                {
                    "label": label_of(view),
                    "mode": mode.value,
                    "failed_rounds": counts,
                    "failing_tests": m.failing_tests_by_class.get(mode.value, {}),
                }
            )
            if not counts:
                continue
            ys = [counts.get(c, 0) for c in classes]
            top = max(top, *ys)
            traces.append(
                _bar(
                    f"{nm} {mode.value.upper()}",
                    [wrap(c) for c in classes],
                    ys,
                    colour,
                    sr=mode is Mode.sr,
                    legendgroup=g,
                    offsetgroup=f"{g}-{mode}",
                )
            )
    return _figure(
        "Failed rounds by class (agent, mode)",
        series,
        traces,
        _layout(
            "Failed rounds by primary class: MT (filled), SR (hatched)",
            category_axis("primary failure class (or status)"),
            count_axis("failed rounds", top),
            barmode="group",
        ),
        "no failed rounds",
    )


# ---- failures by change type of the round (conflict / correction / extension) ------------


def _change_type_counts(view: JobView) -> tuple[Counter[str], Counter[str]]:
    """(failed, executed) MT rounds per change type; a round of several types counts in each."""
    failed: Counter[str] = Counter()
    executed: Counter[str] = Counter()
    for r in records_of(view):
        if r.mode is not Mode.mt:
            continue
        for c in r.change_types or ["unspecified"]:
            executed[c] += 1
            failed[c] += not r.passed
    return failed, executed


def _failures_by_change_type(fi: FigureInputs) -> Figure:
    series = []
    per_view: list[tuple[JobView, Counter[str]]] = []
    for view in fi.views:
        failed, executed = _change_type_counts(view)
        series.append({"label": label_of(view), "failed": dict(failed), "executed": dict(executed)})
        per_view.append((view, failed))
    types_ = sorted({c for _, counts in per_view for c, k in counts.items() if k})
    traces = [
        _bar(
            fi.names[v.path.name],
            [wrap(c) for c in types_],
            [counts.get(c, 0) for c in types_],
            fi.colour[v.path.name],
            legendgroup=v.path.name,
        )
        for v, counts in per_view
        if any(counts.get(c, 0) for c in types_)
    ]
    top = max((max(t["y"]) for t in traces), default=0)
    return _figure(
        "Failed MT rounds by change type",
        series,
        traces,
        _layout(
            "Failed MT rounds by change type of the round",
            category_axis("change type"),
            count_axis("failed rounds", top),
            barmode="group",
        ),
        "no failed MT rounds",
    )


# ---- state penalty ------------------------------------------------------------------------


def _state_penalty_series(fi: FigureInputs, view: JobView, m: Metrics) -> dict[str, Any]:
    """The penalty with the failed MT rounds it is computed from, and which of them SR solved."""
    recs = records_of(view)
    sr_pass = {(r.task, r.round) for r in recs if r.mode is Mode.sr and r.passed}
    sr_ran = {(r.task, r.round) for r in recs if r.mode is Mode.sr}
    failed = [r for r in recs if r.mode is Mode.mt and not r.passed]
    iv = fi.unc[view.path.name].headline.get("state_penalty")
    return {
        "label": label_of(view),
        "state_penalty": m.state_penalty,
        "interval": iv.model_dump(mode="json") if iv else None,
        "failed_mt_rounds": len(failed),
        "comparable": sum((r.task, r.round) in sr_ran for r in failed),
        "solvable_under_sr": sorted(
            {f"{r.task} r{r.round}" for r in failed if (r.task, r.round) in sr_pass}
        ),
    }


def _state_penalty_bar(fi: FigureInputs, view: JobView, s: dict[str, Any]) -> Figure:
    c, g, nm = fi.ident(view)
    bar = _bar(
        nm,
        [wrap(nm)],
        [s["state_penalty"]],
        c,
        text=[f"{s['comparable']} failed"],
        textposition="outside",
        cliponaxis=False,
        legendgroup=g,
    )
    err = _error([fi.unc[view.path.name].headline.get("state_penalty")])
    if err:
        bar["error_y"] = {**err, "color": "#444"}
    return bar


def _state_penalty(fi: FigureInputs) -> Figure:
    series = [_state_penalty_series(fi, v, m) for v, m in zip(fi.views, fi.metrics, strict=True)]
    traces = [
        _state_penalty_bar(fi, view, s)
        for view, s in zip(fi.views, series, strict=True)
        if s["state_penalty"] is not None
    ]
    return _figure(
        "State penalty: failed MT rounds that pass under SR",
        series,
        traces,
        _layout(
            "State penalty: failed MT rounds that pass under SR, 95% CI",
            category_axis(""),
            rate_axis("share of failed MT rounds"),
        ),
        "needs failed MT rounds and SR runs of the same rounds",
    )


# ---- tokens per round, failing vs passing ------------------------------------------------


def _token_axis() -> dict[str, Any]:
    """Token counts start at zero and print as 1.2k, 3M."""
    return {
        "title": {"text": "tokens"},
        "rangemode": "tozero",
        "tickformat": "~s",
        "automargin": True,
        "gridcolor": GRID,
    }


def _mean(xs: list[int]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _tokens_box(fi: FigureInputs, view: JobView, ok: list[int], bad: list[int]) -> Figure:
    c, g, nm = fi.ident(view)
    return {
        "type": "box",
        "name": nm,
        "x": ["passing"] * len(ok) + ["failing"] * len(bad),
        "y": ok + bad,
        "boxpoints": False,
        "marker": {"color": c},
        "line": {"color": c},
        "offsetgroup": g,
        "legendgroup": g,
    }


def _tokens_per_round(fi: FigureInputs) -> Figure:
    series = []
    traces = []
    for view in fi.views:
        rows = fi.per_round[view.path.name]
        ok = [r["tokens"] for r in rows if r["tokens"] is not None and r["passed"]]
        bad = [r["tokens"] for r in rows if r["tokens"] is not None and not r["passed"]]
        series.append(
            {
                "label": label_of(view),
                "passing": {"rounds": len(ok), "mean": _mean(ok)},
                "failing": {"rounds": len(bad), "mean": _mean(bad)},
            }
        )
        if ok or bad:
            traces.append(_tokens_box(fi, view, ok, bad))
    return _figure(
        "Tokens per round: passing vs failing",
        series,
        traces,
        _layout(
            "Tokens per round: passing vs failing rounds",
            {
                **category_axis("round outcome"),
                "categoryorder": "array",
                "categoryarray": ["passing", "failing"],
            },
            _token_axis(),
            boxmode="group",
        ),
        NOT_RECORDED,
    )


# ---- the report's figures, in the order the page shows them -------------------------------

FIGURES: dict[str, Callable[[FigureInputs], Figure]] = {
    "headline_intervals": _headline_intervals,
    "sr_vs_mt_by_round": _sr_vs_mt_by_round,
    "conditional_by_round": _conditional_by_round,
    "curves_over_k": _curves_over_k,
    "compliance_by_round": _compliance_by_round,
    "first_failure": _first_failure_chart,
    "failure_classes": _failure_classes,
    "failures_by_change_type": _failures_by_change_type,
    "state_penalty": _state_penalty,
    "tokens_per_round": _tokens_per_round,
}
"""Figure name -> its builder. A new chart is one builder and one line here; the page, the
``--json`` output and ``--figures`` all follow this table."""


def build_figures(
    views: list[JobView],
    per_round: dict[str, list[dict[str, Any]]],
    uncertainty: dict[str, JobUncertainty] | None = None,
) -> dict[str, Figure]:
    """Every figure of the report: ``series`` (plain data) and a ``plotly`` spec (or None)."""
    unc = uncertainty or {v.path.name: job_uncertainty(v) for v in views}
    colour = agent_colours(views)
    names = series_names(views)
    metrics = [v.metrics() for v in views]
    fi = FigureInputs(
        views=views,
        metrics=metrics,
        per_round=per_round,
        unc=unc,
        colour=colour,
        names=names,
        last_round=max((len(m.by_round) for m in metrics), default=1),
    )
    return {name: build(fi) for name, build in FIGURES.items()}
