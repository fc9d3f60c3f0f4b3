"""Tamper evidence for the pytest verifier: a result channel, control tests, cross-checks.

The code under test is imported by the hidden tests, so it runs inside the pytest process
with every right the verifier has there: it can write the JUnit report, call ``os._exit``,
register ``atexit`` hooks, patch ``_pytest`` internals or register plugins through the live
config. Nothing that process *writes* is trusted on its own. Instead:

- **Runner.** pytest is started by a small runner script (``python -I``: no ``PYTHON*``
  environment, no user site, no script-directory or cwd on ``sys.path``). Its arguments and
  a per-run secret come on stdin, so ``/proc/self/cmdline`` shows neither the report path
  nor the secret. Before pytest (and so before any workspace code) is imported it duplicates
  stdout into a private channel fd; a verifier plugin registered first writes every test
  report to that channel as a line tagged with the secret, and the runner writes an ``end``
  record with pytest's return code and leaves with ``os._exit`` right away (``atexit`` hooks
  never run).
- **Control tests.** A test file with a random name holds a test that must pass and one that
  must fail (random names, random numbers). An honest run therefore always ends with exactly
  one failure, the failing control; a runner patched to report "passed" says the failing
  control passed; a fabricated report that omits the controls misses them.
- **Cross-checks** (:func:`judge`). The verdict is built from the channel, and the exit
  code, the ``end`` record and pytest's own JUnit report must agree with it. Any
  disagreement that would turn a failure into a pass is an *integrity violation*, recorded
  with its evidence and never counted as a pass.

This cannot make in-process forgery impossible (code in the same process can in principle
find the secret in memory); it makes every generic forgery that does not single out the
randomly named control test detectable, and forces a targeted attack to defeat all checks
at once.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

EXIT_TESTS_FAILED = 1
"""pytest's return code when some tests failed: what an honest run returns (the control)."""

