"""The ``evoround`` Typer app, its consoles and the helpers every command group shares."""

from __future__ import annotations

import os
import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
import typer.core
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from evoround.cli._docker import cleanup, images_app
from evoround.results import Mode
from evoround.settings import SettingsError

if TYPE_CHECKING:
    from evoround.results import JobConfig


def _flag_type_rich(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
    """No ``<bool>`` type column for on/off flags: the flag's name is all there is to type."""
    if self.is_flag and not self.count:
        return None
    return _option_type_rich(self, ctx)


# typer's rich help labels every flag ``<bool>``; there is no per-option switch for it.
_option_type_rich = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = _flag_type_rich  # type: ignore[method-assign]


app = typer.Typer(
    help="evoround: multi-turn, stateful evaluation of coding agents.\n\n"
    "One sandbox and one agent session live across all rounds of a task; every round is "
    "verified against the cumulative hidden tests in an isolated clone, and an attempt "
    "stops at its first failed round.\n\n"
    "Exit codes: 0 every attempt was evaluated (whatever the score); 1 the job finished but "
    "some rounds could not be evaluated (infra, model_api, judge errors: stderr says how "
    "many and why); 2 usage or task error, nothing ran; 3 internal error (a bug); 130 "
    "interrupted (resumable with the printed command).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(images_app, name="images", rich_help_panel="Docker")
app.command("cleanup", rich_help_panel="Docker")(cleanup)

err = Console(stderr=True)
out = Console()
if not out.is_terminal and "COLUMNS" not in os.environ:
    # Piped or logged reports: wide enough that the leaderboard is not folded to 80 columns.
    out = Console(width=160)


_T = TypeVar("_T")


def setup_logging(verbose: bool, debug: bool) -> None:
    """The engine's log on stderr through rich (above the live display, which shares the
    console): ``-v`` INFO from evoround, ``--debug`` DEBUG and tracebacks of unexpected
    errors; other libraries stay at WARNING (litellm's DEBUG would drown the engine's)."""
    if not (verbose or debug):
        return
    import logging

    from rich.logging import RichHandler

    handler = RichHandler(console=err, show_path=debug, markup=False, rich_tracebacks=debug,
                          log_time_format="%H:%M:%S")  # fmt: skip
    root = logging.getLogger()
    if not any(isinstance(h, RichHandler) for h in root.handlers):
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("evoround").setLevel(logging.DEBUG if debug else logging.INFO)
    if debug:
        os.environ["EVOROUND_DEBUG"] = "1"  # _main shows the traceback of an unexpected error


@app.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show the engine's log (INFO) on stderr.")
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show the engine's DEBUG log, and the traceback of an unexpected error.",
        ),
    ] = False,
) -> None:
    setup_logging(verbose, debug)


EXIT_INTERNAL = 3
"""An unexpected exception inside evoround (a bug): one line, not a traceback."""


class ModeChoice(StrEnum):
    mt = "mt"
    sr = "sr"
    both = "both"


def _modes(mode: ModeChoice) -> list[Mode]:
    return [Mode.mt, Mode.sr] if mode is ModeChoice.both else [Mode(mode.value)]


def _fail(message: str, code: int = 2) -> typer.Exit:
    # The message holds user text (paths, values, `[[rounds]]`): never read it as markup.
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _from_job_json(
    ctx: typer.Context,
    cfg: JobConfig,
    tasks: list[Path] | None,
    agent: str,
    attempts: int,
    mode: ModeChoice,
    sandbox: str,
) -> tuple[list[Path] | None, str, int, ModeChoice, str]:
    """Fill the options a --resume did not give from the job's config lock."""
    if not tasks:
        tasks = [Path(t.path) for t in cfg.tasks.values()]
    if not _given(ctx, "agent"):
        # A script from a file is locked by digest; the run must pass the same --script.
        agent = "scripted" if cfg.script_digest else cfg.agent
    if not _given(ctx, "attempts"):
        attempts = cfg.attempts
    if not _given(ctx, "mode"):
        mode = ModeChoice.both if len(cfg.modes) == 2 else ModeChoice(cfg.modes[0].value)
    if not _given(ctx, "sandbox"):
        sandbox = cfg.sandbox
    return tasks, agent, attempts, mode, sandbox


