"""Rules over what the round changed: the workspace diff between the round's start and end
snapshots, and the commits made during the round."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from typing import Any

from evoround.results import Evidence
from evoround.verifiers import parse_ast
from evoround.verifiers.checklist._model import RoundEvidence, match_any
from evoround.verifiers.checklist._registry import (
    FAIL,
    NA,
    PASS,
    RuleParamError,
    Verdict,
    cut,
    param,
    param_globs,
    param_regex,
    rule,
)


@rule("files_unchanged", "diff")
def files_unchanged(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """No file matching ``glob`` (one or a list) was added, modified or deleted."""
    assert ev.diff is not None
    globs = param_globs(p, "glob")
    hits = [Evidence(kind="file", path=f) for f in ev.diff.changed if match_any(f, globs)]
    return (
        Verdict(FAIL, f"{len(hits)} protected file(s) changed", hits)
        if hits
        else Verdict(PASS, f"{len(ev.diff.changed)} change(s), none protected")
    )


@rule("changes_within", "diff")
def changes_within(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Every changed file matches one of ``glob`` (stay inside the allowed area)."""
    assert ev.diff is not None
    globs = param_globs(p, "glob")
    if not ev.diff.changed:
        return Verdict(NA, "no file changed")
    out = [Evidence(kind="file", path=f) for f in ev.diff.changed if not match_any(f, globs)]
    return (
        Verdict(FAIL, f"{len(out)} change(s) outside {globs}", out)
        if out
        else Verdict(PASS, "all changes inside the allowed area")
    )