RUNNER = r'''"""evoround verifier runner (generated; see evoround/verifiers/_guard.py)."""
import json as _json
import os as _os
import signal as _signal
import sys as _sys
import time as _time


class _Watch:
    # Identities (and code) of the pytest, pluggy and unittest callables that decide a
    # test's outcome, taken before any workspace code is imported; any change later is
    # reported. Every registered plugin must come from outside the workspace (pytest's
    # own, the suite's conftest files, their pytest_plugins), never from the code under test.

    def __init__(self, pytest, workdir, named=()):
        import builtins, importlib, unittest
        self.workdir = _os.path.realpath(workdir).rstrip("/") + "/" if workdir else None
        spots = [(builtins, "AssertionError"), (builtins, "isinstance"),
                 (unittest.TestCase, "run"), (unittest.TestCase, "_callTestMethod")]
        spots += [(unittest.TestCase, n) for n in list(vars(unittest.TestCase))
                  if n.startswith(("assert", "fail", "_base", "_getAssert"))]
        spots += [(pytest, n) for n in ("raises", "approx", "fail", "skip", "xfail", "exit",
                                        "importorskip", "main")]
        for mod, names in (
            ("_pytest.python", "Function.runtest Function.setup pytest_pyfunc_call "
             "Function._getobj PyobjMixin.obj"),
            ("_pytest.reports", "TestReport.from_item_and_call TestReport.__init__ "
             "BaseReport.passed BaseReport.failed BaseReport.skipped"),
            ("_pytest.runner", "CallInfo.from_call call_and_report runtestprotocol "
             "call_runtest_hook pytest_runtest_call pytest_runtest_makereport "
             "pytest_runtest_protocol check_interactive_exception show_test_item"),
            ("_pytest.main", "pytest_runtestloop Session.perform_collect"),
            ("_pytest.skipping", "pytest_runtest_makereport pytest_runtest_setup "
             "pytest_runtest_call evaluate_skip_marks evaluate_xfail_marks"),
            ("_pytest.unittest", "TestCaseFunction.runtest TestCaseFunction.addFailure "
             "TestCaseFunction.addError TestCaseFunction.addSkip pytest_runtest_makereport"),
            ("_pytest.raises", "RaisesExc.__exit__ RaisesExc.matches raises"),
            ("_pytest.python_api", "RaisesContext.__exit__ raises approx"),
            ("_pytest.approx", "approx ApproxScalar.__eq__ ApproxBase.__eq__"),
            ("_pytest.assertion.rewrite", "_call_reprcompare _format_explanation "
             "_call_assertion_pass _should_repr_global_name"),
            ("_pytest.outcomes", "fail skip xfail exit OutcomeException Skipped Failed"),
            ("pluggy._callers", "_multicall"),
            ("pluggy._hooks", "HookCaller.__call__ HookCaller._hookexec HookImpl.__init__"),
            ("pluggy._manager", "PluginManager._hookexec PluginManager.register"),
        ):
            try:
                m = importlib.import_module(mod)
            except Exception:
                continue
            for dotted in names.split():
                owner, _, attr = dotted.rpartition(".")
                spots.append((getattr(m, owner, None) if owner else m, attr))
        self.seen = [(o, n, self._grab(o, n)) for o, n in spots if o is not None]
        self.said = set()
        self.pm = None
        self.named = frozenset(named)  # plugins the suite itself names (pytest_plugins, -p)
        self.memo = {}  # id(plugin) -> (plugin, module, __file__, allowed): see _allowed

    @staticmethod
    def _grab(owner, name):
        raw = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
        fn = getattr(raw, "__func__", raw)
        fn = getattr(fn, "fget", fn)
        return raw, getattr(fn, "__code__", None), getattr(fn, "__defaults__", None)

    def configured(self, config):
        self.pm = config.pluginmanager
        self.exec_ = self.pm._inner_hookexec if hasattr(self.pm, "_inner_hookexec") else None

    def _allowed(self, plugin):
        # a module, a class or an instance: where its code comes from decides
        mod = plugin
        if type(plugin).__name__ != "module":
            cls = plugin if isinstance(plugin, type) else type(plugin)
            mod = _sys.modules.get(getattr(cls, "__module__", ""))
        f = getattr(mod, "__file__", None)
        if not f:
            return False
        if type(f) is not str:  # a str subclass could answer == as it likes: no memo
            return not (self.workdir and _os.path.realpath(f).startswith(self.workdir))
        # memoised per plugin object (held, so its id is never reused) with everything the
        # answer rests on: the same object, the same module object, the same __file__
        # string; a swapped plugin, module or __file__ is resolved again
        key = id(plugin)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is plugin and hit[1] is mod and hit[2] == f:
            return hit[3]
        ok = not (self.workdir and _os.path.realpath(f).startswith(self.workdir))
        self.memo[key] = (plugin, mod, f, ok)
        return ok

    def check(self, emit):
        out = []
        for owner, name, was in self.seen:
            now = self._grab(owner, name)
            if now[0] is not was[0] or now[1] is not was[1] or now[2] != was[2]:
                out.append(getattr(owner, "__name__", "?") + "." + name)
        pm = self.pm
        if pm is not None:
            if self.exec_ is not None and getattr(pm, "_inner_hookexec", None) is not self.exec_:
                out.append("PluginManager._inner_hookexec")
            for name, plugin in list(pm.list_name_plugin()):
                if plugin is not None and name not in self.named and not self._allowed(plugin):
                    out.append("a plugin from the code under test was registered: "
                               + str(name)[:80])
        for what in out:
            if what not in self.said:
                self.said.add(what)
                emit({"k": "tamper", "what": what})


def _start():
    t0 = _time.monotonic()
    cfg = _json.loads(_sys.stdin.readline())
    null = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(null, 0)
    _os.close(null)
    chan = _os.dup(1)
    tag = ("\n@@evoround-" + cfg.pop("nonce") + "@@ ").encode()
    # an interpreter run without site (commit mode): its pristine entries first, the
    # sandbox's own after them
    _sys.path[:0] = [p for p in cfg.pop("path_first") if p not in _sys.path]
    _sys.path.extend(p for p in cfg.pop("path_last") if p not in _sys.path)

    getpid = _os.getpid
    me = {"pid": getpid(), "fresh": False}

    def emit(rec):
        if getpid() != me["pid"]:
            # A child the code under test forked without leaving it (an honest bug as well
            # as a trick) came back into pytest: its records would repeat the runner's. It
            # writes none and leaves now, before it runs other tests or writes the report.
            _os._exit(0 if rec.get("outcome") == "passed" else 1)
        if me["fresh"]:
            rec["fresh"] = 1
        data = tag + _json.dumps(rec).encode() + b"\n"
        while data:
            data = data[_os.write(chan, data):]

    import pytest

    order = cfg.pop("order", {})
    # the harness's tests (controls, twins) get a share of the real test loop's time, in the
    # run and again in the fresh copy: a twin of a slow test is stopped, never run in full
    share = float(cfg.pop("share", 0.05))
    floor = float(cfg.pop("floor", 1.0))
    # the copy never holds the run past its own timeout: the real run's verdict comes first
    budget_end = t0 + float(cfg.pop("budget", 1e9)) - 3
    watch = _Watch(pytest, cfg.pop("workdir", ""), cfg.pop("named_plugins", ()))

    clock = {"began": _time.monotonic(), "until": None, "armed": False}

    def allowance(loop):
        return max(floor, share * loop)

    def _overdue(signum, frame):
        if clock["armed"]:
            clock["armed"] = False
            raise TimeoutError("a test of the harness ran past its time limit")

    def late(item):
        try:
            path, line = item.location[0], item.location[1]
            return path in order and line >= order[path]
        except Exception:
            return False

    class Guard:
        # The runner is never told which tests are the harness's controls: code in this
        # process could read anything the runner knows.

        @pytest.hookimpl(tryfirst=True)
        def pytest_configure(self, config):
            # -x / --maxfail only save time on failing runs; without them every test runs,
            # so the failing control can never stop the real tests early.
            config.option.maxfail = 0
            watch.configured(config)

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, items):
            # tests defined past a file's original end (the harness's additions) run last,
            # so nothing they do can change a real test's outcome
            items[:] = sorted(items, key=late)

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtestloop(self, session):
            # A second opinion on the harness's own tests: a copy of this process forked
            # before any test ran waits until every test here is done, then runs only the
            # late ones. Code that answers by call order or history (right on a first call,
            # wrong on a repeat) meets a twin first there, as if it were the real test.
            picked = [i for i in session.items if late(i)]
            clock["began"] = _time.monotonic()
            try:
                r, w = _os.pipe()
                import warnings
                with warnings.catch_warnings():  # (3.12+ warns when threads are alive:
                    warnings.simplefilter("ignore")  # an 'error' filter must not stop it)
                    pid = _os.fork()
            except OSError as e:
                emit({"k": "fresh", "error": str(e)[:200]})
                yield
                return
            if pid == 0:
                _os.close(w)
                go = _os.read(r, 64)
                if not go:  # the runner is gone: nothing to check for
                    _os._exit(0)
                me["pid"], me["fresh"] = getpid(), True
                try:  # the real loop's length: the copy's harness tests get the same share
                    clock["until"] = _time.monotonic() + allowance(float(go))
                except ValueError:
                    clock["until"] = _time.monotonic() + floor
                session.items[:] = picked
                yield
                watch.check(emit)
                emit({"k": "fresh_end"})
                _os._exit(0)
            _os.close(r)
            began = _time.monotonic()
            yield
            # a copy that hangs where the real run did not (a twin waiting on state only
            # earlier tests create) is stopped: it proves nothing either way. Each of its tests
            # stops at its share (below); this is the backstop.
            now = _time.monotonic()
            loop = now - began
            deadline = min(now + allowance(loop) + 0.5 * len(picked) + 2, budget_end)
            stopped, status = False, -1
            try:  # the copy may be gone already (killed, reaped): then it ended early
                _os.write(w, ("%.3f" % loop).encode())
                _os.close(w)
                while True:
                    done, status = _os.waitpid(pid, _os.WNOHANG)
                    if done:
                        break
                    if _time.monotonic() > deadline:
                        _os.kill(pid, 9)
                        status, stopped = _os.waitpid(pid, 0)[1], True
                        break
                    _time.sleep(0.005)
            except OSError:
                status = -1
            emit({"k": "fresh", "status": status, "late": stopped})

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_call(self, item):
            # The harness's tests share a time allowance (a share of the real loop, at least
            # the floor), in the run and in the fresh copy: a twin of a slow test, or one that
            # waits for what a real test before it made (an item a real test took from a
            # queue), fails when the allowance is spent; failing never passes it.
            if not late(item) or not hasattr(_signal, "setitimer"):
                yield
                return
            now = _time.monotonic()
            if clock["until"] is None:
                clock["until"] = now + allowance(now - clock["began"])
            secs = max(0.5, min(clock["until"] - now, budget_end - now - 1))
            try:
                old = _signal.signal(_signal.SIGALRM, _overdue)
                _signal.setitimer(_signal.ITIMER_REAL, secs)
                clock["armed"] = True
            except Exception:
                yield
                return
            try:
                yield
            finally:
                clock["armed"] = False
                try:
                    _signal.setitimer(_signal.ITIMER_REAL, 0)
                    _signal.signal(_signal.SIGALRM, old)
                except Exception:
                    pass

        def pytest_deselected(self, items):
            emit({"k": "deselected", "ids": [i.nodeid for i in items]})

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_finish(self, session):
            emit({"k": "collected", "ids": [i.nodeid for i in session.items]})

        def pytest_collectreport(self, report):
            if not report.passed:
                emit({"k": "collect", "nodeid": report.nodeid, "outcome": report.outcome,
                      "msg": str(report.longrepr)[-500:]})

        def pytest_runtest_logreport(self, report):
            watch.check(emit)
            rec = {"k": "test", "nodeid": report.nodeid, "when": report.when,
                   "outcome": report.outcome, "loc": str((report.location or ("",))[0]),
                   "msg": "" if report.passed else str(report.longrepr)[-500:]}
            if type(report).__name__.lower().startswith("subtest"):
                rec["sub"] = True  # pytest >= 9 reports each unittest subTest on its own
            emit(rec)

    try:
        rc = int(pytest.main(cfg["args"], plugins=[Guard()]))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 3
    except BaseException:
        rc = 3
    watch.check(emit)
    emit({"k": "end", "rc": rc})
    for f in (_sys.stdout, _sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    _os._exit(rc)


# only as the program: multiprocessing's spawn and forkserver children run the main
# module's file again (as __mp_main__) to rebuild its namespace, and must not start pytest
if __name__ == "__main__":
    _start()
'''

