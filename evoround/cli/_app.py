"""The ``evoround`` Typer app, its consoles and the helpers every command group shares."""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys
import warnings
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.logging import RichHandler

    from evoround.results import Mode


def _flag_type_rich(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
    """No ``<bool>`` type column for on/off flags: the flag's name is all there is to type."""
    if self.is_flag and not self.count:
        return None
    return _option_type_rich(self, ctx)


# typer's rich help labels every flag ``<bool>``; there is no per-option switch for it.
_option_type_rich = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = _flag_type_rich  # type: ignore[method-assign, assignment]  # typer.Context is its click Context


app = typer.Typer(
    help="evoround: multi-turn, stateful evaluation of coding agents.\n\n"
    "One sandbox and one agent session live across all rounds of a task; every round is "
    "verified against the cumulative hidden tests in an isolated clone, and an attempt "
    "stops at its first failed round.\n\n"
    "Exit codes: 0 every attempt was evaluated (whatever the score); 1 the job finished but "
    "some rounds could not be evaluated (infra, model_api, judge errors, or task errors: "
    "verifier_error, setup_error; stderr says how "
    "many and why); 2 usage or task error, nothing ran; 3 internal error (a bug); 130 "
    "interrupted (resumable with the printed command).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


def out() -> Console:
    """A console on stdout, made when it prints: it sees COLUMNS and the terminal of this
    invocation, not those of whoever imported the module first (a test runner, a worker)."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        # Piped or logged reports: wide enough that the leaderboard is not folded to 80 columns.
        return Console(width=160)
    return console


def err() -> Console:
    """A console on stderr, made when it prints (see :func:`out`). A command that keeps a
    display alive (``run``'s live table, ``demo``'s progress bar) makes one and passes it
    to the display and the log handler, so log lines print above the display."""
    return Console(stderr=True)


def setup_logging(verbose: bool, debug: bool, console: Console | None = None) -> None:
    """The engine's log on stderr through rich (above the live display, which shares the
    console): ``-v`` INFO from evoround, ``--debug`` DEBUG and tracebacks of unexpected
    errors; other libraries stay at WARNING (litellm's DEBUG would drown the engine's).

    ``console``: the stderr console of this invocation; a handler an earlier call added
    (``evoround -v run``) moves to it, so its lines print above this command's display."""
    from rich.logging import RichHandler

    root = logging.getLogger()
    existing = [h for h in root.handlers if isinstance(h, RichHandler)]
    if console is not None:
        for h in existing:
            h.console = console
    if not (verbose or debug):
        return
    if not existing:
        root.addHandler(_rich_handler(console or err(), debug))
    root.setLevel(logging.WARNING)
    logging.getLogger("evoround").setLevel(logging.DEBUG if debug else logging.INFO)
    if debug:
        os.environ["EVOROUND_DEBUG"] = "1"  # _main shows the traceback of an unexpected error


def _rich_handler(console: Console, debug: bool) -> RichHandler:
    from rich.logging import RichHandler

    return RichHandler(
        console=console,
        show_path=debug,
        markup=False,
        rich_tracebacks=debug,
        log_time_format="%H:%M:%S",
    )


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"evoround {version('evoround')}")
        except PackageNotFoundError:  # a source tree never installed
            print("evoround (version unknown: not installed)")
        raise typer.Exit(0)


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
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Print evoround's version and exit.",
        ),
    ] = False,
) -> None:
    setup_logging(verbose, debug, err())


EXIT_INTERNAL = 3
"""An unexpected exception inside evoround (a bug): one line, not a traceback."""


class ModeChoice(StrEnum):
    mt = "mt"
    sr = "sr"
    both = "both"


def modes_of(mode: ModeChoice) -> list[Mode]:
    from evoround.results import Mode

    return [Mode.mt, Mode.sr] if mode is ModeChoice.both else [Mode(mode.value)]


