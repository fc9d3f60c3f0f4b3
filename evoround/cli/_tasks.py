"""``evoround tasks ...``: inspect, author, validate and import tasks."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer
from rich.markup import escape
from rich.table import Table

from evoround.cli._app import ImageMapOpt, app, err, fail, out, parse_image_map
from evoround.cli._checks import SandboxChoice, check_task_rules

if TYPE_CHECKING:
    from evoround.engine import TaskValidation
    from evoround.tasks import Task


class ImportFormat(StrEnum):
    """``tasks import --format`` (the importers' FORMATS; a test keeps the two equal)."""

    harbor_steps = "harbor-steps"
    harbor_multiturn = "harbor-multiturn"
    harbor = "harbor"


tasks_app = typer.Typer(help="Inspect, author, validate and import tasks.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


def _load(paths: list[Path] | None) -> list[Task]:
    """The tasks under ``paths`` (default: the library); none at all is a usage error, not
    an empty listing that a CI lint step would take for "no warnings"."""
    from evoround.tasks import TaskFormatError, library_path, load_tasks

    try:
        tasks = load_tasks(paths or [library_path()])
    except TaskFormatError as e:
        raise fail(str(e)) from None
    if not tasks:
        raise fail("no tasks found in " + ", ".join(map(str, paths or [])))
    return tasks


class _TaskRow(TypedDict):
    """One task as ``tasks list`` shows it (and ``--json`` prints it)."""

    name: str
    rounds: int
    activity: str
    style: str
    change_types: list[str]
    retired: int
    path: str
    digest: str


def _row(t: Task) -> _TaskRow:
    return {
        "name": t.name,
        "rounds": t.n_rounds,
        "activity": t.config.task.activity.value,
        "style": t.config.task.style.value,
        "change_types": [",".join(c.value for c in r.spec.change_types) or "-" for r in t.rounds],
        "retired": sum(len(r.spec.retires) for r in t.rounds),
        "path": str(t.path),
        "digest": t.digest[:12],
    }


@tasks_app.command("list")
def tasks_list(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Task directories or folders. Default: bundled.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks as JSON.")] = False,
) -> None:
    """List tasks with their rounds, activity and change types."""
    rows = [_row(t) for t in _load(paths)]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} tasks", title_justify="left")
    for col in ("name", "rounds", "activity", "style", "change types by round", "retired"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            str(r["rounds"]),
            r["activity"],
            r["style"],
            " ".join(r["change_types"]),
            str(r["retired"]),
        )
    out().print(table)


@tasks_app.command("scripts")
def tasks_scripts() -> None:
    """List the bundled scripted agents (use as --agent scripted:NAME)."""
    from evoround.scaffolds import BUNDLED_SCRIPTS

    for p in sorted(BUNDLED_SCRIPTS.glob("*.yaml")):
        out().print(p.stem)


_MARK = {"ok": "[green]✓[/]", "fail": "[bold red]✗[/]", "warn": "[yellow]![/]", "skip": "–"}
_SHORT = {
    "oracle_mt": "oracle MT",
    "oracle_sr": "SR",
    "discriminative": "discrim.",
    "determinism": "determ.",
}
"""Column titles of the validation table that would not fit as the check's name."""


@tasks_app.command("validate")
def tasks_validate(
    paths: Annotated[list[Path], typer.Argument(help="Task directories or folders of tasks.")],
    sandbox: Annotated[SandboxChoice, typer.Option(help="Where the checks run.")] = (
        SandboxChoice.local
    ),
    repeat: Annotated[
        int, typer.Option(min=1, help="Extra oracle verifications per round (determinism).")
    ] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print findings as JSON.")] = False,
    base_image_map: ImageMapOpt = None,
) -> None:
    """Prove tasks gradeable: oracle passes (MT, SR), nop fails, tests discriminate, no flakes,
    no leaks. Exit code 1 if any check fails."""
    from evoround.engine import validate_task
    from evoround.tasks import TaskFormatError, discover_tasks

    try:
        found = discover_tasks(paths)
    except TaskFormatError as e:
        raise fail(str(e)) from None
    if not found:
        raise fail("no tasks found in " + ", ".join(map(str, paths)))
    image_map = parse_image_map(base_image_map)
    reports = []
    for p in found:
        if not as_json:
            err().print(f"validating {p} ...", highlight=False, markup=False)
        reports.append(
            validate_task(p, sandbox=sandbox.value, repeat=repeat, base_image_map=image_map)
        )
    ok = all(r.ok for r in reports)
    if as_json:
        print(json.dumps({"ok": ok, "tasks": [r.as_dict() for r in reports]}, indent=2))
    else:
        for r in reports:
            _print_validation(r)
    raise typer.Exit(0 if ok else 1)


def _print_validation(r: TaskValidation) -> None:
    """One task's checks as a table (a row per round, one for the whole task), then what
    failed or warned, each in one line."""
    from evoround.engine import CHECKS

    verdict = "[green]valid[/]" if r.ok else "[bold red]INVALID[/]"
    table = Table(title=f"{r.name}: {verdict} ({r.duration_sec:.1f}s)", title_justify="left")
    table.add_column("round", justify="right", no_wrap=True, min_width=5)
    for c in CHECKS:
        table.add_column(_SHORT.get(c, c), no_wrap=True)
    for i in [None, *range(1, r.n_rounds + 1)] if r.n_rounds else [None]:
        cells = [_cell(r, c, i) for c in CHECKS]
        table.add_row("task" if i is None else str(i), *cells)
    console = out()
    console.print(table)
    for f in r.findings:
        if f.status.value in ("fail", "warn"):
            where = f"round {f.round}" if f.round else "task"
            console.print(
                f"  {_MARK[f.status.value]} {where}: {f.check}: {escape(f.message)}",
                highlight=False,
            )


def _cell(r: TaskValidation, check: str, rnd: int | None) -> str:
    """The mark of one check in one round (``None``: the task's own row)."""
    if rnd is not None:
        st = r.cell(check, rnd)
    else:
        got = [f.status for f in r.findings if f.check == check and f.round is None]
        st = got[0] if got else None
    return _MARK[st.value] if st else ""


@tasks_app.command("lint")
def tasks_lint(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Task directories or folders. Default: bundled.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print warnings as JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when there is any warning.")] = False,
) -> None:
    """Style warnings that are not errors: HOW-not-WHAT instructions, rounds without tests,
    missing change types, very long rounds, corrections that replace no test."""
    from evoround.tasks import TaskFormatError, lint_task

    tasks = _load(paths)
    try:
        check_task_rules(tasks)
    except TaskFormatError as e:
        raise fail(str(e)) from None
    found = {t.name: lint_task(t) for t in tasks}
    if as_json:
        print(json.dumps({n: [f.as_dict() for f in fs] for n, fs in found.items()}, indent=2))
    else:
        for name, fs in found.items():
            out().print(f"[bold]{name}[/]: {len(fs) or 'no'} warning(s)")
            for f in fs:
                where = f"round {f.round}" if f.round else "task"
                out().print(f"  {f.code} {where}: {f.message}", highlight=False, markup=False)
    if strict and any(found.values()):
        raise typer.Exit(1)


@tasks_app.command("schema")
def tasks_schema(
    output: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to a file instead of stdout.")
    ] = None,
) -> None:
    """Write the JSON Schema of task.toml (generated from the pydantic models)."""
    from evoround.tasks import task_schema_json

    text = task_schema_json()
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as e:
            raise fail(f"--out {str(output)!r}: cannot write: {e.strerror or e}") from None
        err().print(f"wrote {output}")


