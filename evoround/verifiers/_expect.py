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

from evoround.pyast import parse as parse_ast

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
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO
    return value if _plain(value) else NO


def _plain(v: object) -> bool:
    """Exact builtin types only (``type(v)``, not ``isinstance``): a subclass may compare
    or print in its own way. The ``isinstance`` tests repeat the type test for the checker."""
    t = type(v)
    if v is None or t in (bool, int, str, bytes):
        return True
    if t in (float, complex) and isinstance(v, float | complex):
        return all(math.isfinite(x) for x in (complex(v).real, complex(v).imag))
    if t in (list, tuple, set, frozenset) and isinstance(v, list | tuple | set | frozenset):
        return all(_plain(x) for x in v)
    if t is dict and isinstance(v, dict):
        return all(_plain(k) and _plain(x) for k, x in v.items())
    return False


def alter(
    v: object, rng: random.Random, avoid: frozenset[object] = frozenset(), *, far: bool = False
) -> object:
    """A literal value of the same shape as ``v`` that no honest result can equal, right or
    wrong, or :data:`NO`.

    Same shape, so that a filter on values (a reader that answers only where the expected value
    "looks plausible") cannot tell a twin's expectation from a real one: a number keeps its
    type, sign, digit count, leading and trailing zeros and decimals; text keeps its length,
    and each letter or digit its class (lower, upper, digit), every other character staying.
    Far from ``v`` all the same, since a wrong answer is often near the right one (off by one,
    a flipped flag, a letter, a case): a number's leading significant digit moves by at least
    2 (a one-digit number by at least 3), text changes at least two of its letters and digits;
    a container changes one element that way (or gains a token when none can be). Never a
    value of ``avoid`` (every literal of the task's suite: values a right or wrong answer
    plausibly produces). ``True``, ``False``, ``None``, text with fewer than two letters or
    digits and numbers too large to write out have no such value (:data:`NO`: the check is then
    left to the helper).

    ``far``: the old way instead, for a verifier whose twin evidence does not ask whether the
    original passed (the script verifier's): numbers move by 10^6-10^9 and their own size,
    text gains a random token. No honest result comes near those, but a value filter tells
    them from real expectations."""
    change = (_FAR if far else _ALTERS).get(type(v))
    if change is None:
        return NO
    for _ in range(40):
        new = change(v, rng, avoid, far)
        if new is NO or (new != v and not _hits(new, avoid)):
            return new
    return NO


def suite_values(trees: Iterable[ast.AST]) -> frozenset[object]:
    """Every number, text and bytes constant written in ``trees`` (the suite's files): the
    values its tests expect or feed in, which a right or a wrong answer plausibly produces,
    so a twin's changed value is never one of them (see :func:`alter`)."""
    return frozenset(
        n.value
        for t in trees
        for n in ast.walk(t)
        if isinstance(n, ast.Constant) and type(n.value) in (int, float, complex, str, bytes)
    )


def _hits(new: object, avoid: frozenset[object]) -> bool:
    try:
        return new in avoid
    except TypeError:  # unhashable (a list, a dict): containers are never in ``avoid``
        return False


def _alter_digits(s: str, rng: random.Random) -> str:
    """A digit string of the same length, leading and trailing zeros whose first significant
    digit moves by at least 2 (a lone digit by at least 3; all zeros become one digit of 3-9
    in the last place), the digits between them random (the last significant one nonzero)."""
    core = s.strip("0")
    if not core:
        return s[:-1] + str(rng.randrange(3, 10))
    lead = len(s) - len(s.lstrip("0"))
    gap = 3 if len(s) == 1 else 2
    first = int(core[0])
    digit = rng.choice([d for d in range(1, 10) if abs(d - first) >= gap])
    mid = "".join(rng.choice(string.digits) for _ in core[1:-1])
    last = str(rng.randrange(1, 10)) if len(core) > 1 else ""
    return s[:lead] + str(digit) + mid + last + s[lead + len(core) :]