def _given(ctx: typer.Context, name: str) -> bool:
    # typer may vendor click: compare the source by name, not by class
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def _job_config(job_dir: Path) -> JobConfig:
    """The config lock of the job a --resume names (read once)."""
    from evoround.results import JobConfig

    path = job_dir / "job.json"
    if not path.is_file():
        raise _fail(f"{job_dir} is not a job folder (no job.json)")
    try:
        return JobConfig.model_validate_json(path.read_bytes())
    except OSError as e:
        raise _fail(f"{path}: cannot read: {e.strerror or e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _fail(f"{path}: {where + ': ' if where else ''}{first['msg']}") from None


def _locked(ctx: typer.Context, cfg: JobConfig, path: Path, name: str, value: _T) -> _T:
    """The value a --resume uses for a model or judge option: the recorded one unless given.

    A resumed attempt must talk to the same model as the rounds already recorded, so a
    given value that differs is refused here, in one line naming the option, before any
    agent starts. A field an older job.json never recorded, or recorded as None for a
    count (``max_steps`` of a model-free agent), leaves the command line's value.
    """
    recorded = getattr(cfg, name)
    if name not in cfg.model_fields_set or (recorded is None and isinstance(value, int)):
        return value
    if not _given(ctx, name):
        return recorded
    if value != recorded:
        flag = "--" + name.replace("_", "-")
        raise _fail(
            f"{flag} {value!r} differs from the {recorded!r} recorded in {path}; "
            f"leave out {flag} to resume with it, or start a new --job"
        )
    return value


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    # SIGTERM takes the same path as Ctrl-C: sandboxes are closed, results stay valid.
    raise KeyboardInterrupt


def _is(e: BaseException, name: str) -> bool:
    # typer vendors click: match click's exception classes by name, not by identity
    return any(c.__name__ == name for c in type(e).__mro__)


def _typed_value(param: object, argv: list[str]) -> str | None:
    """What the user typed for the option click refused (its messages may leave it out)."""
    opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    for i, arg in enumerate(argv):
        for o in opts:
            if arg == o and i + 1 < len(argv):
                return argv[i + 1]
            if o.startswith("--") and arg.startswith(o + "="):
                return arg.split("=", 1)[1]
    return None


def main() -> None:  # pragma: no cover - console entry point
    """Run the app and exit with its code (see the exit-code contract in ``--help``)."""
    sys.exit(_main())


def _run_app() -> int:
    """Run the app; a usage error is one line on stderr and exit 2, never a boxed panel."""
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        rv = app(standalone_mode=False)
    except Exception as e:
        if _is(e, "NoArgsIsHelpError"):
            e.show()  # type: ignore[attr-defined]
            return 2
        if not _is(e, "ClickException"):
            raise
        message = " ".join(e.format_message().split())  # type: ignore[attr-defined]
        message = message.replace("Value error, ", "")  # pydantic's prefix, via typer enums
        value = _typed_value(getattr(e, "param", None), sys.argv[1:])
        if value is not None and repr(value) not in message:
            message = f"{message.rstrip('.')} (got {value!r})"
        ctx = getattr(e, "ctx", None)
        where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        err.print(f"[bold red]error:[/] {escape(message)}{escape(where)}", highlight=False,
                  soft_wrap=True)  # fmt: skip
        return int(getattr(e, "exit_code", 2))
    except BaseException as e:
        if _is(e, "Abort"):
            return 130
        raise
    return rv if isinstance(rv, int) else 0


def _debugging() -> bool:
    """``--debug``, ``EVOROUND_DEBUG`` or ``debug = true`` in a config file."""
    from evoround.settings import settings

    try:
        return settings().debug
    except SettingsError:
        return False


def _main() -> int:
    """The last line of defence: an unexpected exception is one line and exit 3, not a
    traceback (``EVOROUND_DEBUG=1`` shows it, for a bug report)."""
    try:
        return _run_app()
    except SettingsError as e:  # a bad EVOROUND_* variable: one line, not a traceback
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        return 2
    except Exception as e:
        if _debugging():
            raise
        what = " ".join(str(e).split()) or type(e).__name__
        err.print(
            f"[bold red]error:[/] {escape(f'{type(e).__name__}: {what}')} (an evoround bug: "
            "EVOROUND_DEBUG=1 shows the traceback for a report)",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_INTERNAL


def parse_image_map(items: list[str] | None) -> dict[str, str]:
    """``EVOROUND_BASE_IMAGE_MAP`` plus ``--base-image-map FROM=LOCAL`` (repeatable; these
    win) into a dict; a malformed item fails in one line naming it."""
    from evoround.settings import settings

    try:
        out: dict[str, str] = dict(settings().base_image_map)
    except SettingsError as e:
        raise _fail(str(e)) from None
    for item in items or []:
        src, sep, dst = item.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise _fail(
                f"--base-image-map {item!r}: expected FROM=LOCAL, "
                "e.g. ubuntu:24.04=evoround-base:bookworm"
            )
        out[src.strip()] = dst.strip()
    return out


ImageMapOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--base-image-map",
        help="FROM=LOCAL: build tasks whose Dockerfile starts FROM FROM on the local image "
        "LOCAL instead (repeatable; docker sandbox). Recorded in job.json and the report.",
    ),
]


def parse_window(text: str | None) -> tuple[int, int | None] | None:
    """``--rounds A-B`` / ``A-`` / ``A`` into (A, B or None); one line when malformed."""
    if text is None:
        return None
    import re

    m = re.fullmatch(r"\s*(\d+)\s*(?:(-)\s*(\d*))?\s*", text)
    if not m:
        raise _fail(f"--rounds {text!r}: expected A-B, A- or A (1-based round numbers)")
    first = int(m.group(1))
    last = int(m.group(3)) if m.group(3) else (None if m.group(2) else first)
    if first < 1 or (last is not None and last < first):
        raise _fail(f"--rounds {text!r}: expected 1 <= A <= B")
    return first, last
