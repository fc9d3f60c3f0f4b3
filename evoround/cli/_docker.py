"""``evoround images ...`` and ``evoround cleanup``: the Docker side of the CLI.

Thin like the other command groups: options are parsed here, the work is done by
:mod:`evoround.sandboxes.docker` (imported when a command runs: the Docker SDK is slow to
import and ``--help`` needs none of it). This module mounts :data:`images_app` as
``images`` and :func:`cleanup` as ``cleanup`` on the app.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evoround.cli._app import app, err

if TYPE_CHECKING:
    import docker

DEFAULT_SUITE = "bookworm"
"""``evoround.sandboxes.docker.DEFAULT_SUITE``, written out so that ``--help`` shows it
without importing Docker (tests/cli/test_help.py keeps the two equal)."""

images_app = typer.Typer(
    help="Docker images: the offline base image, task images, snapshot images.",
    no_args_is_help=True,
)

# Docker's reference grammar, simplified: [HOST[:PORT]/]path/components[:tag]
_IMAGE_REF = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::\d+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?"
)


def _stdout() -> Console:
    """Stdout as this invocation's terminal (or COLUMNS) says: unlike the reports, these
    listings are not widened when piped."""
    return Console()


def _usage(message: str) -> None:
    """A bad option value: one line and exit 2, before Docker is asked anything."""
    err().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _client() -> docker.DockerClient:
    from evoround.sandboxes.docker import ImageError, connect

    try:
        return connect()
    except ImageError as e:
        err().print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None


@images_app.command("bootstrap")
def bootstrap(
    tag: Annotated[
        str | None,
        typer.Option(
            help="Image tag to build (default: $EVOROUND_BASE_IMAGE or evoround-base:bookworm)."
        ),
    ] = None,
    suite: Annotated[str, typer.Option(help="Debian suite to debootstrap.")] = DEFAULT_SUITE,
    mirror: Annotated[
        str | None,
        typer.Option(help="Debian mirror (default: $EVOROUND_DEBIAN_MIRROR or deb.debian.org)."),
    ] = None,
    rootfs_tar: Annotated[
        Path | None,
        typer.Option(
            exists=True, dir_okay=False, help="Import this root-filesystem tarball instead."
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the image exists.")] = False,
) -> None:
    """Build the local base image without a registry (idempotent; instant when it exists)."""
    from evoround.sandboxes.docker import ImageError, bootstrap_base_image, default_base_image

    if tag is not None and not _IMAGE_REF.fullmatch(tag):
        _usage(
            f"--tag {tag!r}: not a Docker image reference (lowercase NAME[:TAG], e.g. "
            "evoround-base:bookworm)"
        )
    if not re.fullmatch(r"[a-z][a-z0-9-]*", suite):
        _usage(f"--suite {suite!r}: not a Debian suite name (e.g. bookworm)")
    client = _client()
    tag = tag or default_base_image()
    try:
        res = bootstrap_base_image(
            client,
            tag=tag,
            suite=suite,
            mirror=mirror,
            rootfs_tar=rootfs_tar,
            force=force,
            log=lambda m: err().print(f"[dim]{escape(str(m))}[/]", highlight=False),
        )
    except ImageError as e:
        err().print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    if res.built:
        _stdout().print(f"built {res.tag} ({res.image_id[7:19]}) in {res.seconds:.0f}s")
    else:
        _stdout().print(f"{res.tag} already present ({res.image_id[7:19]})")


@images_app.command("list")
def list_images() -> None:
    """List evoround's images: base, task (env) and snapshot images."""
    from evoround.sandboxes.docker import ROLE_LABEL

    client = _client()
    table = Table("role", "image", "task", "kind", "round", "job", "size", "created")
    rows = client.api.images(filters={"label": ROLE_LABEL})
    for img in sorted(rows, key=lambda i: (i.get("Labels") or {}).get(ROLE_LABEL, "")):
        labels = img.get("Labels") or {}
        table.add_row(
            labels.get(ROLE_LABEL, ""),
            (img.get("RepoTags") or [img["Id"][7:19]])[0],
            labels.get("evoround.task", ""),
            labels.get("evoround.kind", ""),
            labels.get("evoround.round", ""),
            labels.get("evoround.job", ""),
            f"{img.get('Size', 0) / 1e6:.0f} MB",
            datetime.fromtimestamp(img.get("Created", 0)).strftime("%Y-%m-%d %H:%M"),
        )
    _stdout().print(table)


def cleanup(
    job: Annotated[str | None, typer.Option(help="Only what this job left.")] = None,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Also remove cached reference snapshot images and task images."),
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Only show what would be removed.")] = False,
) -> None:
    """Remove evoround containers (label evoround=1) and agent snapshot images left by crashes."""
    from evoround.cli._checks import UsageError, check_job_name
    from evoround.sandboxes.docker import cleanup_docker

    if job is not None:
        try:
            check_job_name(job)
        except UsageError as e:
            _usage(str(e))
    report = cleanup_docker(_client(), job=job, include_cache=all_, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    _stdout().print(
        f"{verb} {len(report.containers)} container(s) and {len(report.images)} image(s)",
        highlight=False,
    )
    for name in report.containers + report.images:
        _stdout().print(f"  {name}", highlight=False, markup=False)
    for problem in report.errors:
        err().print(f"[yellow]warning:[/] {escape(str(problem))}", highlight=False)
    if report.errors:
        raise typer.Exit(1)


app.add_typer(images_app, name="images", rich_help_panel="Docker")
app.command("cleanup", rich_help_panel="Docker")(cleanup)

if __name__ == "__main__":  # `python -m evoround.cli._docker bootstrap`, before the app mounts it
    images_app()
