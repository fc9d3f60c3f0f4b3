"""``evoround view``: serve job folders to a browser, round by round."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evoround.cli._app import app, err, fail


def _job_folders(paths: list[Path]) -> list[Path]:
    """The folders given, where a folder holding jobs (``runs/``) stands for its jobs."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir() and not (p / "job.json").exists():
            jobs = sorted(c for c in p.iterdir() if c.is_dir() and (c / "job.json").is_file())
            if jobs:
                out.extend(jobs)
                continue
        out.append(p)
    return out


@app.command(rich_help_panel="Analyse")
def view(
    jobs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Job folders, or folders holding jobs (each job inside is served). "
            "Default: ./runs."
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. Default: loopback only; anything else serves the "
            "jobs to every machine that can reach it (no authentication).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")
    ] = 8765,
) -> None:
    """Browse jobs in a local web viewer: the grid of rounds, each round's workspace diff,
    trajectory, failing tests and checks, regression blame, MT/SR and agents side by side.

    Reads the job folders as they are (a running job's pages refresh as rounds land);
    stop it with Ctrl-C.
    """
    from evoround.engine import job_holder
    from evoround.view import JobIndex, ViewError, ViewServer

    folders = _job_folders(jobs or [Path("runs")])
    try:
        index = JobIndex(folders, running=lambda p: job_holder(p) is not None)
    except ViewError as e:
        raise fail(str(e)) from None
    try:
        server = ViewServer(index, host=host, port=port)
    except OSError as e:
        raise fail(f"--host {host} --port {port}: cannot listen: {e.strerror or e}") from None
    console = err()
    try:
        server.serve_forever(
            lambda url: console.print(
                f"evoround view: {len(folders)} job(s) at {url} (Ctrl-C stops)"
            )
        )
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
