"""Making a test's equality checks wrong on purpose, for its failing twin.

A twin must fail on every honest run and pass when the code under test returns results that
compare equal to anything. So only the *expected* side of a check is changed, and only where
the test's own text says which side that is:

- a literal (numbers, strings, bytes, ``True``/``False``/``None`` and containers of them),
  a local name bound once to a literal and used only as a compared operand, and
  ``approx(<literal>)`` are replaced by a different literal written inline (no helper to
  give the twin away);
- a parameter whose every ``pytest.mark.parametrize`` value is a literal is passed through
  the run's helper (a different value of the same builtin type);

whichever side of ``assert L == R`` (or of ``self.assertEqual(first, second)`` and friends in
a genuine ``unittest.TestCase``) it stands on, so ``assert 5 == add(2, 3)`` is covered too.
An always-equal result then passes the changed check, an honest result cannot.

When no certainly-run check has a known expected side, each check asks the helper whether
either side equals the other one changed (``assert L == R`` becomes
``assert helper(L, R) == True``): an always-equal result passes that on either side, an
honest pair of values cannot. Nothing is changed against a side that looks like a matcher
(``ANY``, ``approx``, ``IsInt()``, an object built from a class right there), which an honest
test may find equal to the changed value too: with a matcher on the right only the right
side is changed, with one on the left nothing is.
"""

from __future__ import annotations

import ast
import math
import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from evoround.verifiers._pyast import parse as parse_ast

EQUAL_METHODS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "failUnlessEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertCountEqual",
        "assertAlmostEqual",
        "assertAlmostEquals",
        "failUnlessAlmostEqual",
    }
)
"""unittest's two-argument equality checks: changed like ``assert first == second``."""
TRUTH_METHODS = frozenset({"assertTrue", "failUnless", "assert_"})
_ALMOST = frozenset({"assertAlmostEqual", "assertAlmostEquals", "failUnlessAlmostEqual"})
_KEYWORDS = {"msg", "seq_type"}
_MATCHERS = frozenset({"ANY", "approx", "call", "mock", "Mock", "MagicMock", "sentinel"})
"""Names whose presence on the left of a check means it may honestly equal anything."""


class _No:
    """No usable value (a literal that cannot be changed, or an expression that is none)."""


NO = _No()


def literal_value(node: ast.AST) -> object:
    """The value of a plain literal, or :data:`NO` (finite numbers, text, bytes, booleans,
    ``None`` and lists, tuples, dicts and sets of them)."""
    try:
        value = ast.literal_eval(node)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO
    return value if _plain(value) else NO


def _plain(v: object) -> bool:
    if v is None or type(v) in (bool, int, str, bytes):
        return True
    if type(v) in (float, complex):
        return all(math.isfinite(x) for x in (complex(v).real, complex(v).imag))  # type: ignore[arg-type]
    if type(v) in (list, tuple, set, frozenset):
        return all(_plain(x) for x in v)  # type: ignore[attr-defined]
    if type(v) is dict:
        return all(_plain(k) and _plain(x) for k, x in v.items())  # type: ignore[attr-defined]
    return False


def alter(v: object, rng: random.Random) -> object:
    """A literal value that no honest result can equal, right or wrong: a wrong answer is
    often near the right one (off by one, a flipped flag, a letter), so numbers move by a
    large random amount (beyond any ``places`` or ``approx`` tolerance), text gains a random
    token, a container changes one element that way or gains a token; ``True``, ``False``
    and ``None`` have no such value (:data:`NO`: the check is then left to the helper)."""
    t = type(v)
    if v is None or t is bool:
        return NO
    if t in (int, float, complex):
        sign = -1 if t is not complex and v < 0 else 1  # type: ignore[operator]
        new = v + sign * (rng.randrange(10**6, 10**9) + abs(v))  # type: ignore[operator]
        if t is float and (not math.isfinite(new) or new == v):
            return NO
        return new
    if t is str:
        return _alter_text(v, rng)  # type: ignore[arg-type]
    if t is bytes:
        return _alter_text(v.decode("latin-1"), rng).encode("latin-1")  # type: ignore[attr-defined]
    if t in (list, tuple):
        items = list(v)  # type: ignore[call-overload]
        for i in rng.sample(range(len(items)), len(items)):
            new = alter(items[i], rng)
            if new is not NO:
                items[i] = new
                return t(items)
        return t([*items, _token(rng)])
    if t is dict:
        d = dict(v)  # type: ignore[call-overload]
        for k in rng.sample(list(d), len(d)):
            new = alter(d[k], rng)
            if new is not NO:
                d[k] = new
                return d
        d[_token(rng)] = _token(rng)
        return d
    if t in (set, frozenset):
        return t({*v, _token(rng)})  # type: ignore[misc]
    return NO


def _token(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=10))


def _alter_text(s: str, rng: random.Random) -> str:
    return s + "_" + _token(rng)


