"""The package's import graph read from the AST (every import statement, lazy ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "evoround"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


TASK_DATA = ("library", "starter")
"""Folders of ``evoround/tasks/`` that hold tasks (package data), not evoround's code."""


def modules() -> dict[str, Path]:
    return {
        module_name(p): p
        for p in PACKAGE_ROOT.rglob("*.py")
        if not set(TASK_DATA) & set(p.relative_to(PACKAGE_ROOT).parts[:2])
    }


def _resolve(mod: str, names: list[str], known: set[str]) -> set[str]:
    """``from mod import a`` depends on ``mod`` and, where ``a`` is a submodule, on it."""
    out = {mod} if mod in known else set()
    out |= {f"{mod}.{n}" for n in names if f"{mod}.{n}" in known}
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in known:
                        edges[name].add(a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                    mod = f"{base}.{node.module}" if node.module else base
                else:
                    mod = node.module or ""
                edges[name] |= _resolve(mod, [a.name for a in node.names], known)
    for m in edges:
        edges[m].discard(m)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out
