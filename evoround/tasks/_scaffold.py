"""``evoround tasks new NAME``: a task directory that already validates.

Starting from a working two-round example (an extension, then a correction that
replaces a test) teaches the format by example; the commented task.toml and the
author README explain every field without sending anyone to the docs first.

The example is a real task folder, ``starter/`` (package data), copied as it is; only
``{name}`` in its task.toml and README.md becomes the new task's name. As files, its
solution and tests are what an author reads and what ``tasks validate`` checks in the
suite, not text inside this module.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

NAMED = ("task.toml", "README.md")
"""The files in which ``{name}`` stands for the task's name."""


def _starter() -> Traversable:
    return resources.files(__package__).joinpath("starter")


def _walk(folder: Traversable, rel: str = "") -> list[tuple[str, Traversable]]:
    """Every file under ``folder`` as (relative path, file), in a stable order."""
    out: list[tuple[str, Traversable]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        path = f"{rel}{entry.name}"
        if entry.is_dir():
            if entry.name != "__pycache__":
                out.extend(_walk(entry, path + "/"))
        else:
            out.append((path, entry))
    return out


def new_task(dest: Path, name: str | None = None) -> Path:
    """Create a task directory at ``dest``; refuses to overwrite anything."""
    name = name or dest.name
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise ValueError(f"{name!r}: a task name is lowercase letters, digits, '.', '_', '-'")
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest}: already exists and is not empty")
    for rel, src in _walk(_starter()):
        text = src.read_text(encoding="utf-8")
        if rel in NAMED:
            text = text.replace("{name}", name)
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return dest