HARNESS_SHARE = 0.05
"""The share of the real test loop's time the harness's tests (controls and twins) may take
together, once in the run and once in the fresh copy (see the runner): at most about 10 % of
the suite's test time in all, beyond :data:`HARNESS_FLOOR`."""
HARNESS_FLOOR = 1.0
"""Seconds the harness's tests may always take (per run and per fresh copy), however short the
real loop; each of them gets at least 0.5 s."""

_WORDS = (
    "totals",
    "parsing",
    "edges",
    "format",
    "roundtrip",
    "limits",
    "config",
    "values",
    "inputs",
    "defaults",
    "errors",
    "ordering",
    "merge",
    "paths",
    "unicode",
    "cache",
)


@dataclass(frozen=True)
class Controls:
    """The control test file of one verification run (all names random per run)."""

    filename: str
    passing: str
    failing: str
    source: str
    marker: str
    """A random marker on both controls, so a task's own ``-m`` selection keeps them."""

    @property
    def node_ids(self) -> tuple[str, str]:
        return (f"{self.filename}::{self.passing}", f"{self.filename}::{self.failing}")


def make_controls(taken: Iterable[str], imports: Iterable[str] = ()) -> Controls:
    """A control file whose name collides with no suite file; tests look like ordinary ones.

    It opens with the suite's own imports (``imports``, each guarded so that one that fails
    or skips leaves the controls standing), so a forgery that spares tests whose module did
    not import the code under test does not spare the controls.
    """
    taken = set(taken)
    rng = random.SystemRandom()
    while True:
        filename = f"test_{rng.choice(_WORDS)}_{secrets.token_hex(4)}.py"
        if filename not in taken:
            break
    passing = f"test_{rng.choice(_WORDS)}_{secrets.token_hex(3)}"
    failing = f"test_{rng.choice(_WORDS)}_{secrets.token_hex(3)}"
    a, b = rng.randrange(10**6), rng.randrange(10**6)
    marker = f"{rng.choice(_WORDS)}_{secrets.token_hex(3)}"
    head = [f"try:\n    {i}\nexcept BaseException:\n    pass" for i in imports]
    lines = [
        "import pytest",
        "",
        "",
        f"@pytest.mark.{marker}",
        f"def {passing}():",
        f"    assert {a} + {b} == {a + b}",
        "",
        "",
        f"@pytest.mark.{marker}",
        f"def {failing}():",
        f"    assert {b} - {a} == {b - a + rng.randrange(1, 10**4)}",
        "",
    ]
    if rng.random() < 0.5:  # the order in the file says nothing either
        lines = lines[:3] + lines[8:] + ["", ""] + lines[3:8]
    return Controls(filename, passing, failing, "\n".join([*head, *lines]), marker)