def value_node(v: object) -> ast.expr:
    """An expression that evaluates to ``v`` (its ``repr``: every value :func:`alter` makes
    has a valid one)."""
    return parse_ast(repr(v), mode="eval").body


def _is_approx(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return isinstance(func, ast.Name | ast.Attribute) and (
        getattr(func, "id", None) == "approx" or getattr(func, "attr", None) == "approx"
    )


def _looks_like_matcher(node: ast.AST) -> bool:
    """A side an honest test may compare equal to more than one value: a known wildcard or
    matcher, or an object built from a class right there (``IsPositive()``, ``Close(1.0)``)."""
    if isinstance(node, ast.Call):
        callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None) or ""
        if callee[:1].isupper():
            return True
    for n in ast.walk(node):
        name = getattr(n, "id", None) or getattr(n, "attr", None)
        if name in _MATCHERS:
            return True
        if isinstance(n, ast.Call):
            fname = getattr(n.func, "id", None) or getattr(n.func, "attr", None) or ""
            if fname[:2] in ("Is", "Ha") and fname[2:3].isupper():  # dirty-equals style
                return True
    return False


@dataclass(frozen=True)
class Scope:
    """What a test's text says about its names."""

    bound: dict[str, object] = field(default_factory=dict)
    """Local names bound once to a literal and read only as compared operands."""
    params: frozenset[str] = frozenset()
    """Parameters whose every parametrize value is a literal (never rebound in the body)."""
    unittest_self: str | None = None
    """The name of ``self`` in a method of a genuine ``unittest.TestCase`` whose assertion
    methods are unittest's own (None: ``self.assert*`` calls are left alone)."""


@dataclass
class _Site:
    """One equality check: how to change it if its expected side is known ("sure") or by
    the right-side convention ("guess"), and whether it certainly runs."""

    top: bool
    sure: Callable[[], None] | None
    guess: Callable[[], None] | None


def own_nodes(fn: ast.FunctionDef) -> Iterable[ast.AST]:
    """The nodes of a function's own body (not of nested functions, lambdas or classes)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                todo.append(child)


def _pairs(node: ast.AST, scope: Scope) -> tuple[ast.AST, list[ast.expr], str] | None:
    """(holder, [left, right], kind) of an equality check: ``assert L == R``,
    ``self.assertTrue(L == R)`` or ``self.assertEqual(L, R, ...)`` (kind: "almost" for the
    approximate ones, "eq" otherwise). The holder's operands are replaced in place."""
    if isinstance(node, ast.Assert):
        cmp = node.test
    elif (
        scope.unittest_self
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == scope.unittest_self
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
    ):
        name = node.func.attr
        if name in TRUTH_METHODS and node.args:
            cmp = node.args[0]
        elif name in EQUAL_METHODS and len(node.args) >= 2:
            kws = {k.arg for k in node.keywords}
            if name in _ALMOST:
                places = [k.value for k in node.keywords if k.arg == "places"] + node.args[2:3]
                if "delta" in kws or not all(
                    type(literal_value(p)) is int and literal_value(p) >= 0  # type: ignore[operator]
                    for p in places
                ):
                    return None
                return (node, node.args, "almost")
            if kws - _KEYWORDS or len(node.args) > 3:
                return None
            return (node, node.args, "eq")
        else:
            return None
    else:
        return None
    if (
        isinstance(cmp, ast.Compare)
        and len(cmp.ops) == 1
        and isinstance(cmp.ops[0], ast.Eq)
        and len(cmp.comparators) == 1
    ):
        return (cmp, [cmp.left, cmp.comparators[0]], "eq")
    return None


def _replace(holder: ast.AST, index: int, new: ast.expr) -> None:
    if isinstance(holder, ast.Compare):
        if index == 0:
            holder.left = new
        else:
            holder.comparators[0] = new
    else:
        holder.args[index] = new  # type: ignore[attr-defined]


def _expected(
    node: ast.expr, scope: Scope, kind: str, helper: str, rng: random.Random
) -> ast.expr | None:
    """``node`` changed into a certainly different expected value, or None when the text does
    not say that ``node`` is an expectation."""
    number = (int, float)
    value: object = NO
    if isinstance(node, ast.Name) and node.id in scope.bound:
        value = scope.bound[node.id]
    elif isinstance(node, ast.Name) and node.id in scope.params:
        return ast.Call(ast.Name(helper, ast.Load()), [node], [])
    elif _is_approx(node) and kind == "eq":
        call = node  # approx(<literal>) with pytest's default tolerances only
        assert isinstance(call, ast.Call)
        if len(call.args) == 1 and not call.keywords:
            inner = literal_value(call.args[0])
            new = alter(inner, rng) if inner is not NO else NO
            if new is not NO:
                return ast.Call(call.func, [value_node(new)], [])
        return None
    else:
        value = literal_value(node)
    if value is NO or (kind == "almost" and type(value) not in number):
        return None
    new = alter(value, rng)
    return None if new is NO else value_node(new)