@rule("max_files_changed", "diff")
def max_files_changed(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """At most ``max`` files changed (optionally only those matching ``glob``)."""
    assert ev.diff is not None
    limit = int(param(p, "max"))
    globs = param_globs(p, "glob", "**")
    files = [f for f in ev.diff.changed if match_any(f, globs)]
    if len(files) > limit:
        return Verdict(
            FAIL,
            f"{len(files)} files changed > {limit}",
            [Evidence(kind="file", path=f) for f in files],
        )
    return Verdict(PASS, f"{len(files)} files changed <= {limit}")


@rule("changed_together", "diff")
def changed_together(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """When a file matching ``when`` changes, a file matching ``then`` changes too.

    ``exclude`` (globs) removes files from the ``when`` side (e.g. tests).
    """
    assert ev.diff is not None
    when, then = param_globs(p, "when"), param_globs(p, "then")
    exclude = param_globs(p, "exclude", [])
    trig = [f for f in ev.diff.changed if match_any(f, when) and not match_any(f, exclude)]
    if not trig:
        return Verdict(NA, f"no changed file matches {when}")
    partner = [f for f in ev.diff.changed if match_any(f, then)]
    if partner:
        return Verdict(
            PASS,
            f"{len(partner)} matching {then} changed too",
            [Evidence(kind="file", path=f) for f in partner[:5]],
        )
    return Verdict(
        FAIL,
        f"{len(trig)} file(s) changed without any {then}",
        [Evidence(kind="file", path=f) for f in trig[:10]],
    )


@rule("tests_added", "diff")
def tests_added(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Source changes come with test changes (``source``/``tests`` globs have defaults)."""
    q = {
        "when": p.get("source", ["**/*.py"]),
        "then": p.get("tests", ["tests/**", "**/test_*.py", "**/*_test.py"]),
        "exclude": p.get("tests", ["tests/**", "**/test_*.py", "**/*_test.py"]),
    }
    return changed_together(q, ev)


@rule("pattern_absent", "diff")
def pattern_absent(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """No added line of a changed file matching ``glob`` matches ``pattern`` (regex)."""
    assert ev.diff is not None
    rx = param_regex(p, "pattern")
    globs = param_globs(p, "glob", "**")
    files = [f for f in ev.diff.added + ev.diff.modified if match_any(f, globs)]
    if not files:
        return Verdict(NA, f"no changed file matches {globs}")
    hits = [
        Evidence(kind="file", path=f"{f}:{n}", excerpt=cut(line))
        for f in files
        for n, line in ev.diff.added_lines(f)
        if rx.search(line)
    ]
    return (
        Verdict(FAIL, f"{len(hits)} line(s) match {rx.pattern!r}", hits[:20])
        if hits
        else Verdict(PASS, f"{len(files)} file(s) clean")
    )


@rule("file_naming", "diff")
def file_naming(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Added files matching ``glob`` have a base name matching ``pattern``."""
    assert ev.diff is not None
    rx = param_regex(p, "pattern")
    files = [f for f in ev.diff.added if match_any(f, param_globs(p, "glob", "**"))]
    if not files:
        return Verdict(NA, "no added file in scope")
    bad = [Evidence(kind="file", path=f) for f in files if not rx.fullmatch(f.rsplit("/", 1)[-1])]
    return (
        Verdict(FAIL, f"{len(bad)} badly named file(s)", bad)
        if bad
        else Verdict(PASS, f"{len(files)} file(s) well named")
    )


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _py_defs(src: str | None, kind: str) -> dict[str, tuple[int, bool]]:
    """name -> (line, has docstring) of module-level and class-level defs of ``kind``."""
    if not src:
        return {}
    try:
        tree = parse_ast(src)
    except SyntaxError:
        return {}
    kinds: tuple[type[_Def], ...] = {
        "function": (ast.FunctionDef, ast.AsyncFunctionDef),
        "class": (ast.ClassDef,),
        "any": (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef),
    }[kind]
    out: dict[str, tuple[int, bool]] = {}
    for node in ast.walk(tree):
        if isinstance(node, kinds):
            out[node.name] = (node.lineno, ast.get_docstring(node) is not None)
    return out


@rule("identifier_naming", "diff")
def identifier_naming(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """New Python functions/classes (``kind``) in files matching ``glob`` match ``pattern``."""
    assert ev.diff is not None
    rx = param_regex(p, "pattern")
    kind = param(p, "kind", "function", str)
    if kind not in ("function", "class", "any"):
        raise RuleParamError("kind must be function, class or any")
    new: list[tuple[str, str, int]] = []
    for f in ev.diff.added + ev.diff.modified:
        if f.endswith(".py") and match_any(f, param_globs(p, "glob", "**/*.py")):
            old = _py_defs(ev.diff.text_before(f), kind)
            new += [
                (f, n, ln)
                for n, (ln, _) in _py_defs(ev.diff.text_after(f), kind).items()
                if n not in old
            ]
    if not new:
        return Verdict(NA, f"no new {kind} definitions")
    bad = [
        Evidence(kind="file", path=f"{f}:{ln}", excerpt=n)
        for f, n, ln in new
        if not rx.fullmatch(n)
    ]
    return (
        Verdict(FAIL, f"{len(bad)} name(s) break {rx.pattern!r}", bad)
        if bad
        else Verdict(PASS, f"{len(new)} new name(s) conform")
    )


@rule("docstrings_required", "diff")
def docstrings_required(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Public functions and classes in changed files matching ``glob`` have docstrings."""
    assert ev.diff is not None
    globs = param_globs(p, "glob", "**/*.py")
    exclude = param_globs(p, "exclude", ["tests/**", "**/test_*.py"])
    files = [
        f
        for f in ev.diff.added + ev.diff.modified
        if f.endswith(".py") and match_any(f, globs) and not match_any(f, exclude)
    ]
    if not files:
        return Verdict(NA, "no changed Python file in scope")
    bad = [
        Evidence(kind="file", path=f"{f}:{ln}", excerpt=n)
        for f in files
        for n, (ln, doc) in _py_defs(ev.diff.text_after(f), "any").items()
        if not n.startswith("_") and not doc
    ]
    return (
        Verdict(FAIL, f"{len(bad)} public definition(s) without docstring", bad[:20])
        if bad
        else (Verdict(PASS, f"{len(files)} file(s) documented"))
    )


@rule("stdlib_only", "diff")
def stdlib_only(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Changed Python files import only the standard library, local modules and ``allow``."""
    assert ev.diff is not None
    allow = set(param(p, "allow", ["pytest"]))
    local = {f.split("/", 1)[0].removesuffix(".py") for f in ev.diff.after}
    files = [f for f in ev.diff.added + ev.diff.modified if f.endswith(".py")]
    if not files:
        return Verdict(NA, "no changed Python file")
    bad: list[Evidence] = []
    for f in files:
        try:
            tree = parse_ast(ev.diff.text_after(f) or "")
        except SyntaxError:
            continue
        for node, m in _absolute_imports(tree):
            top = m.split(".")[0]
            if top not in sys.stdlib_module_names and top not in local and top not in allow:
                bad.append(Evidence(kind="file", path=f"{f}:{node.lineno}", excerpt=m))
    return (
        Verdict(FAIL, f"{len(bad)} third-party import(s)", bad)
        if bad
        else Verdict(PASS, f"{len(files)} file(s) stdlib-only")
    )


def _absolute_imports(tree: ast.Module) -> Iterable[tuple[ast.Import | ast.ImportFrom, str]]:
    """(statement, module) of every absolute import anywhere in the file, in walk order
    (a relative import is a local module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node, node.module


# ---- commits ----------------------------------------------------------------------------


@rule("commit_message", "commits")
def commit_message(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Every new commit's subject matches ``pattern`` (e.g. Conventional Commits)."""
    assert ev.commits is not None
    rx = param_regex(p, "pattern")
    if not ev.commits:
        return Verdict(NA, "no new commit this round")
    bad = [Evidence(kind="commit", excerpt=cut(m)) for m in ev.commits if not rx.search(m)]
    return (
        Verdict(FAIL, f"{len(bad)} commit message(s) break {rx.pattern!r}", bad)
        if bad
        else Verdict(PASS, f"{len(ev.commits)} commit(s) conform")
    )