@tasks_app.command("new")
def tasks_new(
    path: Annotated[Path, typer.Argument(help="Directory to create; its name is the task name.")],
) -> None:
    """Scaffold a task: commented task.toml, two example rounds, README for the author."""
    from evoround.tasks import new_task

    try:
        new_task(path)
    except ValueError as e:
        raise fail(str(e)) from None
    except OSError as e:  # exists, is a file, a parent is a file, no permission
        raise fail(f"{e.filename or path}: {e.strerror or e}") from None
    out().print(f"created {path}; next: evoround tasks validate {path}", markup=False)


@tasks_app.command("import")
def tasks_import(
    source: Annotated[Path, typer.Argument(help="A Harbor task, or a folder of them.")],
    outdir: Annotated[Path, typer.Argument(help="Where to write the evoround task(s).")],
    fmt: Annotated[
        ImportFormat | None,
        typer.Option("--format", help="The source's format (default: detect from its layout)."),
    ] = None,
) -> None:
    """Convert Harbor tasks: multi-step (\\[\\[steps]]), harbor_multiturn (round_N/), plain."""
    from evoround.tasks.importers import ImportError_, import_tasks

    try:
        results = import_tasks(source, outdir, fmt.value if fmt else None)
    except ImportError_ as e:
        raise fail(str(e)) from None
    for r in results:
        out().print(
            f"{r.source} ({r.format}, {r.n_rounds} rounds) -> {r.dest}",
            highlight=False,
            markup=False,
        )
        for note in r.notes:
            out().print(f"  [yellow]note[/]: {escape(note)}", highlight=False)
    out().print(
        "next: evoround tasks validate " + " ".join(str(r.dest) for r in results), markup=False
    )


@tasks_app.command("import-octobench")
def tasks_import_octobench(
    source: Annotated[Path, typer.Argument(help="An OctoBench / OctoCodingBench JSONL file.")],
    outdir: Annotated[Path, typer.Argument(help="Where to write one task per instance.")],
) -> None:
    """Convert OctoBench instances: each user query a round, each check a judge check."""
    from evoround.tasks.importers import ImportError_, import_octobench

    try:
        results = import_octobench(source, outdir)
    except ImportError_ as e:
        raise fail(str(e)) from None
    for r in results:
        out().print(
            f"{r.instance_id}: {r.n_rounds} rounds, {r.n_checks} judge checks -> {r.dest}",
            highlight=False,
            markup=False,
        )
        for note in r.notes:
            out().print(f"  [yellow]note[/]: {escape(note)}", highlight=False)
    out().print("judge checks need --judge-model (and --judge-api-base for a local server)")
