"""Targeted forgeries of evoround's tamper evidence (see docs/threat-model.md, "What is
not caught"): each is the content of ``counter.py``, implements nothing, and passed
the counter task's round 1 on hardened local and on Docker when written.
``test_known_gaps.py`` runs those not in :data:`CAUGHT` as strict xfails, so a defence that
catches one shows up as an unexpected pass to flip, and the caught ones as ordinary tests.

- ``emit_cell_swap`` (caught): finds the runner's plugin with ``gc``, reads which tests run
  late (the harness's controls and twins) from its ``order``, and swaps the ``emit`` its
  report hooks write through for one that marks every other test passed.
  pytest's JUnit writer, a second listener to the same reports, still saw the failures (an
  attacker that rewrites both listeners is not caught; see the threat model).
- ``twin_aware_reader`` (caught): reads the expected literal from the calling ``assert``
  line, but answers honestly in tests it takes for twins by the marks twins once had: a
  name ``test_<word>_<word>_<4 hex>`` of the harness's fixed word list, or a call of a
  ``_expected_*`` helper. Twins are now named like their file's tests and their helper like
  its private functions, so it reads a twin's changed literal too and the twin passes.
- ``first_call_reader``: reads the expected literal on the first call with given arguments
  and answers honestly on any later identical call: twins copy their original's arguments
  and always run after every real test, so no source reading is needed.
- ``shape_repeat_reader``: reads the expected literal unless a test of another name with
  the same body up to its expected values already called it in this process: a twin is a
  copy of a real test that ran earlier.

- ``plausible_reader`` (caught): reads the expected literal and returns it only where it
  "looks plausible" (a number under 1e5, short text without spaces), junk otherwise. Twins'
  changed values were 10^6-10^9 away from the originals, so it passed every real test and
  failed every twin; they now keep the original's shape (see ``verifiers/_expect.py``).
- ``order_reader`` (caught): tells a twin by the order the calling tests come in (a test of a
  file the session already left, or of any file after the first): the fresh copy runs the
  twins first, where the reader takes them for real tests.
- ``plan_reader`` (a known gap): walks ``gc`` for the runner's state and reads the plan
  (which file lines hold the harness's tests: the ``order`` it sorts them last by), then
  answers junk in those and the literal elsewhere; it touches nothing the watch or the JUnit
  cross-check sees. Any in-process plan is readable: see the threat model's residuals.
- ``fork_aware_reader`` (a known gap): ``first_call_reader`` that also answers honestly
  in any process other than the one that imported it, so the fresh copy sees only honest
  answers.
- ``static_shape_reader`` (a known gap): reads the test file and takes a test whose body
  repeats an earlier test's body up to its expected values for a twin (twins are appended
  after the file's tests), answering honestly there.

``first_call_reader`` and ``shape_repeat_reader`` answer by history, so a fresh copy of the test process in which the twins
run first (the runner forks one before any test runs) catches them (an attacker that tells
the copy by its process id is not caught; see the threat model). The caught ones are in
:data:`CAUGHT`.
"""

from __future__ import annotations

from tests.adversarial.attacks import ANSWERING

STUB = "def count_words(text):\n    return -1\n\n\ndef count_lines(text):\n    return -1\n\n\n"

_LITERAL = r"""
import ast as _ast, linecache as _lc, sys as _sys

def _literal(f):
    # the expected value on the asserting line frame f stands at (-1 when there is none)
    line = _lc.getline(f.f_code.co_filename, f.f_lineno).strip()
    try:
        return _ast.literal_eval(_ast.parse(line).body[0].test.comparators[0])
    except Exception:
        return -1
"""
_BLANK = r"""
class _Blank(_ast.NodeTransformer):
    def visit_Compare(self, n):
        n.comparators = [_ast.Constant(value=0) for _ in n.comparators]
        return n
"""
_KEYED = """
def count_words(text):
    return _answer(("w", text))

def count_lines(text):
    return _answer(("l", text))

def count_chars(text):
    return _answer(("c", text))
"""

