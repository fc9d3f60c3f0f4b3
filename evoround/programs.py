"""The text of programs the harness runs in another interpreter, never imports.

Some code runs where evoround is not importable: in a task image's own Python (the pristine
probe), in a fresh interpreter before anything else is loaded (the seccomp launcher, the
bytecode filler). It is handed over as text (``python -c TEXT``). It lives in real files,
``programs/`` beside the module that runs it (package data), so ruff, mypy and readers see
it as code; ``tests/architecture`` refuses code in string literals.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def program_text(package: str, name: str, folder: str = "programs") -> str:
    """The text of ``<package>/<folder>/<name>``, exactly as shipped (the verifiers keep
    theirs in ``guard/``)."""
    return resources.files(package).joinpath(folder, name).read_text(encoding="utf-8")
