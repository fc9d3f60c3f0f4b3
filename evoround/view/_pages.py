"""The viewer's pages: what each shows, built from the index and rendered escaped.

Every template is rendered with autoescape on and the server forbids scripts (see
``_server.py``), so no text from a trajectory, a file name or a diff can run in the page.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jinja2

from evoround.results import RoundResult
from evoround.view._blame import blame
from evoround.view._index import HEADLINE, JobEntry, JobIndex, RoundKey, attempts_of
from evoround.view._round import RoundDetail, clean_message, round_detail
from evoround.view._text import plain, visible

LIVE_REFRESH_SEC = 1
"""How often the jobs page and a running job's grid reload themselves (a meta refresh: the
pages run no script), so a recorded round shows within about this long. A round page does
not reload: a recorded round does not change, and a reload would fold what was unfolded."""
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("evoround.view", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
_ENV.globals["clean"] = clean_message
_ENV.filters["plain"] = plain
_ENV.filters["visible"] = visible
_ENV.filters["fid"] = lambda path: hashlib.sha1(
    str(path).encode(), usedforsecurity=False
).hexdigest()[:12]
_PASSED = {"passed"}
_FAILED = {"failed", "integrity_violation"}


class NotFound(LookupError):
    """No such job or round (the page says so; nothing is read)."""


def render(name: str, **ctx: Any) -> str:
    ctx.setdefault("live", 0)
    ctx.setdefault("live_why", "running")
    ctx.setdefault("crumbs", [])
    return _ENV.get_template(name).render(**ctx)


_ENV.globals["status_css"] = lambda status: _css(status)


def round_href(job: int, k: RoundKey) -> str:
    return f"/job/{job}/round/{quote(k.task, safe='')}/{k.mode}/{k.attempt}/{k.round}"


def _css(status: str) -> str:
    return "passed" if status in _PASSED else "failed" if status in _FAILED else "other"


def _pct(point: float | None, iv: dict[str, Any] | None, figure: str) -> str:
    """A figure in percent with its interval when known; CSR/ISR without any scored check
    say "no checks" (a figure that was recorded as absent, not a missing record)."""
    if point is None:
        return "no checks" if figure in ("CSR", "ISR") else "n/a"
    est = f"{100 * point:.1f}"
    if not iv or iv.get("lo") is None or iv.get("hi") is None:
        return est
    return f"{est} [{100 * iv['lo']:.1f}, {100 * iv['hi']:.1f}]"


# ---- jobs ------------------------------------------------------------------------


def jobs_page(index: JobIndex, query: dict[str, str] | None = None) -> str:
    """Every job with its leaderboard figures; ``?agent=NAME`` keeps that agent's jobs (a
    job has one agent, so this is the viewer's filter by agent)."""
    agent = (query or {}).get("agent", "")
    rows = []
    agents: set[str] = set()
    live = pending = False
    for i in range(len(index.entries)):
        e = _entry(index, i)
        assert e.view is not None
        agents.add(e.view.config.agent)
        if agent and e.view.config.agent != agent:
            continue
        rows.append(_job_row(i, e))
        pending = pending or e.intervals is None
        live = live or e.running
    return render(
        "jobs.html.j2",
        title="Jobs",
        jobs=rows,
        agents=sorted(agents),
        agent=agent,
        figures=HEADLINE,
        pending=pending,
        live=LIVE_REFRESH_SEC if live or pending else 0,
        live_why="running" if live else "intervals being computed",
    )


def _job_row(i: int, e: JobEntry) -> dict[str, Any]:
    assert e.view is not None
    ivs = e.intervals or {}
    return {
        "index": i,
        "name": e.name,
        "agent": e.view.config.agent,
        "running": e.running,
        "records": len(e.rounds),
        "path": str(e.path),
        "figures": {f: _pct(e.points.get(f), ivs.get(f), f) for f in HEADLINE},
    }


def _entry(index: JobIndex, i: int) -> JobEntry:
    e = index.entry(i)
    if e is None or e.view is None:
        raise NotFound(f"no job {i}")
    return e


# ---- the grid ---------------------------------------------------------------------

FILTERS = ("task", "mode", "status", "failure_class", "change_type")


def _matches(rec: RoundResult, chosen: dict[str, str]) -> bool:
    tests = {
        "task": lambda v: rec.task == v,
        "mode": lambda v: str(rec.mode) == v,
        "status": lambda v: str(rec.status) == v,
        "failure_class": lambda v: v in (rec.failure_classes or {}),
        "change_type": lambda v: v in (rec.change_types or []),
    }
    return all(tests[k](v) for k, v in chosen.items() if v)


def _filter_values(recs: list[RoundResult]) -> list[tuple[str, list[str]]]:
    values: dict[str, set[str]] = {k: set() for k in FILTERS}
    for r in recs:
        values["task"].add(r.task)
        values["mode"].add(str(r.mode))
        values["status"].add(str(r.status))
        values["failure_class"].update(r.failure_classes or {})
        values["change_type"].update(r.change_types or [])
    return [(k, sorted(values[k])) for k in FILTERS]


@dataclass(frozen=True)
class _Cell:
    css: str
    label: str
    title: str
    href: str
    shown: bool


