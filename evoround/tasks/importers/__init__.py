"""``evoround tasks import``: convert Harbor multi-step and harbor_multiturn tasks.

Detection is by layout (``[[steps]]``/``steps/`` vs ``round_N/``/``[metadata.multiround]``);
a folder that holds several such tasks is imported task by task.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from evoround.tasks._loader import TaskFormatError, load_task
from evoround.tasks.importers import _harbor_multiturn as harbor_multiturn
from evoround.tasks.importers import _harbor_steps as harbor_steps
from evoround.tasks.importers._common import (
    ImportedTask,
    ImportError_,
    change_types_of,
    memory_mb_of,
    rewrite_harbor_paths,
    slug,
    write_task,
)
from evoround.tasks.importers._octobench import import_octobench, map_category

FORMATS = {harbor_steps.FORMAT: harbor_steps, harbor_multiturn.FORMAT: harbor_multiturn}

__all__ = [
    "FORMATS",
    "ImportError_",
    "ImportResult",
    "change_types_of",
    "detect_format",
    "import_octobench",
    "import_tasks",
    "map_category",
    "memory_mb_of",
    "rewrite_harbor_paths",
]


@dataclass
class ImportResult:
    source: Path
    dest: Path
    format: str
    n_rounds: int
    notes: list[str] = field(default_factory=list)


def detect_format(src: Path) -> str | None:
    """The format of the task at ``src`` (harbor-steps | harbor-multiturn), or None."""
    if (src / "rounds").is_dir() and (src / "task.toml").is_file() and not (src / "steps").is_dir():
        return None  # already an evoround task
    for name, mod in FORMATS.items():
        if mod.detect(src):
            return name
    return None


def _sources(src: Path) -> list[Path]:
    if detect_format(src):
        return [src]
    if src.is_dir():
        return sorted(p for p in src.iterdir() if p.is_dir() and detect_format(p))
    return []


def import_tasks(src: Path, out: Path, fmt: str | None = None) -> list[ImportResult]:
    """Convert the task at ``src`` (or every task in the folder ``src``) into ``out``.

    A single task goes to ``out`` itself; a folder of tasks to ``out/<name>``.
    """
    src = Path(src)
    out = Path(out)
    if not src.is_dir():
        raise ImportError_(f"{src}: not a directory")
    sources = [src] if fmt else _sources(src)
    if not sources:
        raise ImportError_(
            f"{src}: not a Harbor multi-step task ([[steps]], steps/<name>/) nor a "
            "harbor_multiturn task (round_N/, [metadata.multiround])"
        )
    if fmt is not None and fmt not in FORMATS:
        raise ImportError_(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if out.exists() and not out.is_dir():
        raise ImportError_(f"{out}: is a file, not a folder")
    if out.exists() and any(out.iterdir()):
        raise ImportError_(f"{out}: already exists and is not empty")
    # Everything is converted and loaded in a staging folder first: a source that fails
    # half-way leaves nothing behind, and what lands in ``out`` is a task that loads.
    near = next(p for p in (out.parent, *out.parent.parents) if p.exists())
    try:  # beside the nearest existing folder: same file system, nothing created on failure
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=near))
    except OSError as e:
        raise ImportError_(f"{out}: cannot write: {e.strerror or e}") from None
    results: list[ImportResult] = []
    try:
        for s in sources:
            kind = fmt or detect_format(s)
            if kind not in FORMATS:
                raise ImportError_(
                    f"{s}: unknown format {kind!r}: choose one of {', '.join(FORMATS)}"
                )
            imported: ImportedTask = FORMATS[kind].load(s)
            single = len(sources) == 1 and s == src
            rel = Path(".") if single else Path(slug(imported.name))
            staged = staging / "task" / rel
            if staged.exists():
                raise ImportError_(f"{s}: a second task named {imported.name!r} in {src}")
            write_task(imported, staged)
            try:
                load_task(staged)
            except TaskFormatError as e:
                f = Path(e.file)
                where = f.relative_to(staged.resolve()).as_posix() if f.is_relative_to(
                    staged.resolve()) else f.name  # fmt: skip
                field = f"{e.field}: " if e.field else ""
                raise ImportError_(
                    f"{s}: converts to an invalid evoround task ({where}: {field}{e.message})"
                ) from None
            results.append(ImportResult(s, out / rel, kind, len(imported.rounds), imported.notes))
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.exists():
                out.rmdir()
            (staging / "task").rename(out)
        except OSError as e:
            raise ImportError_(f"{out}: cannot write: {e.strerror or e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return results
