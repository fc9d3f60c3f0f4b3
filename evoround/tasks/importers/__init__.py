"""``evoround tasks import``: convert Harbor tasks (multi-step, harbor_multiturn, single-step).

Detection is by layout (``[[steps]]``/``steps/`` vs ``round_N/``/``[metadata.multiround]``
vs a plain task.toml + instruction.md + tests/);
a folder that holds several such tasks is imported task by task.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from evoround.tasks import TaskFormatError, load_task
from evoround.tasks.importers import _harbor_multiturn as harbor_multiturn
from evoround.tasks.importers import _harbor_single as harbor_single
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

FORMATS = {
    harbor_steps.FORMAT: harbor_steps,
    harbor_multiturn.FORMAT: harbor_multiturn,
    harbor_single.FORMAT: harbor_single,
}
"""Checked in this order: a single-step task is what is left when neither layout matches."""

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
    """The format of the task at ``src`` (harbor-steps | harbor-multiturn | harbor), or None."""
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
    sources = _checked_sources(src, out, fmt)
    # Everything is converted and loaded in a staging folder first: a source that fails
    # half-way leaves nothing behind, and what lands in ``out`` is a task that loads.
    staging = _staging_folder(out)
    try:
        results = [_stage(s, src, out, fmt, staging, single=len(sources) == 1) for s in sources]
        _publish(staging / "task", out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return results


def _checked_sources(src: Path, out: Path, fmt: str | None) -> list[Path]:
    """The tasks to convert, once the arguments are known to make sense (else ImportError_)."""
    if not src.is_dir():
        raise ImportError_(f"{src}: not a directory")
    sources = [src] if fmt else _sources(src)
    if not sources:
        raise ImportError_(
            f"{src}: not a Harbor multi-step task ([[steps]], steps/<name>/), a "
            "harbor_multiturn task (round_N/, [metadata.multiround]) nor a single-step "
            "Harbor task (task.toml, instruction.md, tests/test.sh)"
        )
    if fmt is not None and fmt not in FORMATS:
        raise ImportError_(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if out.exists() and not out.is_dir():
        raise ImportError_(f"{out}: is a file, not a folder")
    if out.exists() and any(out.iterdir()):
        raise ImportError_(f"{out}: already exists and is not empty")
    return sources


def _staging_folder(out: Path) -> Path:
    """A new folder beside the nearest existing parent of ``out``: the same file system (so
    publishing is a rename), and nothing created where ``out`` would go on a failure."""
    near = next(p for p in (out.parent, *out.parent.parents) if p.exists())
    try:
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=near))
    except OSError as e:
        raise ImportError_(f"{out}: cannot write: {e.strerror or e}") from None


def _stage(
    s: Path, src: Path, out: Path, fmt: str | None, staging: Path, *, single: bool
) -> ImportResult:
    """Convert one source into ``staging/task`` (or ``staging/task/<name>``) and load it."""
    kind = fmt or detect_format(s)
    if kind is None or kind not in FORMATS:
        raise ImportError_(f"{s}: unknown format {kind!r}: choose one of {', '.join(FORMATS)}")
    imported: ImportedTask = FORMATS[kind].load(s)
    rel = Path(".") if single and s == src else Path(slug(imported.name))
    staged = staging / "task" / rel
    if staged.exists():
        raise ImportError_(f"{s}: a second task named {imported.name!r} in {src}")
    try:
        write_task(imported, staged)
        load_task(staged)
    except TaskFormatError as e:
        raise ImportError_(
            f"{s}: converts to an invalid evoround task ({_described(e, staged)})"
        ) from None
    return ImportResult(s, out / rel, kind, len(imported.rounds), imported.notes)


def _described(e: TaskFormatError, staged: Path) -> str:
    """The loader's error with the file named relative to the converted task."""
    f = Path(e.file)
    root = staged.resolve()
    where = f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name
    field = f"{e.field}: " if e.field else ""
    return f"{where}: {field}{e.message}"


def _publish(task: Path, out: Path) -> None:
    """Move the staged conversion to ``out`` in one rename."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.rmdir()
        task.rename(out)
    except OSError as e:
        raise ImportError_(f"{out}: cannot write: {e.strerror or e}") from None