def fail(message: str, code: int = 2, console: Console | None = None) -> typer.Exit:
    """Say what is wrong in one line on stderr; the caller raises the exit it returns.

    ``console``: the command's own stderr console when a display is live on it."""
    # The message holds user text (paths, values, `[[rounds]]`): never read it as markup.
    (console or err()).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )
    return typer.Exit(code)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user typed option ``name`` (a resumed job takes the others from its lock)."""
    # typer may vendor click: compare the source by name, not by class
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def _stop_signal(signum: int, frame: object) -> None:
    # SIGINT and SIGTERM take the path of Ctrl-C: sandboxes are closed, results stay valid.
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """SIGINT and SIGTERM stop a job the way Ctrl-C does (recorded rounds kept, exit 130).

    Installed when a job starts, whatever the inherited disposition: a job started from a
    script with ``cmd &`` inherits SIGINT ignored, and ``kill -INT`` would do nothing. A
    second signal during the grace period aborts at once (the engine's path)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers (a test runner's worker thread)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop_signal)


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
    signal.signal(signal.SIGTERM, _stop_signal)  # any command; a job adds SIGINT
    try:
        rv = app(standalone_mode=False)
    except Exception as e:
        if _is(e, "NoArgsIsHelpError"):
            e.show()  # type: ignore[attr-defined]  # a click exception, matched by name
            return 2
        if not _is(e, "ClickException"):
            raise
        message = " ".join(e.format_message().split())  # type: ignore[attr-defined]  # as above
        message = message.replace("Value error, ", "")  # pydantic's prefix, via typer enums
        value = _typed_value(getattr(e, "param", None), sys.argv[1:])
        if value is not None and repr(value) not in message:
            message = f"{message.rstrip('.')} (got {value!r})"
        ctx = getattr(e, "ctx", None)
        where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        err().print(
            f"[bold red]error:[/] {escape(message)}{escape(where)}",
            highlight=False,
            soft_wrap=True,
        )
        return int(getattr(e, "exit_code", 2))
    except BaseException as e:
        if _is(e, "Abort"):
            return 130
        raise
    return rv if isinstance(rv, int) else 0


def _debugging() -> bool:
    """``--debug``, ``EVOROUND_DEBUG`` or ``debug = true`` in a config file."""
    from evoround.settings import SettingsError, settings

    try:
        return settings().debug
    except SettingsError:
        return False


ENVIRONMENT_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EMFILE}
)
"""OSErrors of the machine, not of evoround: a read-only or full disk, a missing permission."""


def environment_error(e: OSError) -> str:
    """An environment OSError as one line naming the path and what to do (exit 2, not 3)."""
    where = e.filename or "a file"
    hint = {
        errno.ENOSPC: "the disk is full: free space or write elsewhere (--out, EVOROUND_HOME)",
        errno.EDQUOT: "the disk quota is exceeded: free space or write elsewhere (--out, "
        "EVOROUND_HOME)",
        errno.EROFS: "the file system is read-only: choose a writable folder",
    }.get(e.errno or 0, "check the folder's permissions (or EVOROUND_HOME / --out)")
    return f"cannot write {where}: {e.strerror or e} ({hint})"


def _quiet_library_warnings() -> None:
    """litellm's types make pydantic warn about TypedDict ``ReadOnly`` items when litellm
    is first imported, which can be at any moment of a run (even after the job's last
    line): noise about a library's internals, not about the user's job. Shown when the
    user sets ``-W``/``PYTHONWARNINGS`` themselves (no settings read: --help stays light)."""
    if sys.warnoptions:
        return
    warnings.filterwarnings(
        "ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning
    )


def _main() -> int:
    """The last line of defence: an unexpected exception is one line and exit 3, not a
    traceback (``EVOROUND_DEBUG=1`` shows it, for a bug report)."""
    _quiet_library_warnings()
    try:
        return _run_app()
    except Exception as e:
        from evoround.settings import SettingsError  # on this path only: --help stays light

        if isinstance(e, SettingsError):  # a bad EVOROUND_* variable: one line, no traceback
            err().print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
            return 2
        if isinstance(e, OSError) and e.errno in ENVIRONMENT_ERRNOS:
            err().print(
                f"[bold red]error:[/] {escape(environment_error(e))}",
                highlight=False,
                soft_wrap=True,
            )
            return 2
        if _debugging():
            raise
        what = " ".join(str(e).split()) or type(e).__name__
        err().print(
            f"[bold red]error:[/] {escape(f'{type(e).__name__}: {what}')} (an evoround bug: "
            "EVOROUND_DEBUG=1 shows the traceback for a report)",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_INTERNAL


def parse_image_map(items: list[str] | None) -> dict[str, str]:
    """``EVOROUND_BASE_IMAGE_MAP`` plus ``--base-image-map FROM=LOCAL`` (repeatable; these
    win) into a dict; a malformed item fails in one line naming it."""
    from evoround.settings import SettingsError, settings

    try:
        mapping: dict[str, str] = dict(settings().base_image_map)
    except SettingsError as e:
        raise fail(str(e)) from None
    for item in items or []:
        src, sep, dst = item.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise fail(
                f"--base-image-map {item!r}: expected FROM=LOCAL, "
                "e.g. ubuntu:24.04=evoround-base:bookworm"
            )
        mapping[src.strip()] = dst.strip()
    return mapping


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
        raise fail(f"--rounds {text!r}: expected A-B, A- or A (1-based round numbers)")
    first = int(m.group(1))
    last = int(m.group(3)) if m.group(3) else (None if m.group(2) else first)
    if first < 1 or (last is not None and last < first):
        raise fail(f"--rounds {text!r}: expected 1 <= A <= B")
    return first, last
