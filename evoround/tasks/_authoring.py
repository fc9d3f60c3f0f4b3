"""Task-author mistakes that load but cannot verify anything: caught in seconds, one line each.

Each of these once reached a run and was charged to the agent (the oracle itself scored
25 or 50 %): two test modules with one basename (pytest's "import file mismatch"), a
test module that skips itself at module level, a syntax error in a test file, a script
saved with Windows line endings (bash's "set: - : invalid option"). They are properties
of the files alone, so the loader finds them before any sandbox starts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from evoround.pyast import parse as parse_ast

SCRIPT_SUFFIXES = (".sh", ".bash")
"""Files run with bash (solve.sh, test.sh, setup.sh and their helpers)."""


class AuthoringError(ValueError):
    """One mistake in one file (the loader turns it into its TaskFormatError)."""

    def __init__(self, file: Path, message: str) -> None:
        self.file = file
        self.message = message
        super().__init__(f"{file}: {message}")


def check_scripts(paths: Iterable[Path]) -> None:
    """Bash scripts with CRLF line endings fail on their first line with a message that
    names neither the file nor the cause; a script is named for what it is."""
    for p in paths:
        if not p.name.endswith(SCRIPT_SUFFIXES) or not p.is_file():
            continue
        data = p.read_bytes()
        if b"\r\n" in data:
            line = data[: data.index(b"\r\n")].count(b"\n") + 1
            raise AuthoringError(
                p,
                f"Windows line endings (CRLF) from line {line}: bash fails on them "
                "(e.g. 'set: - : invalid option'); save the file with LF line endings "
                "(dos2unix)",
            )


def check_python(path: Path, text: str, test_module: bool) -> None:
    """A Python file of a pytest suite must parse; a test module must not skip itself
    unconditionally at module level (its tests would never run: the round checks nothing)."""
    try:
        tree = parse_ast(text, filename=str(path))
    except SyntaxError as e:
        raise AuthoringError(
            path, f"Python syntax error on line {e.lineno}: {e.msg} (pytest cannot import it)"
        ) from None
    if not test_module:
        return
    for node in tree.body:
        line = _module_skip(node)
        if line is not None:
            raise AuthoringError(
                path,
                f"skips itself at module level (line {line}): none of its tests ever runs, "
                "so it verifies nothing (skip single tests, or delete the file)",
            )


def _is_skip(expr: ast.expr) -> bool:
    """``pytest.skip``, ``pytest.mark.skip`` or a call of either."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    if not isinstance(expr, ast.Attribute) or expr.attr != "skip":
        return False
    owner = expr.value
    if isinstance(owner, ast.Name):
        return owner.id == "pytest"
    return (
        isinstance(owner, ast.Attribute)
        and owner.attr == "mark"
        and isinstance(owner.value, ast.Name)
        and owner.value.id == "pytest"
    )


def _module_skip(node: ast.stmt) -> int | None:
    """The line of an unconditional module-level skip (a conditional one is the author's
    choice: a platform or an optional dependency)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_skip(node.value):
        return node.lineno
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
    ):
        value = node.value
        items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        if any(_is_skip(v) and not _is_call_of(v, "skipif") for v in items):
            return node.lineno
    return None


def _is_call_of(expr: ast.expr, name: str) -> bool:
    func = expr.func if isinstance(expr, ast.Call) else expr
    return isinstance(func, ast.Attribute) and func.attr == name


def basename_clash(active: Iterable[str]) -> tuple[str, str] | None:
    """Two active test modules with one basename in folders that are not packages.

    pytest's default import mode imports a test module by its basename: the second one
    stops collection with "import file mismatch" and every test of it errors."""
    files = set(active)
    packages = {p.rsplit("/", 1)[0] for p in files if p.endswith("/__init__.py")}
    seen: dict[str, str] = {}
    for rel in sorted(files):
        name = rel.rsplit("/", 1)[-1]
        if not (name.startswith("test_") or name.endswith("_test.py")) or not name.endswith(".py"):
            continue
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if folder in packages:
            continue
        if name in seen:
            return seen[name], rel
        seen[name] = rel
    return None


def size_message(size: int, limit: int) -> str:
    """Exact sizes: "1.0 MB ... at most 1 MB" hides that the file is 13 bytes over."""
    return (
        f"is {size:,} bytes: a task's text file is at most {limit:,} bytes "
        f"({size - limit:,} over; is it the right file?)"
    )


__all__ = [
    "AuthoringError",
    "basename_clash",
    "check_python",
    "check_scripts",
    "size_message",
]
