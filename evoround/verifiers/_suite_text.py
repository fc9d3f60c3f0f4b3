"""What the harness reads from the task's own suite files on the host (never from the run):
the tests a module certainly defines, the plugins the suite itself names."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from evoround.pyast import parse as parse_ast


def expected_names(source: str) -> set[str]:
    """Test names a module certainly defines: top-level ``test*`` functions and the ``test*``
    methods of top-level ``Test*`` classes without ``__init__`` (pytest's default rules).

    A lower bound read from the task's own file on the host: each of these must come back
    from the run (passed, failed, skipped or under a collection error). Tests that appear
    from nowhere else (inherited, generated) are not required, so there are no false alarms.
    """
    return set(_defined_names(source))


@functools.lru_cache(maxsize=128)
def _defined_names(source: str) -> frozenset[str]:
    """:func:`expected_names`, memoised by text (a job verifies the same files once per
    round, attempt and mode)."""
    try:
        tree = parse_ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    names: set[str] = set()
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, funcs) and node.name.startswith("test"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            body = [n for n in node.body if isinstance(n, funcs)]
            if any(n.name == "__init__" for n in body):
                continue
            names.update(n.name for n in body if n.name.startswith("test"))
    return frozenset(names)


def named_plugins(sources: Iterable[str], args: Iterable[str]) -> set[str]:
    """Plugins the task's own suite asks for: the literal ``pytest_plugins`` of its conftest
    and test files, and ``-p NAME`` in its pytest arguments. A plugin module that lives in
    the workspace (a project testing its own pytest plugin) is then the suite's choice, not
    the code under test registering itself; the twins and controls still stand."""
    out: set[str] = set()
    for source in sources:
        out.update(_plugins_of(source))
    out.update(_p_options(args))
    out.discard("")
    return {n for n in out if not n.startswith("no:")}


@functools.lru_cache(maxsize=128)
def _plugins_of(source: str) -> tuple[str, ...]:
    """:func:`_pytest_plugins` of one file's text (none if it does not parse), memoised."""
    try:
        tree = parse_ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(_pytest_plugins(tree))


def _pytest_plugins(tree: ast.Module) -> list[str]:
    """The names of every top-level literal ``pytest_plugins = ...`` (a string or a list or
    tuple of them) of one file."""
    out: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not any(
            isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets
        ):
            continue
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            continue
        names = [value] if isinstance(value, str) else value
        if isinstance(names, (list, tuple)):
            out.extend(n for n in names if isinstance(n, str))
    return out


def _p_options(args: Iterable[str]) -> list[str]:
    """The plugin names of ``-p NAME`` and ``-pNAME`` options ("" for a trailing ``-p``)."""
    out: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-p":
            out.append(next(it, ""))
        elif a.startswith("-p") and len(a) > 2:
            out.append(a[2:])
    return out