SELECTING = ("-k", "-m", "--deselect", "--lf", "--last-failed", "--ff", "--sw", "--stepwise")
"""pytest options that deselect tests: only a task's own ``pytest_args`` may use them."""


def selects(args: Iterable[str]) -> bool:
    return any(a == o or a.startswith(o + "=") for a in args for o in SELECTING)


def keep_controls(args: list[str], controls: Controls, names: Iterable[str] = ()) -> list[str]:
    """A task's ``-k``/``-m`` selection, widened so the control tests (and the tests named in
    ``names``: the failing twins) are always selected by ``-k``."""
    out: list[str] = []
    it = iter(args)
    stem = " or ".join([controls.filename[: -len(".py")], *names])
    for a in it:
        for opt, extra in (("-k", stem), ("-m", controls.marker)):
            if a == opt:
                out += [opt, f"({next(it, '')}) or {extra}"]
                break
            if a.startswith(opt + "="):
                out.append(f"{opt}=({a[len(opt) + 1 :]}) or {extra}")
                break
        else:
            out.append(a)
    return out


def runner_input(
    nonce: str,
    args: list[str],
    controls: Controls,
    path_first: Iterable[str] = (),
    path_last: Iterable[str] = (),
    order: dict[str, int] | None = None,
    workdir: str = "",
    named_plugins: Iterable[str] = (),
    budget: float | None = None,
) -> bytes:
    """The one line the runner reads from stdin (never on the command line).

    ``budget``: the run's timeout in seconds (the fresh copy is stopped 3 s before it); the
    harness's tests' own allowance is :data:`HARNESS_SHARE` of the real loop (at least
    :data:`HARNESS_FLOOR`).
    ``order``: suite-relative file -> line from which its tests run last; ``workdir``: where
    the code under test lives (plugins from there are reported, but for ``named_plugins``,
    which the suite itself asks for).
    """
    cfg = {
        "share": HARNESS_SHARE,
        "floor": HARNESS_FLOOR,
        "budget": 1e9 if budget is None else budget,
        "order": dict(order or {}),
        "workdir": workdir,
        "named_plugins": sorted(set(named_plugins)),
        "path_first": list(path_first),
        "path_last": list(path_last),
        "nonce": nonce,
        "args": args,
    }
    return (json.dumps(cfg) + "\n").encode()


