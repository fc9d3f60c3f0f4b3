"""``evoround report``, ``regrade`` and ``compare``: reading finished jobs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from evoround.cli._app import app, err, fail, out

if TYPE_CHECKING:
    from evoround.api import Report
    from evoround.results import JobView

DEFAULT_SEED = 20260523
"""``evoround.reports.DEFAULT_SEED``, written out so that ``--help`` shows it without
importing the reports (tests/cli/test_help.py keeps the two equal)."""


class TableFormat(StrEnum):
    latex = "latex"
    markdown = "markdown"


Resamples = Annotated[
    int | None,
    typer.Option(
        "--resamples",
        min=0,
        help="Bootstrap resamples over tasks for the 95% intervals (0: no intervals). "
        "Default: 1000, fewer (not under 200) for jobs with many round records; the count "
        "used is printed.",
    ),
]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap (reproducible).")]


def _checked(views: list[JobView]) -> list[JobView]:
    """The jobs, or one line about the first that holds no readable round at all: a corrupt
    job folder is a usage error (exit 2), not an empty report or a traceback."""
    for view in views:
        if not view.records and len(view.problems) > 1:  # one torn line: a crash, not garbage
            first = view.problems[0].split(": skipped", 1)[0]
            raise fail(
                f"{first}: not one readable round record in results.jsonl "
                f"({len(view.problems)} unreadable line(s)); is it a job folder?"
            )
    return views


def _load_views(run_dirs: list[Path]) -> list[JobView]:
    """Load and check job folders; a folder that is not a job, or cannot be read, is one
    line (exit 2)."""
    from evoround.results import NotAJobDir, load_job

    views = []
    for p in run_dirs:
        try:
            views.append(load_job(p))
        except NotAJobDir as e:
            raise fail(str(e)) from None
        except OSError as e:
            raise fail(f"{e.filename or p}: cannot read: {e.strerror or e}") from None
    return _checked(views)


def _check_file_target(flag: str, path: Path) -> None:
    """A file evoround will write must not be a folder nor sit under a file."""
    if path.is_dir():
        raise fail(f"{flag} {str(path)!r}: is a folder, not a file")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise fail(f"{flag} {str(path)!r}: {parent} is a file, not a folder")
            return


def _viewer_url(flag: str | None) -> str | None:
    """``--viewer``, else the ``EVOROUND_VIEWER_URL`` setting: checked (one line when it is
    not an http(s) address), or None (report.html then links nowhere outside itself)."""
    from evoround.reports import ViewerURLError, viewer_base
    from evoround.settings import settings

    url, source = (flag, "--viewer") if flag is not None else (settings().viewer_url, None)
    if url is None:
        return None
    try:
        return viewer_base(url)
    except ViewerURLError as e:
        raise fail(f"{source or 'EVOROUND_VIEWER_URL'}: {e}") from None


def viewer_setting() -> str | None:
    """``EVOROUND_VIEWER_URL`` for the report.html a run writes at its end: a bad address
    is a warning there (the run's results are not to be lost over a link)."""
    from evoround.reports import ViewerURLError, viewer_base
    from evoround.settings import settings

    url = settings().viewer_url
    if url is None:
        return None
    try:
        return viewer_base(url)
    except ViewerURLError as e:
        err().print(
            f"warning: EVOROUND_VIEWER_URL: {e}; report.html has no viewer links",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return None


@dataclass(frozen=True)
class _Bootstrap:
    """``--resamples`` and ``--seed``: every reader of the jobs draws the same intervals."""

    resamples: int | None
    seed: int


def _read_jobs(run_dirs: list[Path]) -> Report:
    """The library's report of the folders (views, metrics, cost per job); a folder that is
    not a job, or cannot be read, is one line (exit 2)."""
    from evoround import api
    from evoround.results import NotAJobDir

    try:
        read = api.report(run_dirs)
    except NotAJobDir as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(f"{e.filename or run_dirs[0]}: cannot read: {e.strerror or e}") from None
    _checked(read.views)
    return read


def _print_tables(read: Report, boot: _Bootstrap) -> None:
    """The terminal report, then the cost of each job that called a model."""
    from evoround.reports import print_report

    console = out()
    print_report(read.views, console, resamples=boot.resamples, seed=boot.seed)
    for job in read.jobs:
        if job.cost.rounds_with_usage:  # a model agent: its tokens and price (or unknown)
            console.print(
                f"cost of {job.job_dir.name}: {job.cost} ({job.cost.tokens} tokens)",
                markup=False,
                highlight=False,
            )


def _show(
    read: Report,
    data: dict[str, Any] | None,
    boot: _Bootstrap,
    *,
    as_json: bool,
    table: TableFormat | None,
) -> None:
    """What stdout gets: the JSON, the leaderboard table, or the terminal report."""
    from evoround.reports import leaderboard_latex_or_markdown

    if as_json and data is not None:
        _print_json(read.views, data, boot)
    elif table is not None and data is not None:
        print(leaderboard_latex_or_markdown(data, table.value), end="")
    else:
        _print_tables(read, boot)


def _print_json(views: list[JobView], data: dict[str, Any], boot: _Bootstrap) -> None:
    from evoround.reports import job_json

    shown = {k: v for k, v in data.items() if k != "rounds"}  # per-round detail: results.jsonl
    jobs = [job_json(v, resamples=boot.resamples, seed=boot.seed) for v in views]
    print(json.dumps({"jobs": jobs, "report": shown}, indent=2))


def _write_figures(data: dict[str, Any], figures: Path, log: Console) -> None:
    from evoround.reports import FigureExportError, write_figures

    try:
        paths = write_figures(data["figures"], figures)
    except (FigureExportError, OSError) as e:
        raise fail(f"--figures {figures}: {e}") from None
    log.print(f"figures: {len(paths)} files in {figures}")


def _write_atif(views: list[JobView], log: Console) -> None:
    from evoround.reports import export_atif

    n = sum(len(export_atif(v)) for v in views)
    log.print(f"ATIF: {n} trajectory.atif.json files written beside trajectory.jsonl")


@app.command(rich_help_panel="Analyse")
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more job folders.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print metrics and every figure of the report as JSON.")
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Where to write report.html. Default: in the job (or common parent)."
        ),
    ] = None,
    no_html: Annotated[bool, typer.Option("--no-html", help="Do not write report.html.")] = False,
    figures: Annotated[
        Path | None,
        typer.Option("--figures", help="Write every chart as SVG and PDF into this folder."),
    ] = None,
    table: Annotated[
        TableFormat | None,
        typer.Option("--table", help="Print the leaderboard with intervals as latex | markdown."),
    ] = None,
    atif: Annotated[
        bool,
        typer.Option(
            "--atif",
            help="Also write each round's trajectory in Harbor's ATIF v1.7 "
            "(trajectory.atif.json beside trajectory.jsonl).",
        ),
    ] = False,
    viewer: Annotated[
        str | None,
        typer.Option(
            "--viewer",
            metavar="URL",
            help="Link every job and round of report.html into the evoround view serving "
            "these jobs at URL (e.g. http://localhost:8765/). Default: EVOROUND_VIEWER_URL; "
            "unset: report.html links nowhere outside itself.",
        ),
    ] = None,
    resamples: Resamples = None,
    seed: Seed = DEFAULT_SEED,
) -> None:
    """Metrics of finished (or interrupted) jobs: tables, report.html, or JSON of every figure.

    Every headline figure carries a 95% percentile bootstrap interval over tasks and a
    standard error (method, resamples and seed are printed with it)."""
    from evoround.reports import build_report, default_html_path

    if html is not None:
        _check_file_target("--html", html)
    viewer_url = None if no_html else _viewer_url(viewer)
    read = _read_jobs(run_dirs)
    views, boot = read.views, _Bootstrap(resamples, seed)
    data = None
    if as_json or figures or table:  # one analysis feeds the JSON, the figures and the table
        data = build_report(views, resamples=resamples, seed=seed)
    _show(read, data, boot, as_json=as_json, table=table)
    # With JSON or a table on stdout, what was written is said on stderr.
    log = err() if (as_json or table is not None) else out()
    if figures is not None and data is not None:
        _write_figures(data, figures, log)
    if atif:
        _write_atif(views, log)
    if not no_html:
        from evoround.reports import write_html_report

        path = write_html_report(
            views,
            html or default_html_path(run_dirs),
            resamples=resamples,
            seed=seed,
            viewer=viewer_url,
        )
        log.print(f"report: {path}")


