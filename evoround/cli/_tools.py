"""``evoround replay-server`` and ``install-proxy``: tools for development and offline runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Protocol, TypedDict

import typer

from evoround.cli._app import app, err, fail, out


@app.command("replay-server", rich_help_panel="Develop")
def replay_server(
    script: Annotated[Path, typer.Argument(help="Replay script (YAML): rounds, answers, faults.")],
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")
    ] = 8765,
    log: Annotated[
        Path | None, typer.Option(help="Append every request received to this JSONL file.")
    ] = None,
) -> None:
    """Serve a scripted model (OpenAI and Anthropic wire formats) until Ctrl-C.

    Point agents at it: --api-base http://127.0.0.1:PORT/v1 (litellm agents) or
    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT (Claude Code).
    """
    import time

    if log is not None and (log.is_dir() or not log.parent.is_dir()):
        why = "is a folder" if log.is_dir() else f"{log.parent} is not a folder"
        raise fail(f"--log {str(log)!r}: {why} (give a file path for the JSONL log)")
    srv = _start_server(script, port, log)
    out().print(f"replay server: {srv.url} (OpenAI)  {srv.base_url} (Anthropic); Ctrl-C stops")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()


class _Server(Protocol):
    """What the command needs of the started replay server."""

    url: str
    base_url: str

    def close(self) -> None: ...


def _start_server(script: Path, port: int, log: Path | None) -> _Server:
    """The script loaded and served; too big, unreadable, malformed or empty, a port in use
    or an unwritable log is one line (exit 2)."""
    from evoround.cli._checks import UsageError, check_script_size
    from evoround.scaffolds import load_replay_script, serve

    try:
        if script.is_file():
            check_script_size("replay script", script)
    except UsageError as e:
        raise fail(str(e)) from None
    try:
        loaded = load_replay_script(script)
    except OSError as e:
        raise fail(f"{e.filename or script}: {e.strerror or e}") from None
    except ValueError as e:
        raise fail(f"{script}: {e}") from None
    if not (loaded.rounds or loaded.answers or loaded.faults or loaded.default is not None):
        raise fail(f"{script}: an empty script (no rounds, answers, faults or default)")
    try:
        return serve(loaded, port=port, log_path=log)
    except OSError as e:
        raise fail(f"{e.filename or script}: {e.strerror or e}") from None
    except ValueError as e:
        raise fail(f"{script}: {e}") from None


@app.command("install-proxy", rich_help_panel="Develop")
def install_proxy() -> None:
    """Install the LiteLLM proxy that --proxy runs, now rather than on first use.

    It goes into its own venv under $EVOROUND_HOME/tools (its pinned dependencies clash
    with the agents'), with the same LiteLLM version as evoround's. Takes a few minutes
    and needs the package index once (a line per step on stderr, with the time since
    the start); later runs are offline. Idempotent. Run it before the first --proxy run.
    """
    from evoround.scaffolds.proxy import ProxyError, proxy_python
    from evoround.settings import evoround_home

    installed: list[str] = []
    try:
        python = proxy_python(evoround_home(), say=lambda line: _said(installed, line))
    except ProxyError as e:
        raise fail(str(e)) from None
    already = "" if installed else " (already installed)"
    out().print(f"LiteLLM proxy ready{already}: {python}", markup=False, highlight=False)


def _said(lines: list[str], line: str) -> None:
    """A progress line of the install, on stderr at once (kept: were there any?)."""
    lines.append(line)
    err().print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("install-harbor", rich_help_panel="Develop")
def install_harbor(
    force: Annotated[bool, typer.Option(help="Rebuild even if it is installed.")] = False,
    agents: Annotated[
        bool, typer.Option("--agents", help="Then list Harbor's agents and how each runs here.")
    ] = False,
) -> None:
    """Build Harbor's own interpreter for --agent harbor:NAME (Terminus-2 and the others).

    Harbor needs Python >= 3.12: this debootstraps a minimal Debian trixie (Python 3.13)
    under $EVOROUND_HOME/tools and pip installs the pinned harbor release into it
    (EVOROUND_HARBOR_VERSION overrides the pin). Needs root, Debian's mirror and PyPI
    once; later runs are offline. Idempotent. With EVOROUND_HARBOR_PYTHON set (a Python
    >= 3.12 with harbor) nothing is built and that interpreter is checked instead.
    """
    import time

    from evoround.scaffolds.harbor import (
        CONTINUATION_HELP,
        HarborError,
        harbor_runtime,
        install_harbor,
        open_bridge,
    )
    from evoround.settings import evoround_home, settings

    home = evoround_home()
    t0 = time.monotonic()
    try:
        if not settings().harbor_python:
            res = install_harbor(home, force=force, log=lambda m: out().print(f"[dim]{m}[/]"))
            if res.built:
                out().print(f"built Harbor {res.version} in {res.seconds:.0f}s: {res.root}")
        bridge, info = open_bridge(harbor_runtime(home))
        try:
            catalogue = bridge.request("catalogue", timeout=300)["agents"] if agents else []
        finally:
            bridge.close()
    except HarborError as e:
        raise fail(str(e)) from None
    out().print(
        f"Harbor {info.get('harbor')} ready (Python {info.get('python')}, bridge protocol "
        f"{info.get('protocol')}, {time.monotonic() - t0:.0f}s)"
    )
    for a in catalogue:
        if a.get("error"):
            out().print(f"  harbor:{a['spec']:<18} unavailable: {a['error']}")
            continue
        where = (
            "in the sandbox, installs itself (needs internet there)"
            if a.get("installed")
            else "in the bridge (no install in the sandbox)"
        )
        out().print(
            f"  harbor:{a['spec']:<18} runs {where}; "
            f"{CONTINUATION_HELP.get(a.get('continuation'), '?')}"
        )


@app.command("config", rich_help_panel="Develop")
def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print the settings as JSON.")] = False,
) -> None:
    """Every setting: its EVOROUND_* variable and config-file key, the value now, where it
    came from (environment, which config file, or default) and what it means.

    Precedence: a command-line flag > EVOROUND_* > ./evoround.toml > the user's
    ~/.config/evoround/config.toml > default (EVOROUND_CONFIG=PATH: that file only)."""
    import json

    from rich.markup import escape
    from rich.table import Table

    from evoround.settings import config_files

    rows = _setting_rows()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    columns = ("variable", "file key", "value", "source", "description")
    table = Table(*columns, title="evoround settings")
    for r in rows:
        cells = (r["variable"], r["key"] or "-", r["value"] or "-", r["source"], r["description"])
        table.add_row(*(escape(c) for c in cells))
    console = out()
    console.print(table)
    files = ", ".join(f"{p}{'' if p.is_file() else ' (absent)'}" for p in config_files())
    console.print(f"config files (later wins): {files}", markup=False, highlight=False)


class _SettingRow(TypedDict):
    """One setting as ``config`` shows it (and ``--json`` prints it)."""

    variable: str
    key: str | None
    value: str | None
    source: str
    description: str


def _setting_rows() -> list[_SettingRow]:
    """Every setting with its value now (secrets masked) and where the value came from."""
    from evoround.settings import (
        NOT_IN_FILES,
        SECRET_FIELDS,
        Settings,
        SettingsError,
        settings,
        sources,
    )

    try:
        current = settings()
        where = sources()
    except SettingsError as e:
        raise fail(str(e)) from None
    rows: list[_SettingRow] = []
    for name, field in Settings.model_fields.items():
        value = getattr(current, name)
        shown = "***" if name in SECRET_FIELDS and value else value
        row: _SettingRow = {
            "variable": f"EVOROUND_{name.upper()}",
            "key": None if name in NOT_IN_FILES else name,
            "value": None if shown is None else str(shown),
            "source": where[name],
            "description": field.description or "",
        }
        rows.append(row)
    return rows