MALFORMED = "a malformed record on the result channel"


@dataclass
class Channel:
    """What the verifier plugin reported on the private channel."""

    tests: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    """nodeid -> phase (setup/call/teardown) -> record."""
    collect_errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    """nodeid -> (outcome, message) of collectors that failed or were skipped."""
    collected: list[str] | None = None
    deselected: set[str] = field(default_factory=set)
    end_rc: int | None = None
    anomalies: list[str] = field(default_factory=list)
    tampered: list[str] = field(default_factory=list)
    """Runner internals found changed (or foreign plugins registered) during the run."""
    fresh: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    """The fresh copy's test records (the harness's late tests run first; see the runner)."""
    fresh_ended: bool = False
    fresh_status: int | None = None
    """The fresh copy's wait status as the runner saw it (None: never reported)."""
    fresh_error: str | None = None
    fresh_late: bool = False
    """The fresh copy was stopped for taking too long (its missing records prove nothing)."""


def read_channel(stdout: str, nonce: str) -> Channel:
    """Pick the tagged records out of the runner's stdout; a repeated phase is an anomaly."""
    tag = f"@@evoround-{nonce}@@ "
    ch = Channel()
    for line in stdout.splitlines():
        if not line.startswith(tag):
            continue
        try:
            rec = json.loads(line[len(tag) :])
            _record(ch, rec["k"], rec)
        except (ValueError, KeyError, TypeError, AttributeError):
            ch.anomalies.append(MALFORMED)
    return ch