@app.command(rich_help_panel="Analyse")
def regrade(
    run_dir: Annotated[Path, typer.Argument(help="The job folder to regrade.")],
    tasks: Annotated[
        list[Path] | None,
        typer.Option("--tasks", help="Changed task dirs (default: the tasks the job recorded)."),
    ] = None,
    store: Annotated[
        Path | None, typer.Option(help="Snapshot store (default: $EVOROUND_HOME/store).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the regrade diff as JSON.")
    ] = False,
) -> None:
    """Re-verify the stored snapshots of a job with today's tests; no agent runs.

    Writes results.regraded.jsonl and regrade.diff.json beside results.jsonl.
    """
    from rich.table import Table

    from evoround.engine import regrade_job, regraded_view
    from evoround.reports import pct
    from evoround.results import NotAJobDir, load_job
    from evoround.snapshots import SnapshotStore
    from evoround.tasks import TaskFormatError

    try:
        before = load_job(run_dir)
        rep = regrade_job(
            run_dir, tasks=tasks, store=SnapshotStore(store) if store is not None else None
        )
    except (NotAJobDir, TaskFormatError) as e:
        raise fail(str(e)) from None
    if as_json:
        print(json.dumps(rep.model_dump(mode="json"), indent=2))
        return
    table = Table(title=f"Regrade of {rep.job}: {len(rep.flipped)} flipped", title_justify="left")
    for col in ("task", "run", "round", "before", "after", "failing tests now"):
        table.add_column(col)
    for f in rep.flipped:
        failing = "\n".join(f.failing_tests[:5])
        table.add_row(f.task, f"{f.mode}-{f.attempt:02d}", str(f.round), f.before, f.after, failing)
    console = out()
    console.print(table)
    m0, m1 = before.metrics(), regraded_view(run_dir).metrics()
    console.print(
        f"regraded {rep.regraded} rounds, {rep.unchanged} unchanged, {len(rep.flipped)} flipped; "
        f"MT@k {pct(m0.mt_at_k)} -> {pct(m1.mt_at_k)}, SR {pct(m0.sr)} -> {pct(m1.sr)}"
    )
    for name, (a, b) in rep.task_digests.items():
        console.print(f"task {name} changed: digest {a[:12]} -> {b[:12]}")
    for line in rep.truncated:
        console.print(f"[yellow]dropped by fail-stop:[/] {line}")
    for line in rep.incomplete:
        console.print(f"[yellow]now passes, later rounds never ran:[/] {line}")
    for line in rep.skipped:
        console.print(f"[red]not regraded:[/] {line}")
    console.print(f"results: {rep.results}\ndiff: {rep.diff}")


@app.command(rich_help_panel="Analyse")
def compare(
    run_a: Annotated[Path, typer.Argument(help="Baseline job folder.")],
    run_b: Annotated[Path, typer.Argument(help="Candidate job folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the differences as JSON.")] = False,
    resamples: Resamples = None,
    seed: Seed = DEFAULT_SEED,
    k: Annotated[
        int | None,
        typer.Option("--k", min=1, help="Attempts per task for MT@k (default: the smaller k)."),
    ] = None,
) -> None:
    """Two jobs on the tasks both ran: the difference in MT@k, SR, Gap, CSR, ISR (and every
    other figure) with a paired bootstrap interval and p-value, and the rounds that flipped."""
    from evoround.reports import CompareError, compare_jobs, compare_tables

    view_a, view_b = _load_views([run_a, run_b])
    try:
        diff = compare_jobs(view_a, view_b, resamples=resamples, seed=seed, k=k)
    except CompareError as e:
        raise fail(str(e)) from None
    if as_json:
        print(json.dumps(diff.model_dump(mode="json"), indent=2))
    else:
        out().print(compare_tables(diff))