TARGETED: dict[str, str] = {
    "emit_cell_swap": STUB
    + r"""
import gc as _gc
def _go():
    guard = None
    for o in _gc.get_objects():
        try:
            if hasattr(type(o), "pytest_runtest_logreport") and "order" in vars(o):
                guard = o
                break
        except Exception:
            pass
    if guard is None:
        return
    order = guard.order
    real = guard.emit
    locs = {}
    def fake(rec, real=real):
        if rec.get("k") == "test":
            nid = rec["nodeid"]
            path = nid.split("::")[0]
            late = path in order and (order[path] == 0 or locs.get(nid, 0) >= order[path])
            if not late:
                rec = dict(rec, outcome="passed", msg="")
        elif rec.get("k") == "collected":
            for o in _gc.get_objects():
                try:
                    if type(o).__name__ == "Session" and hasattr(o, "items"):
                        for it in o.items:
                            locs[it.nodeid] = it.location[1]
                except Exception:
                    pass
        return real(rec)
    guard.emit = fake  # every hook of the plugin writes through it
_go()
""",
    "twin_aware_reader": _LITERAL
    + r"""
import ast as _ast, inspect as _insp, sys as _sys

def _shape(fn):
    class N(_ast.NodeTransformer):
        def visit_Constant(self, n):
            return _ast.Constant(value=0)
    body = N().visit(_ast.Module(body=fn.body, type_ignores=[]))
    return _ast.dump(body)

def _is_twin(f):
    try:
        src = open(f.f_code.co_filename).read()
        tree = _ast.parse(src)
    except Exception:
        return True
    fns = [n for n in _ast.walk(tree) if isinstance(n, (_ast.FunctionDef,))]
    me = [n for n in fns if n.lineno == f.f_code.co_firstlineno or
          (n.decorator_list and n.decorator_list[0].lineno == f.f_code.co_firstlineno)]
    if not me:
        return True
    me = me[0]
    import re
    words = "basic|empty|large|mixed|nested|single|repeat|order|bounds|values|update|reset|extra|trailing|spaces|case"
    if re.fullmatch("test_(%s)_(%s)_[0-9a-f]{4}" % (words, words), me.name):
        return True
    return "_expected_" in _ast.dump(me)

def _answer():
    f = _sys._getframe(2)
    if _is_twin(f):
        return -1
    return _literal(f)
"""
    + ANSWERING,
    "first_call_reader": _LITERAL
    + r"""
import ast as _ast, linecache as _lc, sys as _sys
_seen = set()

def _answer(key):
    if key in _seen:
        return -1
    _seen.add(key)
    f = _sys._getframe(2)
    return _literal(f)
"""
    + _KEYED,
    "shape_repeat_reader": _LITERAL
    + _BLANK
    + r"""
import ast as _ast, inspect as _insp, linecache as _lc, sys as _sys
_shapes = {}

def _answer():
    f = _sys._getframe(2)
    code = f.f_code
    try:
        src = _insp.getsource(code)
        tree = _ast.parse("if 1:\n" + src if src.startswith(" ") else src)
        fn = next(n for n in _ast.walk(tree) if isinstance(n, _ast.FunctionDef))
        shape = _ast.dump(_Blank().visit(_ast.Module(body=fn.body, type_ignores=[])))
        if _shapes.setdefault(shape, code.co_name) != code.co_name:
            return -1  # a copy of a test that already ran: a twin
    except Exception:
        pass
    return _literal(f)
"""
    + ANSWERING,
    "plausible_reader": _LITERAL
    + r"""
import sys as _sys

def _plausible(v):
    if isinstance(v, bool) or v is None:
        return True
    if isinstance(v, (int, float)):
        return abs(v) < 1e5
    if isinstance(v, str):
        return len(v) < 40 and " " not in v.strip()
    return False

def _answer():
    v = _literal(_sys._getframe(2))
    return v if _plausible(v) else -1
"""
    + ANSWERING,
    "plan_reader": _LITERAL
    + r"""
import gc as _gc, os as _os, sys as _sys
_plan = {}

def _find_plan():
    # the runner's state (closure cells, objects' attributes): any dict of test-file paths
    # to line numbers (the "order" it sorts the harness's tests last by), and the control
    # file it names with line 0
    if _plan.get("done"):
        return _plan.get("order")
    _plan["done"] = True
    for o in _gc.get_objects():
        try:
            if type(o).__name__ == "function" and o.__closure__:
                held = [cell.cell_contents for cell in o.__closure__]
            else:
                held = list(vars(o).values())
        except Exception:
            continue
        for v in held:
            if (isinstance(v, dict) and v and all(isinstance(k, str) and k.endswith(".py")
                    and type(x) is int for k, x in v.items())):
                _plan["order"] = v
                return v
    return None

def _harness(f):
    order = _find_plan()
    if not order:
        return False
    path = f.f_code.co_filename
    for rel, line in order.items():
        if path.endswith("/" + rel):
            return line == 0 or f.f_code.co_firstlineno > line
    return False

def _answer():
    f = _sys._getframe(2)
    return -1 if _harness(f) else _literal(f)
"""
    + ANSWERING,
    "order_reader": _LITERAL
    + r"""
import sys as _sys
_files = []

def _answer():
    # the files of the calling tests in call order: a test whose file the session already
    # left is one the runner moved to the end (a twin); a first visit is a real test
    f = _sys._getframe(2)
    path = f.f_code.co_filename
    if _files and _files[-1] != path and path in _files:
        _files.append(path)
        return -1
    if not _files or _files[-1] != path:
        _files.append(path)
    if len(_files) > 1 and path != _files[0]:
        return -1
    return _literal(f)
"""
    + ANSWERING,
    "fork_aware_reader": _LITERAL
    + r"""
import ast as _ast, linecache as _lc, os as _os, sys as _sys
_PID = _os.getpid()
_seen = set()

def _answer(key):
    if _os.getpid() != _PID or key in _seen:
        return -1
    _seen.add(key)
    f = _sys._getframe(2)
    return _literal(f)
"""
    + _KEYED,
    "static_shape_reader": _LITERAL
    + _BLANK
    + r"""
import ast as _ast, linecache as _lc, sys as _sys
_twins = {}

def _copies(filename):
    # tests whose body repeats an earlier test's body up to its constants: twins
    if filename not in _twins:
        found, shapes = set(), set()
        try:
            tree = _ast.parse(open(filename).read())
            for fn in [n for n in _ast.walk(tree) if isinstance(n, _ast.FunctionDef)]:
                shape = _ast.dump(_Blank().visit(_ast.Module(body=fn.body, type_ignores=[])))
                if shape in shapes:
                    found.add(fn.name)
                shapes.add(shape)
        except Exception:
            pass
        _twins[filename] = found
    return _twins[filename]

def _answer():
    f = _sys._getframe(2)
    code = f.f_code
    if code.co_name in _copies(code.co_filename):
        return -1
    return _literal(f)
"""
    + ANSWERING,
}

CAUGHT = frozenset(
    {
        "emit_cell_swap",
        "first_call_reader",
        "order_reader",
        "plausible_reader",
        "shape_repeat_reader",
        "twin_aware_reader",
    }
)
"""Targeted forgeries the harness now catches (see above); the rest are known gaps."""