Record = dict[str, Any]
"""One decoded channel record: JSON from inside the sandbox, so of any shape; every
conversion below may raise, and :func:`read_channel` counts that as a malformed record."""


def _record(ch: Channel, kind: object, rec: Record) -> None:
    if ch.end_rc is not None:
        ch.anomalies.append("records on the result channel after the end record")
    handle = _RECORDS.get(kind) if isinstance(kind, str) else None  # unknown kinds: ignored
    if handle is not None:
        handle(ch, rec)


def _on_test(ch: Channel, rec: Record) -> None:
    """One phase report of a test (or a subtest's: one that failed fails its test; passed
    ones add nothing); a phase reported twice is an anomaly."""
    tests = ch.fresh if rec.get("fresh") else ch.tests
    phases = tests.setdefault(str(rec.get("nodeid")), {})
    if rec.get("sub"):
        if rec.get("outcome") == "failed":
            phases.setdefault("subtest", rec)
        return
    when = str(rec.get("when"))
    if when in phases:
        ch.anomalies.append(f"{rec.get('nodeid')}: {when} reported twice")
    phases[when] = rec


def _on_fresh_end(ch: Channel, rec: Record) -> None:
    ch.fresh_ended = True


def _on_fresh(ch: Channel, rec: Record) -> None:
    """The fresh copy's end: its wait status, or why it could not run."""
    if ch.fresh_status is not None or ch.fresh_error is not None:
        ch.anomalies.append("the fresh copy reported twice")
    if "error" in rec:
        ch.fresh_error = str(rec.get("error"))[:200]
    else:
        ch.fresh_status = int(rec.get("status", -1))
        ch.fresh_late = bool(rec.get("late"))


def _on_collect(ch: Channel, rec: Record) -> None:
    ch.collect_errors[str(rec.get("nodeid"))] = (
        str(rec.get("outcome")),
        str(rec.get("msg") or ""),
    )


def _on_deselected(ch: Channel, rec: Record) -> None:
    ch.deselected.update(str(i) for i in rec.get("ids") or [])


def _on_collected(ch: Channel, rec: Record) -> None:
    if ch.collected is not None:
        ch.anomalies.append("collection reported twice")
    ch.collected = [str(i) for i in rec.get("ids") or []]


def _on_tamper(ch: Channel, rec: Record) -> None:
    ch.tampered.append(str(rec.get("what"))[:200])


def _on_end(ch: Channel, rec: Record) -> None:
    if ch.end_rc is not None:
        ch.anomalies.append("two end records")
    ch.end_rc = int(rec.get("rc", -1))


_RECORDS: dict[str, Callable[[Channel, Record], None]] = {
    "test": _on_test,
    "fresh_end": _on_fresh_end,
    "fresh": _on_fresh,
    "collect": _on_collect,
    "deselected": _on_deselected,
    "collected": _on_collected,
    "tamper": _on_tamper,
    "end": _on_end,
}
"""What each kind of channel record (its ``k``) does to the :class:`Channel`."""


def phase_outcome(phases: dict[str, dict[str, object]]) -> tuple[str, str]:
    """One test's outcome from its phase reports: passed / failed / error / skipped."""
    setup, call, teardown = (phases.get(w) for w in ("setup", "call", "teardown"))
    sub = phases.get("subtest")
    for rec, failed_as in (
        (setup, "error"),
        (call, "failed"),
        (sub, "failed"),
        (teardown, "error"),
    ):
        if rec is not None and rec.get("outcome") == "failed":
            return failed_as, str(rec.get("msg") or "")
    for rec in (setup, call):
        if rec is not None and rec.get("outcome") == "skipped":
            return "skipped", str(rec.get("msg") or "")
    if call is not None and call.get("outcome") == "passed":
        return "passed", ""
    return "error", "the test did not run to completion"
