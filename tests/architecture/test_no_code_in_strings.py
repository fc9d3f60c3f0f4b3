"""No program text in string literals: code the verifiers and sandboxes run in another
interpreter lives in real files (``evoround/verifiers/guard/``, ``evoround/sandboxes/*/programs/``,
package data) where ruff, mypy and coverage see
it. A string literal that parses as Python of :data:`MAX_STATEMENTS` statements or more is
code in a string (prose, INI text and short snippets do not parse, or are a statement or
two)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.import_graph import PACKAGE_ROOT, TASK_DATA

REPO = PACKAGE_ROOT.parent
MAX_STATEMENTS = 5
PLACEHOLDER = re.compile(r"@\w+@|(?<!\{)\{\w+\}(?!\})")
"""A template's holes: ``@NAME@`` (``str.replace``) and ``{name}`` (``str.format``)."""
ROOTS = [PACKAGE_ROOT / "verifiers", PACKAGE_ROOT / "sandboxes", PACKAGE_ROOT / "tasks"]


def _text(node: ast.AST) -> str | None:
    """A string literal's text (an f-string's holes as a plain name), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "_"
            for v in node.values
        )
    return None


def _statements(text: str) -> int:
    """Statements of Python in ``text``: as is, as an indented block (a body kept apart from
    its head), and each again as a template (``@NAME@``, ``{name}`` placeholders filled)."""
    filled = PLACEHOLDER.sub("_", text).replace("{{", "{").replace("}}", "}")
    for candidate in (text, filled):
        for head in ("", "if _:\n"):
            try:
                tree = ast.parse(head + candidate)
            except (SyntaxError, ValueError):
                continue
            return sum(isinstance(n, ast.stmt) for n in ast.walk(tree)) - (1 if head else 0)
    return 0


def code_in_strings(source: str) -> list[tuple[int, int]]:
    """(line, statements) of each string literal of ``source`` holding code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        text = _text(node)
        count = _statements(text) if text and "\n" in text else 0
        if count >= MAX_STATEMENTS:
            found.append((node.lineno, count))
    return found


def _files() -> list[Path]:
    """The host-side modules (a program of programs/ may write a test file of its own; the
    tasks' own folders hold tasks, whose tests are data)."""
    return sorted(
        p
        for root in ROOTS
        for p in root.rglob("*.py")
        if p.parent.name != "programs" and not set(TASK_DATA) & set(p.parts)
    )


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_code_in_string_literals(path: Path) -> None:
    bad = code_in_strings(path.read_text())
    assert bad == [], "\n".join(
        f"{path.relative_to(REPO)}:{line}: a string literal holding {n} statements of Python "
        "(move it into a file of evoround/verifiers/guard/ or a programs/ folder)"
        for line, n in bad
    )


def test_the_rule_sees_code_in_a_string() -> None:
    body = "    x = 1\n    if x:\n        y = 2\n    z = 3\n    return x\n"
    source = f'PLUGIN = """\nimport os\n\ndef f():\n{body}"""\nBODY = """{body}"""\n'
    assert code_in_strings(source) == [(1, 7), (11, 5)]


def test_the_rule_sees_code_in_a_template() -> None:
    source = (
        'PLUGIN = """_NONCE = @NONCE@\nimport os\nx = {{1}}\ny = {name}\nz = 2\n"""\n'
        'BODY = """    try:\n        {k} = 1\n        {o} = {a} + {shift}\n    except Exception:\n'
        '        {o} = {{{t}}}\n    return {o}\n"""\n'
    )
    assert code_in_strings(source) == [(1, 5), (7, 5)]


def test_the_rule_spares_prose_and_short_snippets() -> None:
    source = (
        '"""A docstring: it says why.\n\nSee :func:`f` (``x = 1``)."""\n'
        'INI = """[pytest]\\naddopts = -q\\n"""\n'
        'SNIPPET = "try:\\n    import x\\nexcept BaseException:\\n    pass"\n'
    )
    assert code_in_strings(source) == []


GUARD = PACKAGE_ROOT / "verifiers" / "guard"
PROGRAMS = sorted((PACKAGE_ROOT / "sandboxes").glob("*/programs"))


def test_the_in_sandbox_programs_are_linted_and_formatted() -> None:
    """ruff (rules and format of pyproject.toml) passes on the guard room; mypy checks it
    with the package (test_house_rules.test_types_check)."""
    for args in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *args, str(GUARD), *map(str, PROGRAMS)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-1000:]


def test_every_guard_file_is_shipped_and_read_as_is() -> None:
    """Each program the verifiers read is in the guard room, byte for byte, and the package
    data of pyproject.toml ships the room."""
    from evoround.verifiers._programs import program

    names = sorted(p.name for p in GUARD.glob("*.py"))
    assert names == ["pytest_runner.py", "script_plugin.py", "twin_helper.py", "twin_helper_far.py"]
    for name in names:
        assert program(name) == (GUARD / name).read_text()
    assert '"verifiers/guard/*.py"' in (REPO / "pyproject.toml").read_text()


def test_the_twin_helper_templates_share_their_comparing_head() -> None:
    """The two helper forms differ only in how they change a value: their comparing head
    (called with a second value) is the same text in both files."""
    from evoround.verifiers._programs import TEMPLATE_MARKER, program

    heads = {
        program(name)
        .split(TEMPLATE_MARKER, 1)[1]
        .split("\n    TEMP = TOKEN\n")[0]
        .split("\n    try:\n        KIND")[0]
        for name in ("twin_helper.py", "twin_helper_far.py")
    }
    assert len(heads) == 1
    assert "def HELPER(VALUE, *OTHERS):" in heads.pop()


def test_every_sandbox_program_is_shipped_and_read_as_is() -> None:
    """The programs the sandboxes hand to another interpreter are read byte for byte from
    their programs/ folders, which the package data ships."""
    from evoround.programs import program_text

    found = {f"{p.parent.name}/{f.name}" for p in PROGRAMS for f in p.glob("*.py")}
    assert found == {
        "common/bytecode_fill.py",
        "docker/pristine_probe.py",
        "local/seccomp_launch.py",
    }
    for name in found:
        room, file = name.split("/")
        text = program_text(f"evoround.sandboxes.{room}", file)
        assert text == (PACKAGE_ROOT / "sandboxes" / room / "programs" / file).read_text()
    assert '"sandboxes/*/programs/*.py"' in (REPO / "pyproject.toml").read_text()