def rewrite_checks(
    fn: ast.FunctionDef, scope: Scope, helper: str, rng: random.Random
) -> tuple[bool, bool]:
    """Change the equality checks of ``fn`` (a copy) in place; see the module docstring.

    Returns (the helper is used, a certainly-run check was changed): without the latter the
    caller ends the body with a failing assertion of its own."""
    top = {id(s) for s in fn.body} | {id(s.value) for s in fn.body if isinstance(s, ast.Expr)}
    sites: list[_Site] = []
    used = [False]
    for node in list(own_nodes(fn)):
        found = _pairs(node, scope)
        if found is None:
            continue
        holder, operands, kind = found
        left, right = operands[0], operands[1]
        sure = None
        for index, side, other in ((1, right, left), (0, left, right)):
            if _looks_like_matcher(other):  # it may honestly equal the changed value too
                continue
            new = _expected(side, scope, kind, helper, rng)
            if new is not None:
                uses = isinstance(new, ast.Call) and getattr(new.func, "id", None) == helper

                def sure(h=holder, i=index, n=new, u=uses) -> None:  # type: ignore[misc]
                    _replace(h, i, n)
                    used[0] = used[0] or u

                break
        guess = None
        if kind == "eq" and not _looks_like_matcher(left) and not _looks_like_matcher(right):

            def guess(h=holder, lt=left, r=right) -> None:  # type: ignore[misc]
                _replace(h, 0, ast.Call(ast.Name(helper, ast.Load()), [lt, r], []))
                _replace(h, 1, ast.Constant(True))
                used[0] = True

        elif not _looks_like_matcher(left):

            def guess(h=holder, r=right) -> None:  # type: ignore[misc]
                _replace(h, 1, ast.Call(ast.Name(helper, ast.Load()), [r], []))
                used[0] = True

        sites.append(_Site(id(node) in top, sure, guess))
    if any(s.top and s.sure for s in sites):
        for s in sites:  # checks with an unknown expected side stay as they are
            if s.sure:
                s.sure()
        return used[0], True
    for s in sites:
        change = s.sure or s.guess
        if change:
            change()
    return used[0], any(s.top and (s.sure or s.guess) for s in sites)


def bound_literals(fn: ast.FunctionDef, scope: Scope) -> dict[str, object]:
    """Local names assigned once, at the top of the body, from a literal, and read only as
    an operand of an equality check: inlining the literal there changes nothing."""
    operands: set[int] = set()
    for node in ast.walk(fn):
        found = _pairs(node, scope)
        if found:
            operands.update(id(x) for x in found[1][:2])
    stores: dict[str, int] = {}
    loads: dict[str, bool] = {}
    declared: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads[node.id] = loads.get(node.id, True) and id(node) in operands
            else:
                stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.arg):
            declared.add(node.arg)
    out: dict[str, object] = {}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            name = stmt.targets[0].id
            value = literal_value(stmt.value)
            if (
                value is not NO
                and stores.get(name) == 1
                and loads.get(name)
                and name not in declared
            ):
                out[name] = value
    return out


def literal_params(decorators: Iterable[ast.expr], fn: ast.FunctionDef) -> frozenset[str]:
    """Parameters of ``fn`` that every ``parametrize`` case (of ``decorators``: the test's
    own and its class's) sets to a literal, and that the body never rebinds."""
    out: set[str] = set()
    for d in decorators:
        if not (isinstance(d, ast.Call) and ast.unparse(d.func).endswith("mark.parametrize")):
            continue
        kw = {k.arg: k.value for k in d.keywords}
        if "indirect" in kw or None in kw:
            continue
        names_node = d.args[0] if d.args else kw.get("argnames")
        values_node = d.args[1] if len(d.args) > 1 else kw.get("argvalues")
        raw = literal_value(names_node) if names_node is not None else NO
        if isinstance(raw, str):
            names = [n.strip() for n in raw.split(",") if n.strip()]
        elif isinstance(raw, list | tuple) and all(isinstance(n, str) for n in raw):
            names = list(raw)
        else:
            continue
        if not isinstance(values_node, ast.List | ast.Tuple) or not values_node.elts:
            continue
        ok = [True] * len(names)
        for case in values_node.elts:
            if isinstance(case, ast.Call) and ast.unparse(case.func).endswith("param"):
                vals: list[ast.expr] = list(case.args)
            elif len(names) == 1:
                vals = [case]
            elif isinstance(case, ast.Tuple | ast.List):
                vals = list(case.elts)
            else:
                vals = []
            if len(vals) != len(names) or any(isinstance(v, ast.Starred) for v in vals):
                ok = [False] * len(names)
                break
            for i, v in enumerate(vals):
                ok[i] = ok[i] and literal_value(v) is not NO
        out.update(n for n, good in zip(names, ok, strict=True) if good)
    rebound = {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    rebound |= {
        n for s in ast.walk(fn) if isinstance(s, ast.Global | ast.Nonlocal) for n in s.names
    }
    return frozenset(out - rebound)
