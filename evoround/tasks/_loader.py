"""Load a task directory into a :class:`Task`, or fail with one precise error.

Every error names the file and the field (or the missing path) so that an author
can fix it without reading a traceback.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from evoround.tasks._authoring import (
    AuthoringError,
    basename_clash,
    check_python,
    check_scripts,
    size_message,
)
from evoround.tasks._errors import describe_error, known_keys, unknown_key_message
from evoround.tasks._model import Round, RoundSpec, Task, TaskFile
from evoround.tasks._overlay import is_test_module

ROUND_DIR = re.compile(r"^\d{2}$")
MAX_ROUNDS = 99
"""Round folders have two digits (01 .. 99)."""
MAX_TEXT_BYTES = 1_000_000
"""Largest task.toml or instruction.md: more is a wrong file, not a task to parse."""


class TaskFormatError(ValueError):
    """A task on disk does not follow task format v1."""

    def __init__(self, file: Path | str, field: str | None, message: str) -> None:
        self.file = str(file)
        self.field = field
        self.message = message
        where = f"{self.file}: {field}: " if field else f"{self.file}: "
        super().__init__(where + message)


def _files_under(root: Path) -> list[str]:
    """Relative POSIX paths of all regular files under ``root``, sorted."""
    if not root.is_dir():
        return []
    out = []
    for p in root.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc"):
            out.append(p.relative_to(root).as_posix())
    return sorted(out)


def task_digest(root: Path) -> str:
    """Content hash of a task directory (paths and bytes), stable across machines."""
    h = hashlib.sha256()
    for rel in _files_under(root):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return h.hexdigest()


def _loc(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as the task file names it: ``rounds[2].checks[1].id``."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item + 1}]" if parts else f"[{item + 1}]"]
        else:
            parts.append(str(item))
    return ".".join(parts)


def read_text_file(path: Path, what: str = "") -> str:
    """A task's text file as str, or one TaskFormatError naming the file (never a traceback).

    Authors edit these files by hand on every platform: a Latin-1 or UTF-16 save, a
    directory where a file belongs or a missing read permission is reported as such.
    """
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES and path.is_file():
            raise TaskFormatError(path, None, size_message(size, MAX_TEXT_BYTES))
        data = path.read_bytes()
    except FileNotFoundError:
        raise TaskFormatError(path, None, f"missing {what or path.name}") from None
    except IsADirectoryError:
        raise TaskFormatError(path, None, "is a directory, not a file") from None
    except OSError as e:
        raise TaskFormatError(path, None, f"cannot read: {e.strerror or e}") from None
    return decode_text(path, data)


def decode_text(path: Path | str, data: bytes) -> str:
    """UTF-8 text without a byte-order mark or NUL bytes, or one TaskFormatError.

    A BOM is what some Windows editors put first; TOML parsers then report "invalid
    statement at line 1" and an instruction would start with an invisible character,
    so it is named for what it is. A NUL byte means a binary file.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        raise TaskFormatError(
            path, None, "starts with a UTF-8 byte-order mark (BOM): save it as UTF-8 without BOM"
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TaskFormatError(path, None, "is UTF-16 text, not UTF-8 (save the file as UTF-8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise TaskFormatError(
            path,
            None,
            f"not UTF-8 text: byte 0x{data[e.start]:02x} on line {line} (save the file as UTF-8)",
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise TaskFormatError(path, None, f"a NUL byte on line {line}: a binary file, not text")
    return text


def _parse_task_file(path: Path) -> TaskFile:
    text = read_text_file(path, "task.toml")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(path, None, f"invalid TOML: {e}") from None
    meta = raw.get("metadata")
    if raw.get("steps") or (isinstance(meta, dict) and "multiround" in meta):
        raise TaskFormatError(
            path,
            None,
            "this is a Harbor / EvoCode-Bench task (it declares steps or metadata.multiround), not "
            "an evoround task: convert it with `evoround tasks import SRC OUT`",
        )
    try:
        return TaskFile.model_validate(raw)
    except ValidationError as e:
        raise task_file_error(path, e.errors()) from None


def task_file_error(path: Path, errors: list[ErrorDetails]) -> TaskFormatError:
    """The first of a ``TaskFile`` validation's errors as one TaskFormatError, the rest counted.

    Shared by the loader and the importers (which fill the same model), so a problem reads
    the same whether an author wrote the value or an importer converted it."""
    # A misspelt key also makes the real key "missing": name the typo first.
    errors = sorted(errors, key=lambda x: x["type"] != "extra_forbidden")
    first = errors[0]
    if first["type"] == "extra_forbidden":  # the key it stands for is not missing too
        errors = [x for x in errors if not _hidden_by_typo(x, first)]
    more = len(errors) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if first["type"] == "extra_forbidden":
        table, key = _loc(first["loc"][:-1]), str(first["loc"][-1])
        msg = unknown_key_message(key, known_keys(TaskFile, first["loc"][:-1]))
        return TaskFormatError(path, table or None, msg + extra)
    return TaskFormatError(path, _loc(first["loc"]), describe_error(first) + extra)


def _hidden_by_typo(err: ErrorDetails, typo: ErrorDetails) -> bool:
    """A "missing" key beside an unknown one: most likely the key the typo stands for."""
    return err["type"] == "missing" and err["loc"][:-1] == typo["loc"][:-1]


def _round_dirs(root: Path) -> list[Path]:
    rounds_root = root / "rounds"
    if not rounds_root.is_dir():
        raise TaskFormatError(rounds_root, None, "missing rounds/ directory")
    dirs = sorted(p for p in rounds_root.iterdir() if p.is_dir() and p.name != "__pycache__")
    for d in dirs:
        if d.name.isdigit() and len(d.name) > 2 and int(d.name) > MAX_ROUNDS:
            raise TaskFormatError(
                d, None, f"a task has at most {MAX_ROUNDS} rounds (folders 01 .. {MAX_ROUNDS})"
            )
        if not ROUND_DIR.match(d.name):
            raise TaskFormatError(
                d, None, f"round directories must be named 01, 02, ... {MAX_ROUNDS} (two digits)"
            )
    strays = sorted(rounds_root.glob("*.toml")) + sorted(rounds_root.glob("*/*.toml"))
    if strays:
        raise TaskFormatError(
            strays[0],
            None,
            "evoround never reads this file: round settings (title, change_types, retires) "
            "go in task.toml's [[rounds]] tables",
        )
    if not dirs:
        raise TaskFormatError(rounds_root, None, "a task needs at least one round (rounds/01)")
    for expected, d in enumerate(dirs, start=1):
        if int(d.name) != expected:
            raise TaskFormatError(d, None, f"round directories have a gap: expected {expected:02d}")
    return dirs


def _check_round(
    task_toml: Path,
    d: Path,
    index: int,
    spec: RoundSpec,
    earlier: set[str],
    needs_solution: bool = True,
    pytest_suite: bool = False,
) -> Round:
    instruction_path = d / "instruction.md"
    if not instruction_path.is_file():
        raise TaskFormatError(instruction_path, None, "missing instruction.md")
    instruction = read_text_file(instruction_path)
    if not instruction.strip():
        raise TaskFormatError(instruction_path, None, "instruction.md is empty")
    sol = d / "solution"
    if needs_solution and not (sol / "solve.sh").is_file() and not (sol / "files").is_dir():
        raise TaskFormatError(sol, None, "missing reference solution (solve.sh or files/)")
    for n, rel in enumerate(spec.retires, start=1):
        if rel not in earlier:
            raise TaskFormatError(
                task_toml,
                f"rounds[{index}].retires[{n}]",
                f"{rel!r} names no test file active before round {index}",
            )
    if (d / "tests").exists() and not (d / "tests").is_dir():
        raise TaskFormatError(d / "tests", None, "is a file: a round's tests/ is a folder")
    tests = tuple(_files_under(d / "tests"))
    if (d / "tests").is_dir() and not tests and needs_solution:
        raise TaskFormatError(
            d / "tests",
            None,
            "is empty: add the round's tests, or remove the folder (a round without new "
            "tests runs the earlier rounds' tests again)",
        )
    if pytest_suite:
        _check_collected(d, tests)
    return Round(index=index, dir=d, instruction=instruction, spec=spec, test_files=tests)


def _collects_by_name(cfg: TaskFile) -> bool:
    """Pytest suites that keep pytest's default file names (no ``python_files`` override)."""
    return cfg.verifier.kind == "pytest" and not any(
        "python_files" in a for a in cfg.verifier.pytest_args
    )


def load_task(path: Path | str) -> Task:
    """Load and validate one task directory (any unreadable file is a TaskFormatError)."""
    try:
        return _load_task(path)
    except TaskFormatError:
        raise
    except OSError as e:  # a file the checks above did not read: hashed for the digest
        where = e.filename or path
        raise TaskFormatError(where, None, f"cannot read: {e.strerror or e}") from None


def _check_links(root: Path) -> None:
    """No symlink may lead out of the task folder (or nowhere).

    Task files are hashed, copied into sandboxes and shown to agents: a link to
    ``/etc`` or to the author's home would carry host files into every attempt.
    """
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                continue
            rel = p.relative_to(root).as_posix()
            target = os.readlink(p)
            if not p.exists():
                raise TaskFormatError(p, None, f"symlink to {target!r} leads nowhere")
            if not p.resolve().is_relative_to(root):
                raise TaskFormatError(
                    p,
                    None,
                    f"symlink to {target!r} leaves the task folder (copy the file "
                    f"into {rel.rsplit('/', 1)[0] if '/' in rel else 'the task'} instead)",
                )


def _check_ids(task_toml: Path, cfg: TaskFile) -> None:
    """Check ids key results and reports: two checks of one list with one id would merge."""
    groups = [("checks", cfg.checks)]
    groups += [(f"rounds[{i}].checks", r.checks) for i, r in enumerate(cfg.rounds, start=1)]
    for where, checks in groups:
        seen: dict[str, int] = {}
        for n, c in enumerate(checks, start=1):
            if c.id in seen:
                raise TaskFormatError(
                    task_toml,
                    f"{where}[{n}].id",
                    f"{c.id!r} is a duplicate of {where}[{seen[c.id]}]",
                )
            seen[c.id] = n


def _check_collected(d: Path, tests: tuple[str, ...]) -> None:
    """A round whose new Python test files pytest never collects verifies nothing: the
    oracle would "pass" it. Support modules (conftest.py, __init__.py) and data are fine."""
    modules = [p for p in tests if p.endswith(".py")]
    if any(is_test_module(p) for p in modules):
        return
    ignored = [p for p in modules if p.rsplit("/", 1)[-1] not in ("conftest.py", "__init__.py")]
    if ignored or (tests and d.name == "01"):  # round 1 must bring a test pytest runs
        names = ", ".join((ignored or list(tests))[:5])
        raise TaskFormatError(
            d / "tests",
            None,
            f"pytest collects none of the round's new test files ({names}): "
            "name them test_*.py or *_test.py",
        )


def _check_suite(task_toml: Path, cfg: TaskFile, rnd: Round, active: set[str]) -> None:
    """The cumulative suite of a round as the verifier will run it: the script verifier's
    entry point is in it, and pytest can import every test module of it."""
    kind = cfg.verifier.kind
    if kind == "script" and cfg.verifier.script not in active:
        raise TaskFormatError(
            task_toml,
            "verifier.script",
            f"{cfg.verifier.script!r} is not among the tests of rounds 01..{rnd.index:02d} "
            f"(put it in {rnd.tests_dir.relative_to(task_toml.parent)}/)",
        )
    if kind != "pytest" or any("import-mode=importlib" in a for a in cfg.verifier.pytest_args):
        return
    clash = basename_clash(active)
    if clash is not None:
        a, b = clash
        raise TaskFormatError(
            rnd.tests_dir,
            None,
            f"test modules {a} and {b} (active in round {rnd.index}) share one basename: "
            "pytest stops with 'import file mismatch' (rename one, or add __init__.py to "
            "both folders)",
        )


def _check_files(root: Path, cfg: TaskFile) -> None:
    """Scripts bash can run; Python test files pytest can import (see ``_authoring``)."""
    rounds_root = root / "rounds"
    scripts = [p for p in rounds_root.rglob("*") if "__pycache__" not in p.parts]
    try:
        check_scripts(scripts)
        if cfg.verifier.kind != "pytest":
            return
        for p in sorted(rounds_root.glob("*/tests/**/*.py")):
            if p.is_file() and "__pycache__" not in p.parts:
                check_python(p, read_text_file(p), is_test_module(p.name))
    except AuthoringError as e:
        raise TaskFormatError(e.file, None, e.message) from None


def _load_task(path: Path | str) -> Task:
    root = Path(path).resolve()
    if not root.is_dir():
        raise TaskFormatError(root, None, "not a directory")
    _check_links(root)
    task_toml = root / "task.toml"
    cfg = _parse_task_file(task_toml)
    _check_ids(task_toml, cfg)
    dirs = _round_dirs(root)
    if cfg.rounds and len(cfg.rounds) != len(dirs):
        raise TaskFormatError(
            task_toml,
            "rounds",
            f"{len(cfg.rounds)} [[rounds]] entries but {len(dirs)} round directories",
        )
    if not cfg.rounds and len(dirs) > 1:
        raise TaskFormatError(
            task_toml,
            "rounds",
            f"no [[rounds]] tables: a task of {len(dirs)} rounds needs one per round folder "
            "(in order), with its title, change_types and retires",
        )
    specs = list(cfg.rounds) or [RoundSpec() for _ in dirs]
    rounds: list[Round] = []
    active: set[str] = set()
    for i, (d, spec) in enumerate(zip(dirs, specs, strict=True), start=1):
        r = _check_round(
            task_toml, d, i, spec, active, cfg.verifier.kind != "none", _collects_by_name(cfg)
        )
        rounds.append(r)
        active -= set(spec.retires)
        active |= set(r.test_files)
        if i == 1 and not r.test_files and cfg.verifier.kind != "none":
            raise TaskFormatError(d / "tests", None, "round 1 must introduce at least one test")
        _check_suite(task_toml, cfg, r, active)
    _check_files(root, cfg)
    ws = root / "workspace"
    return Task(
        path=root,
        config=cfg,
        rounds=tuple(rounds),
        digest=task_digest(root),
        workspace_dir=ws,
    )


def discover_tasks(paths: Iterable[Path | str]) -> list[Path]:
    """Expand each path to task directories: a task itself, or a folder of tasks."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "task.toml").is_file():
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(c for c in p.iterdir() if (c / "task.toml").is_file()))
        elif p.name == "task.toml" and p.is_file():
            raise TaskFormatError(
                p, None, f"pass the task's folder ({p.parent}), not its task.toml"
            )
        elif p.exists():
            raise TaskFormatError(p, None, "not a task folder (a file, not a directory)")
        else:
            raise TaskFormatError(p, None, "no such task or task folder")
    return found


def load_tasks(paths: Iterable[Path | str]) -> list[Task]:
    tasks = [load_task(p) for p in discover_tasks(paths)]
    names: dict[str, Path] = {}
    for t in tasks:
        if t.name in names:
            raise TaskFormatError(
                t.path / "task.toml", "task.name", f"duplicate of {names[t.name]}"
            )
        names[t.name] = t.path
    return tasks


def library_path() -> Path:
    """The bundled task library shipped as package data."""
    return Path(__file__).parent / "library"
