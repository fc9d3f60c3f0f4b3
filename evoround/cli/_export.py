"""``evoround export``: write a job in EvoCode-Bench's own trial layout, for its scripts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evoround.cli._app import app, fail, out

EXPORT_FORMATS = ("evocodebench", "harbor-multiturn")
"""``evoround.reports.EXPORT_FORMATS``, written out so that ``--help`` shows them without
importing the reports (tests/cli/test_help.py keeps the two equal)."""

# The choices, as --help shows them for enum options (checked in the command: the
# one-line refusal names --format and the value).
FORMAT_CHOICES = "<" + "|".join(EXPORT_FORMATS) + ">"


@app.command(rich_help_panel="Analyse")
def export(
    job: Annotated[Path, typer.Argument(help="The job folder to export.")],
    dest: Annotated[Path, typer.Argument(help="A new (or empty) folder to write.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar=FORMAT_CHOICES,
            help="evocodebench (the current runner's steps/<step>/verifier/reward.txt trees, "
            "for evaluation/compute_metrics.py) | harbor-multiturn (the paper's "
            "verifier/multiround_results.json, for legacy/evaluation/compute_metrics.py).",
        ),
    ] = "evocodebench",
    attempts: Annotated[
        int | None,
        typer.Option(
            "--attempts",
            min=1,
            help="Export each task's first K attempts only: the script's MT@k is then the "
            "report's MT@K (e.g. --attempts 1 for MT@1). Default: all attempts.",
        ),
    ] = None,
) -> None:
    """Export MT attempts so the benchmark's published scripts score them like `report`."""
    from evoround.reports import EXPORT_FORMATS, ExportError, export_job
    from evoround.results import NotAJobDir, load_job

    if fmt not in EXPORT_FORMATS:
        raise fail(f"--format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    try:
        view = load_job(job)
        res = export_job(view, fmt, dest, attempts)
    except (NotAJobDir, ExportError) as e:
        raise fail(str(e)) from None
    out().print(
        f"exported {res.trials} trial(s) of {res.tasks} task(s) to {res.out} ({res.format})"
    )
    for note in res.notes:
        out().print(f"note: {note}")
    out().print(f"score with: {res.command}")
    if res.sr_command:
        out().print(f"score SR ({res.sr_trials} trial(s)) with: {res.sr_command}")
