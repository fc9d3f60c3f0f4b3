"""The house rules a next engineer relies on: types are checked, functions are short and
simple, and formatting or type-checking is never switched off without a reason.

Each rule is checked per room (``-k engine`` runs one room's share) so a failure names the
function and its size, and the documented exceptions live in one place: the "Long
functions" section of docs/architecture.md (only for generated or table-like code)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.visitors import Function

from tests.architecture.import_graph import PACKAGE_ROOT, modules

REPO = PACKAGE_ROOT.parent
MAX_FUNCTION_LINES = 80
MAX_COMPLEXITY = 15
TOP_ROOMS = sorted(
    {p.relative_to(PACKAGE_ROOT).parts[0].removesuffix(".py") for p in modules().values()}
)
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[^\]]*\])?(?P<rest>.*)$")
FMT_OFF = re.compile(r"#\s*fmt:\s*(skip|off)\b")


def _files(room: str) -> list[Path]:
    return sorted(
        p
        for p in modules().values()
        if p.relative_to(PACKAGE_ROOT).parts[0].removesuffix(".py") == room
    )


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _documented_exceptions() -> set[str]:
    """``path:function`` entries that docs/architecture.md allows past the limits."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## Long functions", 1)[1] if "## Long functions" in text else ""
    section = section.split("\n## ", 1)[0]
    return {w.strip("`,.;") for w in section.split() if w.startswith("`evoround/")}


def _functions(path: Path) -> list[Function]:
    blocks = cc_visit(path.read_text())
    out: list[Function] = []
    stack = list(blocks)
    while stack:
        block = stack.pop()
        if isinstance(block, Function):
            out.append(block)
        stack.extend(getattr(block, "methods", []))
        stack.extend(getattr(block, "closures", []))
    return out


def oversized(path: Path) -> list[str]:
    """Functions of ``path`` over the line or complexity limit, as readable lines."""
    bad = []
    lines = {
        (n.name, n.lineno): n.end_lineno - n.lineno + 1  # type: ignore[operator]  # end_lineno is set by ast.parse
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for fn in _functions(path):
        length = lines.get((fn.name, fn.lineno), fn.endline - fn.lineno + 1)
        if length > MAX_FUNCTION_LINES or fn.complexity > MAX_COMPLEXITY:
            bad.append(f"{_rel(path)}:{fn.name} ({length} lines, complexity {fn.complexity})")
    return bad


@pytest.mark.parametrize("room", TOP_ROOMS)
def test_functions_are_short_and_simple(room: str) -> None:
    allowed = _documented_exceptions()
    bad = [b for p in _files(room) for b in oversized(p) if b.split(" ")[0] not in allowed]
    assert bad == [], "split into named phases:\n" + "\n".join(bad)


def test_the_size_check_sees_a_long_complex_function(tmp_path: Path) -> None:
    body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(50))
    f = tmp_path / "big.py"
    f.write_text(f"def big(x):\n{body}\n    return -1\n")
    assert oversized_outside(f) == ["big (102 lines, complexity 51)"]


def oversized_outside(path: Path) -> list[str]:
    """``oversized`` for a file outside the repository (names only)."""
    return [
        f"{fn.name} ({fn.endline - fn.lineno + 1} lines, complexity {fn.complexity})"
        for fn in _functions(path)
        if fn.endline - fn.lineno + 1 > MAX_FUNCTION_LINES or fn.complexity > MAX_COMPLEXITY
    ]


@pytest.mark.parametrize("room", TOP_ROOMS)
def test_every_type_ignore_names_its_code_and_reason(room: str) -> None:
    bad = []
    for path in _files(room):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            m = IGNORE.search(line)
            if m and (not m["code"] or not re.match(r"\s*#\s*\w", m["rest"])):
                bad.append(f"{_rel(path)}:{no}: {line.strip()}")
    assert bad == [], "write `# type: ignore[code]  # why`:\n" + "\n".join(bad)


@pytest.mark.parametrize("room", TOP_ROOMS)
def test_formatting_is_not_switched_off_without_a_reason(room: str) -> None:
    """A ``# fmt: skip``/``off`` keeps hand layout only where a comment above says why."""
    bad = []
    for path in _files(room):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if FMT_OFF.search(line) and not (i and lines[i - 1].lstrip().startswith("#")):
                bad.append(f"{_rel(path)}:{i + 1}: {line.strip()}")
    assert bad == [], "\n".join(bad)


def test_no_underscore_name_is_imported_from_another_module() -> None:
    """Private by name means private to its module: what siblings share is public in a
    private module (importing a private *module* from inside its room is fine)."""
    known = set(modules())
    bad = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    private = a.name.startswith("_") and not a.name.startswith("__")
                    if private and f"{node.module}.{a.name}" not in known:
                        bad.append(f"{name}: from {node.module} import {a.name}")
    assert bad == [], "\n".join(bad)


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_types_check() -> None:
    """mypy, as configured in pyproject.toml, finds no error in evoround/."""
    done = _mypy()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_the_type_check_fails_on_a_wrong_type(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def f(x: int) -> str:\n    return x\n\n\ndef g(y):\n    return y\n")
    done = _mypy("--cache-dir", str(tmp_path / "cache"), str(wrong))
    assert done.returncode == 1
    assert 'Incompatible return value type (got "int", expected "str")' in done.stdout
    assert "Function is missing a type annotation" in done.stdout


def _sub_room(module: str) -> str:
    """The deepest package holding ``module`` (a package's door is its own room)."""
    mods = modules()
    if mods[module].name == "__init__.py":
        return module
    return module.rpartition(".")[0]


def test_private_modules_stay_in_their_sub_room() -> None:
    """A private module is imported only by modules of its own folder: a sub-room (say
    ``sandboxes/docker``) reaches its parent's code through a door, not a private file."""
    from tests.architecture.import_graph import graph

    bad = []
    for mod, deps in graph().items():
        for dep in deps:
            private = dep.rpartition(".")[2].startswith("_") and not dep.endswith("__main__")
            if private and _sub_room(dep) != _sub_room(mod):
                bad.append(f"{mod} -> {dep}")
    assert bad == [], "\n".join(sorted(bad))
