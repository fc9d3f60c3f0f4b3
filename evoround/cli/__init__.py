"""The ``evoround`` command: option declarations and calls into the rooms below it.

Each command group lives in its own module and registers on the one Typer ``app``;
importing them here, in help order, is what puts the commands on the app. None of them
imports the engine, the reports or Docker before a command runs: ``evoround --help``
loads typer, rich and these declarations only.
"""

# isort: off
from evoround.cli import _docker, _run, _report, _view, _export, _tasks, _tools  # noqa: F401  (help order)

# isort: on
from evoround.cli._app import app, main
from evoround.cli._docker import cleanup, images_app

__all__ = ["app", "cleanup", "images_app", "main"]