def grid_page(index: JobIndex, i: int, query: dict[str, str]) -> str:
    e = _entry(index, i)
    chosen = {k: query.get(k, "") for k in FILTERS}
    recs = list(e.rounds.values())
    max_rounds = max((r.n_rounds for r in recs), default=0)
    rows = []
    for task, mode, attempt in attempts_of(e):
        cells: list[_Cell | None] = []
        hit = False
        for n in range(1, max_rounds + 1):
            rec = e.rounds.get(RoundKey(task, mode, attempt, n))
            if rec is None:
                cells.append(None)
                continue
            shown = _matches(rec, chosen)
            hit = hit or shown
            cells.append(_cell(i, rec, shown))
        if hit:
            rows.append({"task": task, "mode": mode, "attempt": attempt, "cells": cells})
    assert e.view is not None
    return render(
        "grid.html.j2",
        title=e.name,
        crumbs=[(e.name, f"/job/{i}")],
        job={"name": e.name, "agent": e.view.config.agent},
        filters=_filter_values(recs),
        chosen=chosen,
        rows=rows,
        max_rounds=max_rounds,
        live=LIVE_REFRESH_SEC if e.running else 0,
    )


def _cell(job: int, rec: RoundResult, shown: bool) -> _Cell:
    classes = ", ".join(f"{k} {v}" for k, v in (rec.failure_classes or {}).items())
    return _Cell(
        css=_css(str(rec.status)),
        label=f"{rec.tests_passed}/{rec.tests_total}",
        title=f"{rec.status}{': ' + classes if classes else ''}",
        href=round_href(job, RoundKey(rec.task, str(rec.mode), rec.attempt, rec.round)),
        shown=shown,
    )


# ---- a round ----------------------------------------------------------------------


def _record(index: JobIndex, i: int, k: RoundKey) -> tuple[JobEntry, RoundResult]:
    e = _entry(index, i)
    rec = e.rounds.get(k)
    if rec is None:
        raise NotFound(f"job {e.name} has no round {k.slug}")
    return e, rec


def _instruction(d: RoundDetail) -> str:
    first = next((ev for ev in d.events if ev["type"] == "message" and ev["role"] == "user"), None)
    return first["content"] if first else ""


def _search(events: list[dict[str, Any]], q: str) -> list[dict[str, Any]]:
    if not q:
        return events
    needle = q.lower()
    return [
        ev
        for ev in events
        if needle in ev["content"].lower()
        or needle in ev["arguments"].lower()
        or needle in ev["name"].lower()
    ]


def _compares(index: JobIndex, i: int, k: RoundKey) -> list[tuple[str, str]]:
    """Links to the same task and round elsewhere: the other mode, the other jobs."""
    out: list[tuple[str, str]] = []
    me = f"{i}/{k.slug}"
    other = RoundKey(k.task, "sr" if k.mode == "mt" else "mt", 1, k.round)
    if other in _entry(index, i).rounds:
        out.append((f"compare with {other.mode.upper()}", _compare_href(me, f"{i}/{other.slug}")))
    for j in range(len(index.entries)):
        if j != i and k in _entry(index, j).rounds:
            name = index.entries[j].name
            out.append((f"compare with job {name}", _compare_href(me, f"{j}/{k.slug}")))
    return out


def _compare_href(a: str, b: str) -> str:
    return f"/compare?a={quote(a, safe='/')}&b={quote(b, safe='/')}"


def round_model(rec: RoundResult) -> str:
    """The round's model calls, tokens and cost as recorded (the record's ``usage``, and the
    call count when ``--proxy`` recorded the calls); "not recorded" for what is absent."""
    u, m = rec.usage, rec.model_usage
    calls = f"{m.calls} call(s){f', {m.failed} failed' if m.failed else ''}, " if m else ""
    if u is None:
        return f"{calls}tokens and cost not recorded"
    cost = f"${u.cost_usd:.4f}" if u.cost_usd is not None else "cost not recorded"
    tokens = f"{u.total_tokens:,} tokens (in {u.prompt_tokens:,}, out {u.completion_tokens:,})"
    return f"{calls}{tokens}, {cost}"


def round_page(index: JobIndex, i: int, k: RoundKey, q: str = "") -> str:
    e, rec = _record(index, i, k)
    d = round_detail(e.path, rec)
    attempt = [
        r
        for kk, r in e.rounds.items()
        if (kk.task, kk.mode, kk.attempt) == (k.task, k.mode, k.attempt)
    ]
    neighbours = {r.round for r in attempt}

    def href(n: int) -> str:
        return round_href(i, RoundKey(k.task, k.mode, k.attempt, n))

    return render(
        "round.html.j2",
        title=f"{k.task} r{k.round}",
        crumbs=[
            (e.name, f"/job/{i}"),
            (f"{k.task} {k.mode} {k.attempt} r{k.round}", href(k.round)),
        ],
        d=d,
        css=_css(str(rec.status)),
        instruction=_instruction(d),
        model=round_model(rec),
        blames=blame(e.path, rec, attempt),
        round_href=href,
        prev=href(k.round - 1) if k.round - 1 in neighbours else "",
        next=href(k.round + 1) if k.round + 1 in neighbours else "",
        compares=_compares(index, i, k),
        events=_search(d.events, q),
        q=q,
        running=e.running,
    )


def parse_side(text: str) -> tuple[int, RoundKey]:
    """``<job>/<task>/<mode>/<attempt>/<round>`` of a compare link."""
    parts = text.split("/")
    if len(parts) != 5 or not (parts[0].isdigit() and parts[3].isdigit() and parts[4].isdigit()):
        raise NotFound(f"not a round: {text!r}")
    return int(parts[0]), RoundKey(parts[1], parts[2], int(parts[3]), int(parts[4]))


def compare_page(index: JobIndex, a: str, b: str) -> str:
    sides = []
    details = []
    for n, text in enumerate((a, b)):
        i, k = parse_side(text)
        e, rec = _record(index, i, k)
        d = round_detail(e.path, rec)
        details.append(d)
        label = f"{e.name}: {k.mode} attempt {k.attempt}"
        sides.append((label, d, round_href(i, k), f"s{n}"))
    return render("compare.html.j2", title="compare", a=details[0], sides=sides)