def _alter_int(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """Never twice ``v`` nor ``v`` plus a number of the suite either: what code that keeps
    state between calls (a total it forgets to reset) plausibly answers on a repeat call."""
    if not isinstance(v, int):
        return NO
    new = (-1 if v < 0 else 1) * int(_alter_digits(str(abs(v)), rng))
    if new == 2 * v or any(type(a) is int and new == v + a for a in avoid):
        return v  # (tried again)
    return new


def _alter_float(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """The digits of ``repr(v)`` changed as an integer's, the point where it was (a whole
    number stays whole: ``2.0`` becomes ``7.0``); none for an exponent form, inf or nan."""
    if not isinstance(v, float) or not math.isfinite(v):
        return NO
    text = repr(abs(v))
    if "e" in text or "." not in text:
        return NO
    whole, frac = text.split(".")
    if frac == "0":
        new = f"{_alter_digits(whole, rng)}.0"
    else:
        digits = _alter_digits(whole + frac, rng)
        new = f"{digits[: len(whole)]}.{digits[len(whole) :]}"
    out = float(new)
    if repr(out) != new:
        return NO
    out = -out if v < 0 else out
    numbers = [a for a in avoid if type(a) in (int, float) and isinstance(a, int | float)]
    if out == 2 * v or any(out == v + a for a in numbers):
        return v  # (tried again: see _alter_int)
    return out


def _alter_complex(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    if not isinstance(v, complex):
        return NO
    real = _alter_float(v.real, rng, avoid, far)
    return NO if not isinstance(real, float) else complex(real, v.imag)


_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits)


def _alter_text(s: str, rng: random.Random) -> str | _No:
    """At least two (up to about half) of the letters and digits of ``s`` replaced by other
    characters of their class; :data:`NO` with fewer than two."""
    spots = [i for i, c in enumerate(s) if c.isascii() and c.isalnum()]
    if len(spots) < 2:
        return NO
    chars = list(s)
    for i in rng.sample(spots, rng.randint(2, max(2, len(spots) // 2))):
        pool = next(k for k in _CLASSES if chars[i] in k)
        chars[i] = rng.choice(pool.replace(chars[i], ""))
    return "".join(chars)


def _alter_str(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    return _alter_text(v, rng) if isinstance(v, str) else NO


def _alter_bytes(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    if not isinstance(v, bytes):
        return NO
    new = _alter_text(v.decode("latin-1"), rng)
    return new.encode("latin-1") if isinstance(new, str) else NO


def _alter_sequence(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """One element (in random order) changed, or a token appended when none can be."""
    if not isinstance(v, list | tuple):
        return NO
    items = list(v)
    for i in rng.sample(range(len(items)), len(items)):
        new = alter(items[i], rng, avoid, far=far)
        if new is not NO:
            items[i] = new
            return _same_sequence(v, items)
    return _same_sequence(v, [*items, _token(rng)])


def _same_sequence(v: list[object] | tuple[object, ...], items: list[object]) -> object:
    return tuple(items) if type(v) is tuple else list(items)


def _alter_dict(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """One value (in random key order) changed, or a new token key when none can be."""
    if not isinstance(v, dict):
        return NO
    d = dict(v)
    for k in rng.sample(list(d), len(d)):
        new = alter(d[k], rng, avoid, far=far)
        if new is not NO:
            d[k] = new
            return d
    d[_token(rng)] = _token(rng)
    return d


def _alter_set(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """One element changed into one the set does not hold, or a token added."""
    if not isinstance(v, set | frozenset):
        return NO
    for old in rng.sample(list(v), len(v)):
        new = alter(old, rng, avoid, far=far)
        if new is not NO and not _hits(new, frozenset(v)):
            grown = (v - {old}) | {new}
            return frozenset(grown) if type(v) is frozenset else set(grown)
    grown = {*v, _token(rng)}
    return frozenset(grown) if type(v) is frozenset else grown


_Alter = Callable[[object, random.Random, frozenset[object], bool], object]

_ALTERS: dict[type, _Alter] = {
    int: _alter_int,
    float: _alter_float,
    complex: _alter_complex,
    str: _alter_str,
    bytes: _alter_bytes,
    list: _alter_sequence,
    tuple: _alter_sequence,
    dict: _alter_dict,
    set: _alter_set,
    frozenset: _alter_set,
}
"""How :func:`alter` changes each exact builtin type (``bool`` and ``None`` are absent:
they have no value that every honest result differs from)."""


def _far_real(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    """Away from zero by more than the value itself, so the sign never flips back near it."""
    if not isinstance(v, int | float):
        return NO
    sign = -1 if v < 0 else 1
    new = v + sign * (rng.randrange(10**6, 10**9) + abs(v))
    if type(v) is float and (not math.isfinite(new) or new == v):
        return NO  # too large to move (inf, or the step is lost in rounding)
    return new


def _far_complex(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    return v + (rng.randrange(10**6, 10**9) + abs(v)) if isinstance(v, complex) else NO


def _far_text(v: object, rng: random.Random, avoid: frozenset[object], far: bool) -> object:
    if isinstance(v, bytes):
        return (v.decode("latin-1") + "_" + _token(rng)).encode("latin-1")
    return v + "_" + _token(rng) if isinstance(v, str) else NO


_FAR: dict[type, _Alter] = {
    **_ALTERS,
    int: _far_real,
    float: _far_real,
    complex: _far_complex,
    str: _far_text,
    bytes: _far_text,
}
""":func:`alter` with ``far``: scalars the old way, containers as ever."""


def _token(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=10))


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
    avoid: frozenset[object] = frozenset()
    """Values a changed expectation must never be (every literal of the task's suite)."""
    far: bool = False
    """Changed values the old, far way (see :func:`alter`)."""


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


Pair = tuple[ast.AST, list[ast.expr], str]
"""(holder, [left, right, ...], kind) of one equality check (see :func:`_pairs`)."""


def _pairs(node: ast.AST, scope: Scope) -> Pair | None:
    """(holder, [left, right], kind) of an equality check: ``assert L == R``,
    ``self.assertTrue(L == R)`` or ``self.assertEqual(L, R, ...)`` (kind: "almost" for the
    approximate ones, "eq" otherwise). The holder's operands are replaced in place."""
    if isinstance(node, ast.Assert):
        return _eq_compare(node.test)
    method = _unittest_method(node, scope)
    if method is None:
        return None
    call, name = method
    if name in TRUTH_METHODS and call.args:
        return _eq_compare(call.args[0])
    if name in EQUAL_METHODS and len(call.args) >= 2:
        return _equal_method(call, name)
    return None


def _unittest_method(node: ast.AST, scope: Scope) -> tuple[ast.Call, str] | None:
    """(call, method name) of a plain ``self.<method>(...)`` call in a genuine
    ``unittest.TestCase`` (no ``*args`` or ``**kwargs``, whose operands the text cannot
    tell), else None."""
    if not (
        scope.unittest_self
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == scope.unittest_self
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
    ):
        return None
    return node, node.func.attr


def _equal_method(call: ast.Call, name: str) -> Pair | None:
    """``self.assertEqual(first, second, ...)`` and friends; an approximate one only with
    its default or a literal ``places`` (a ``delta`` or a computed ``places`` could make any
    changed number "almost equal")."""
    kws = {k.arg for k in call.keywords}
    if name in _ALMOST:
        places = [k.value for k in call.keywords if k.arg == "places"] + call.args[2:3]
        if "delta" in kws or not all(_whole_number(p) for p in places):
            return None
        return (call, call.args, "almost")
    if kws - _KEYWORDS or len(call.args) > 3:
        return None
    return (call, call.args, "eq")


def _whole_number(node: ast.expr) -> bool:
    """A literal ``int`` (exactly, not ``bool``) of at least 0."""
    value = literal_value(node)
    return type(value) is int and isinstance(value, int) and value >= 0


def _eq_compare(cmp: ast.expr) -> Pair | None:
    """``L == R`` (one ``==``, nothing chained) as (the comparison, [L, R], "eq")."""
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
    elif isinstance(holder, ast.Call):  # _pairs makes no other holder
        holder.args[index] = new


def _expected(
    node: ast.expr, scope: Scope, kind: str, helper: str, rng: random.Random
) -> ast.expr | None:
    """``node`` changed into a certainly different expected value, or None when the text does
    not say that ``node`` is an expectation."""
    if isinstance(node, ast.Name) and node.id in scope.bound:
        value = scope.bound[node.id]
    elif isinstance(node, ast.Name) and node.id in scope.params:
        return ast.Call(ast.Name(helper, ast.Load()), [node], [])
    elif isinstance(node, ast.Call) and _is_approx(node) and kind == "eq":
        return _changed_approx(node, rng, scope)
    else:
        value = literal_value(node)
    if value is NO or (kind == "almost" and type(value) not in (int, float)):
        return None  # an approximate check compares numbers only
    new = alter(value, rng, scope.avoid, far=scope.far)
    return None if new is NO else value_node(new)


def _changed_approx(call: ast.Call, rng: random.Random, scope: Scope) -> ast.expr | None:
    """``approx(<literal>)`` with pytest's default tolerances only (a tolerance given in the
    text could be wide enough to take in the changed value)."""
    if len(call.args) == 1 and not call.keywords:
        inner = literal_value(call.args[0])
        new = alter(inner, rng, scope.avoid, far=scope.far) if inner is not NO else NO
        if new is not NO:
            return ast.Call(call.func, [value_node(new)], [])
    return None


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
        sure = _sure_change(holder, left, right, kind, scope, helper, rng, used)
        guess = _guessed_change(holder, left, right, kind, helper, used)
        sites.append(_Site(id(node) in top, sure, guess))
    changed = _apply(sites)
    return used[0], changed


def _sure_change(
    holder: ast.AST,
    left: ast.expr,
    right: ast.expr,
    kind: str,
    scope: Scope,
    helper: str,
    rng: random.Random,
    used: list[bool],
) -> Callable[[], None] | None:
    """The change of a check whose expected side the text names (the right side tried
    first), never against a side that may honestly equal the changed value too."""
    for index, side, other in ((1, right, left), (0, left, right)):
        if _looks_like_matcher(other):  # it may honestly equal the changed value too
            continue
        new = _expected(side, scope, kind, helper, rng)
        if new is not None:
            uses = isinstance(new, ast.Call) and getattr(new.func, "id", None) == helper

            def sure(
                h: ast.AST = holder, i: int = index, n: ast.expr = new, u: bool = uses
            ) -> None:
                _replace(h, i, n)
                used[0] = used[0] or u

            return sure
    return None


def _guessed_change(
    holder: ast.AST, left: ast.expr, right: ast.expr, kind: str, helper: str, used: list[bool]
) -> Callable[[], None] | None:
    """The change of a check whose expected side is unknown: the helper compares both sides
    (or, with a matcher on the right, changes the right side); None with a matcher on the
    left."""
    if kind == "eq" and not _looks_like_matcher(left) and not _looks_like_matcher(right):

        def both(h: ast.AST = holder, lt: ast.expr = left, r: ast.expr = right) -> None:
            _replace(h, 0, ast.Call(ast.Name(helper, ast.Load()), [lt, r], []))
            _replace(h, 1, ast.Constant(True))
            used[0] = True

        return both
    if not _looks_like_matcher(left):

        def right_side(h: ast.AST = holder, r: ast.expr = right) -> None:
            _replace(h, 1, ast.Call(ast.Name(helper, ast.Load()), [r], []))
            used[0] = True

        return right_side
    return None


def _apply(sites: list[_Site]) -> bool:
    """Make the changes; True when a certainly-run check was changed.

    When a certainly-run check has a known expected side, only known sides are changed
    (checks with an unknown expected side stay as they are); otherwise every check takes its
    known change, or else its guessed one."""
    if any(s.top and s.sure for s in sites):
        for s in sites:
            if s.sure:
                s.sure()
        return True
    for s in sites:
        change = s.sure or s.guess
        if change:
            change()
    return any(s.top and (s.sure or s.guess) for s in sites)


def bound_literals(fn: ast.FunctionDef, scope: Scope) -> dict[str, object]:
    """Local names assigned once, at the top of the body, from a literal, and read only as
    an operand of an equality check: inlining the literal there changes nothing."""
    stores, loads, declared = _name_uses(fn, _operand_ids(fn, scope))
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


def _operand_ids(fn: ast.FunctionDef, scope: Scope) -> set[int]:
    """The ``id`` of every compared operand (left or right) of every equality check."""
    operands: set[int] = set()
    for node in ast.walk(fn):
        found = _pairs(node, scope)
        if found:
            operands.update(id(x) for x in found[1][:2])
    return operands


def _name_uses(
    fn: ast.FunctionDef, operands: set[int]
) -> tuple[dict[str, int], dict[str, bool], set[str]]:
    """(stores per name, whether every read of a name is a compared operand, the names
    declared ``global``/``nonlocal`` or taken as an argument): what makes a name safe to
    inline."""
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
    return stores, loads, declared


def literal_params(decorators: Iterable[ast.expr], fn: ast.FunctionDef) -> frozenset[str]:
    """Parameters of ``fn`` that every ``parametrize`` case (of ``decorators``: the test's
    own and its class's) sets to a literal, and that the body never rebinds."""
    out: set[str] = set()
    for d in decorators:
        if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("mark.parametrize"):
            out.update(_parametrize_literals(d))
    return frozenset(out - _rebound(fn))


def _parametrize_literals(d: ast.Call) -> list[str]:
    """The argnames of one ``parametrize`` call that every case sets to a literal (none for
    ``indirect``, a ``**kwargs`` or argnames/argvalues the text does not spell out)."""
    kw = {k.arg: k.value for k in d.keywords}
    if "indirect" in kw or None in kw:
        return []
    names_node = d.args[0] if d.args else kw.get("argnames")
    values_node = d.args[1] if len(d.args) > 1 else kw.get("argvalues")
    names = _argnames(names_node)
    if names is None:
        return []
    if not isinstance(values_node, ast.List | ast.Tuple) or not values_node.elts:
        return []
    ok = _literal_columns(values_node.elts, len(names))
    return [n for n, good in zip(names, ok, strict=True) if good]


def _literal_columns(cases: list[ast.expr], count: int) -> list[bool]:
    """For each of ``count`` argument positions: is it a literal in every case? All False
    as soon as one case's arguments cannot be told apart."""
    ok = [True] * count
    for case in cases:
        vals = _case_values(case, count)
        if len(vals) != count or any(isinstance(v, ast.Starred) for v in vals):
            return [False] * count
        for i, v in enumerate(vals):
            ok[i] = ok[i] and literal_value(v) is not NO
    return ok


def _argnames(names_node: ast.expr | None) -> list[str] | None:
    """``"a, b"`` or ``("a", "b")`` as names, or None when not a literal of names."""
    raw = literal_value(names_node) if names_node is not None else NO
    if isinstance(raw, str):
        return [n.strip() for n in raw.split(",") if n.strip()]
    if isinstance(raw, list | tuple) and all(isinstance(n, str) for n in raw):
        return [str(n) for n in raw]
    return None


def _case_values(case: ast.expr, count: int) -> list[ast.expr]:
    """The argument expressions of one case (``pytest.param(...)``, a lone value, or a
    tuple/list of them); empty when the text does not spell them out."""
    if isinstance(case, ast.Call) and ast.unparse(case.func).endswith("param"):
        return list(case.args)
    if count == 1:
        return [case]
    if isinstance(case, ast.Tuple | ast.List):
        return list(case.elts)
    return []


def _rebound(fn: ast.FunctionDef) -> set[str]:
    """Names the body assigns, deletes or declares ``global``/``nonlocal``."""
    rebound = {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    rebound |= {
        n for s in ast.walk(fn) if isinstance(s, ast.Global | ast.Nonlocal) for n in s.names
    }
    return rebound
