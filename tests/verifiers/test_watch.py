"""The runner's identity watch (``_Watch`` in evoround/verifiers/guard/pytest_runner.py): every
way of changing a watched callable is reported, and nothing is reported when nothing
changed. Run in a fresh interpreter: the cases tamper with pytest itself."""

from __future__ import annotations

import json
import subprocess
import sys

from evoround.verifiers._programs import program

CASES = r"""
import json, sys, types
ns = {"__name__": "runner"}
exec(compile(RUNNER, "runner", "exec"), ns)
import pytest, _pytest.python, _pytest.reports, builtins, unittest
from _pytest.config import get_config
watch = ns["_Watch"](pytest, "/nowhere")
watch.configured(get_config([]))
noop = (lambda *a, **k: None)

class Evil(tuple):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = tuple.__hash__

def swap_attr(owner, name, value):
    old = vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    return lambda: setattr(owner, name, old)

def swap_code(fn, code):
    old = fn.__code__; fn.__code__ = code
    return lambda: setattr(fn, "__code__", old)

def swap_defaults(fn, value):
    old = fn.__defaults__; fn.__defaults__ = value
    return lambda: setattr(fn, "__defaults__", old)

def module_class(mod, name):
    old = mod.__class__
    fake = type("M", (types.ModuleType,), {name: property(lambda self: noop)})
    mod.__class__ = fake
    return lambda: setattr(mod, "__class__", old)

runtest = _pytest.python.Function.runtest
from_call = _pytest.reports.TestReport.from_item_and_call.__func__
obj_get = _pytest.python.PyobjMixin.obj.fget
cases = {
    "nothing": lambda: (lambda: None),
    "method replaced": lambda: swap_attr(_pytest.python.Function, "runtest", noop),
    "method code": lambda: swap_code(runtest, noop.__code__),
    "classmethod code": lambda: swap_code(from_call, noop.__code__),
    "property code": lambda: swap_code(obj_get, noop.__code__),
    "equal defaults": lambda: swap_defaults(pytest.raises, Evil(pytest.raises.__defaults__ or ())),
    "module function": lambda: swap_attr(pytest, "approx", noop),
    "module class": lambda: module_class(pytest, "approx"),
    "builtin": lambda: swap_attr(builtins, "isinstance", noop),
    "exception class": lambda: swap_attr(builtins, "AssertionError", type("A", (Exception,), {})),
    "unittest assert": lambda: swap_attr(unittest.TestCase, "assertEqual", noop),
}
out = {}
for name, make in cases.items():
    undo = make()
    try:
        out[name] = watch._changed()
    finally:
        undo()
    out[name + " (undone)"] = watch._changed()
print(json.dumps(out))
"""


def test_every_change_is_reported_and_nothing_else() -> None:
    code = "RUNNER = " + repr(program("pytest_runner.py")) + "\n" + CASES
    res = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.splitlines()[-1])
    assert got.pop("nothing") == []
    for name, changed in got.items():
        if name.endswith("(undone)"):
            assert changed == [], (name, changed)
        else:
            assert changed, f"{name}: not reported"
