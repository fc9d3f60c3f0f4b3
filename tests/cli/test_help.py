"""``--help`` of every command, as a newcomer reads it: no option without help text, no
square brackets eaten by Rich markup, and choices shown as choices, not ``<str>``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from evoround.cli import app

# Options whose values are free text (names, URLs, paths, patterns): <str> is right there.
FREE_TEXT = {
    "agent", "model", "api_base", "job", "judge_model", "judge_api_base", "rounds",
    "ray_address", "tag", "suite", "mirror", "host",
}  # fmt: skip


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():  # typer may vendor click
        yield from _commands(sub, [*path, name])


COMMANDS = list(_commands(typer.main.get_command(app), []))


def _help(path: list[str]) -> str:
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, (path, res.output)
    return res.output


def test_every_command_has_help_and_every_option_help_text() -> None:
    assert len(COMMANDS) > 20
    for path, cmd in COMMANDS:
        assert cmd.help, path
        for p in cmd.params:
            if p.param_type_name == "option":
                assert p.help, (path, p.opts)


def test_square_brackets_in_help_survive_rich_markup() -> None:
    for path, cmd in COMMANDS:
        flat = " ".join(_help(path).replace("│", " ").split())
        texts = [cmd.help.replace("\\[", "[")] + [getattr(p, "help", "") or "" for p in cmd.params]
        for text in texts:
            for literal in re.findall(r"\[[^\]\s]*\]\]?", text.replace("\\[", "[")):
                assert literal in flat, (path, literal)


def test_choices_are_shown_not_str() -> None:
    for path, _ in COMMANDS:
        for line in _help(path).splitlines():
            m = re.search(r"--([\w-]+)\s.*<str>", line)
            if m:
                assert m.group(1).replace("-", "_") in FREE_TEXT, (path, line.strip()[:100])
    assert "<evocodebench|harbor-multiturn>" in _help(["export"])
    assert "<harbor-steps|harbor-multiturn|harbor>" in _help(["tasks", "import"])
    assert "<stop|continue>" in _help(["run"])


def test_import_format_choices_are_the_importers() -> None:
    from evoround.cli._tasks import ImportFormat
    from evoround.tasks.importers import FORMATS

    assert [f.value for f in ImportFormat] == list(FORMATS)


def test_the_command_imports_no_engine_before_it_runs() -> None:
    """``evoround --help`` loads typer, rich and the option declarations only: the engine,
    Docker, numpy and httpx (seconds of imports) wait until a command runs."""
    import os
    import subprocess
    import sys

    heavy = ["evoround.engine", "evoround.api", "evoround.reports", "docker", "numpy", "httpx"]
    code = f"import sys, evoround.cli; print([m for m in {heavy!r} if m in sys.modules])"
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert res.returncode == 0 and res.stdout.strip() == "[]", (res.stdout, res.stderr)


def test_defaults_written_out_for_help_are_the_rooms_own() -> None:
    """--help shows these without importing their rooms; they must not drift apart."""
    from evoround.cli import _docker, _export, _report
    from evoround.reports import DEFAULT_SEED, EXPORT_FORMATS
    from evoround.sandboxes.docker import DEFAULT_SUITE

    assert _report.DEFAULT_SEED == DEFAULT_SEED
    assert tuple(EXPORT_FORMATS) == _export.EXPORT_FORMATS
    assert _docker.DEFAULT_SUITE == DEFAULT_SUITE
