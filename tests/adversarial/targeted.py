"""Targeted forgeries of evoround's tamper evidence (see docs/threat-model.md, "What this
does not guarantee"): each is the content of ``counter.py``, implements nothing, and aims to
pass the counter task's round 1 on hardened local and on Docker. ``test_known_gaps.py`` runs
those not detected yet as strict xfails, so a defence that catches one shows up as an
unexpected pass to flip, and those in its ``CAUGHT`` as ordinary tests that must be caught.

- ``emit_cell_swap``: finds the runner's ``Guard`` plugin with ``gc``, reads which tests run
  late (the harness's controls and twins) from the ``order`` cell of its closure, and swaps
  the ``emit`` cell of its report hook for one that marks every other test passed.
- ``twin_aware_reader`` (caught): reads the expected literal from the calling ``assert``
  line, but answers honestly in tests it takes for twins by the marks twins once had: a
  name ``test_<word>_<word>_<4 hex>`` of the harness's fixed word list, or a call of a
  ``_expected_*`` helper. Twins are now named like their file's tests and their helper like
  its private functions, so it reads a twin's changed literal too and the twin passes.
- ``first_call_reader``: reads the expected literal on the first call with given arguments
  and answers honestly on any later identical call: twins copy their original's arguments
  and always run after every real test, so no source reading is needed.
"""

from __future__ import annotations

from tests.adversarial.attacks import ANSWERING

STUB = "def count_words(text):\n    return -1\n\n\ndef count_lines(text):\n    return -1\n\n\n"

TARGETED: dict[str, str] = {
    "emit_cell_swap": STUB
    + r"""
import gc as _gc
def _go():
    guard = None
    for o in _gc.get_objects():
        try:
            if type(o).__name__ == "Guard" and hasattr(type(o), "pytest_runtest_logreport"):
                guard = o
                break
        except Exception:
            pass
    if guard is None:
        return
    fn = type(guard).pytest_runtest_logreport
    cm = type(guard).pytest_collection_modifyitems
    order = None
    for name, cell in zip(cm.__code__.co_freevars, cm.__closure__ or ()):
        if name == "order":
            order = cell.cell_contents
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        if name == "emit":
            real = cell.cell_contents
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
            cell.cell_contents = fake
        if name == "watch":
            pass
_go()
""",
    "twin_aware_reader": r"""
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
    import linecache
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    try:
        test = _ast.parse(line).body[0].test
        return _ast.literal_eval(test.comparators[0])
    except Exception:
        return -1
"""
    + ANSWERING,
    "first_call_reader": r"""
import ast as _ast, linecache as _lc, sys as _sys
_seen = set()

def _answer(key):
    if key in _seen:
        return -1
    _seen.add(key)
    f = _sys._getframe(2)
    line = _lc.getline(f.f_code.co_filename, f.f_lineno).strip()
    try:
        return _ast.literal_eval(_ast.parse(line).body[0].test.comparators[0])
    except Exception:
        return -1

def count_words(text):
    return _answer(("w", text))

def count_lines(text):
    return _answer(("l", text))

def count_chars(text):
    return _answer(("c", text))
""",
}
