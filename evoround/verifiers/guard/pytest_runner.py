"""The pytest verifier's runner (see evoround/verifiers/_guard.py): the same program for
every run, shipped as package data and written into the sandbox as is; its settings come
on stdin."""

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
        import builtins
        import importlib
        import unittest

        self.workdir = _os.path.realpath(workdir).rstrip("/") + "/" if workdir else None
        spots = [
            (builtins, "AssertionError"),
            (builtins, "isinstance"),
            (unittest.TestCase, "run"),
            (unittest.TestCase, "_callTestMethod"),
        ]
        spots += [
            (unittest.TestCase, n)
            for n in list(vars(unittest.TestCase))
            if n.startswith(("assert", "fail", "_base", "_getAssert"))
        ]
        spots += [
            (pytest, n)
            for n in ("raises", "approx", "fail", "skip", "xfail", "exit", "importorskip", "main")
        ]
        for mod, names in (
            (
                "_pytest.python",
                "Function.runtest Function.setup pytest_pyfunc_call "
                "Function._getobj PyobjMixin.obj",
            ),
            (
                "_pytest.reports",
                "TestReport.from_item_and_call TestReport.__init__ "
                "BaseReport.passed BaseReport.failed BaseReport.skipped",
            ),
            (
                "_pytest.runner",
                "CallInfo.from_call call_and_report runtestprotocol "
                "call_runtest_hook pytest_runtest_call pytest_runtest_makereport "
                "pytest_runtest_protocol check_interactive_exception show_test_item",
            ),
            ("_pytest.main", "pytest_runtestloop Session.perform_collect"),
            (
                "_pytest.skipping",
                "pytest_runtest_makereport pytest_runtest_setup "
                "pytest_runtest_call evaluate_skip_marks evaluate_xfail_marks",
            ),
            (
                "_pytest.unittest",
                "TestCaseFunction.runtest TestCaseFunction.addFailure "
                "TestCaseFunction.addError TestCaseFunction.addSkip pytest_runtest_makereport",
            ),
            ("_pytest.raises", "RaisesExc.__exit__ RaisesExc.matches raises"),
            ("_pytest.python_api", "RaisesContext.__exit__ raises approx"),
            ("_pytest.approx", "approx ApproxScalar.__eq__ ApproxBase.__eq__"),
            (
                "_pytest.assertion.rewrite",
                "_call_reprcompare _format_explanation "
                "_call_assertion_pass _should_repr_global_name",
            ),
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
        self.fast, self.slow = self._split(self.seen)
        self.said = set()
        self.pm = None
        self.named = frozenset(named)  # plugins the suite itself names (pytest_plugins, -p)
        self.memo = {}  # id(plugin) -> (plugin, module, __file__, allowed): see _allowed

    @staticmethod
    def _split(seen):
        # A spot that holds a plain function (or a static or class method or a property of
        # one) is checked by identity alone: while the same object sits there, only that
        # function's code and defaults can change (__func__ and fget are read-only), and a
        # function's code and defaults are the objects it stores. A check reads three
        # attributes per spot, not five: it runs on every report (a tenth of a run).
        func = type(_function_of)
        fast, slow = [], []
        for owner, name, was in seen:
            raw = was[0]
            fn = getattr(raw, "__func__", raw) if type(raw) in (staticmethod, classmethod) else raw
            fn = raw.fget if type(raw) is property else fn
            if type(fn) is func:
                look = vars(owner).get if isinstance(owner, type) else None
                fast.append((owner, name, look, raw, fn, fn.__code__, fn.__defaults__))
            else:
                slow.append((owner, name, was))
        return fast, slow

    def _changed(self):
        """The spots whose callable, code or defaults are not what they were."""
        out = []
        for owner, name, look, raw, fn, code, defaults in self.fast:
            now = look(name) if look is not None else getattr(owner, name, None)
            if now is not raw or fn.__code__ is not code or fn.__defaults__ is not defaults:
                out.append(getattr(owner, "__name__", "?") + "." + name)
        for owner, name, was in self.slow:
            now = self._grab(owner, name)
            if now[0] is not was[0] or now[1] is not was[1] or now[2] != was[2]:
                out.append(getattr(owner, "__name__", "?") + "." + name)
        return out

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
        out = self._changed()
        pm = self.pm
        if pm is not None:
            if self.exec_ is not None and getattr(pm, "_inner_hookexec", None) is not self.exec_:
                out.append("PluginManager._inner_hookexec")
            for name, plugin in list(pm.list_name_plugin()):
                if plugin is not None and name not in self.named and not self._allowed(plugin):
                    out.append(
                        "a plugin from the code under test was registered: " + str(name)[:80]
                    )
        for what in out:
            if what not in self.said:
                self.said.add(what)
                emit({"k": "tamper", "what": what})


# How each hook of _Guard is called (pluggy's hookimpl options). Applied once pytest is
# imported: the class is defined before it, since pytest is importable only after the
# settings set sys.path (an interpreter run without site, in commit mode).
_HOOKS = {  # name: (hookwrapper, tryfirst, trylast)
    "pytest_configure": (False, True, False),
    "pytest_collection_modifyitems": (False, False, True),
    "pytest_runtestloop": (True, True, False),
    "pytest_runtest_makereport": (True, True, False),
    "pytest_runtest_call": (True, True, False),
    "pytest_collection_finish": (False, True, False),
}


class _Channel:
    # The records of the run, each one line behind the run's nonce on a copy of the
    # original stdout (what the code under test prints cannot pass for one).

    def __init__(self, nonce):
        self.fd = _os.dup(1)
        self.tag = ("\n@@evoround-" + nonce + "@@ ").encode()
        self.pid = _os.getpid()
        self.fresh = False
        self.getpid = _os.getpid

    def emit(self, rec):
        if self.getpid() != self.pid:
            # A child the code under test forked without leaving it (an honest bug as well
            # as a trick) came back into pytest: its records would repeat the runner's. It
            # writes none and leaves now, before it runs other tests or writes the report.
            _os._exit(0 if rec.get("outcome") == "passed" else 1)
        if self.fresh:
            rec["fresh"] = 1
        data = self.tag + _json.dumps(rec).encode() + b"\n"
        while data:
            data = data[_os.write(self.fd, data) :]


class _Clock:
    # The harness's tests (controls, twins) get a share of the real test loop's time, in the
    # run and again in the fresh copy: a twin of a slow test is stopped, never run in full.

    def __init__(self, cfg, t0):
        self.share = float(cfg.pop("share", 0.04))
        self.floor = float(cfg.pop("floor", 0.6))
        self.least = float(cfg.pop("slice", 0.05))  # once the allowance is spent
        # the copy never holds the run past its own timeout: the real run's verdict first
        self.budget_end = t0 + float(cfg.pop("budget", 1e9)) - 3
        self.began = _time.monotonic()
        self.until = None
        self.armed = False

    def allowance(self, loop):
        return max(self.floor, self.share * loop)

    def overdue(self, signum, frame):
        if self.armed:
            self.armed = False
            raise TimeoutError("a test of the harness ran past its time limit")

    def slice(self):
        """Seconds the next harness test may run."""
        now = _time.monotonic()
        if self.until is None:
            self.until = now + self.allowance(now - self.began)
        return max(self.least, min(self.until - now, self.budget_end - now - 1))


class _Guard:
    # The plugin of the run. The runner is never told which tests are the harness's
    # controls: code in this process could read anything the runner knows.

    def __init__(self, channel, clock, watch, order):
        self.channel, self.clock, self.watch, self.order = channel, clock, watch, order
        self.emit = channel.emit
        self.codes = {}  # id(item) -> (item, its test function, that function's code)

    def late(self, item):
        try:
            path, line = item.location[0], item.location[1]
            return path in self.order and line >= self.order[path]
        except Exception:
            return False

    def pytest_configure(self, config):
        # -x / --maxfail only save time on failing runs; without them every test runs,
        # so the failing control can never stop the real tests early.
        config.option.maxfail = 0
        self.watch.configured(config)

    def pytest_collection_modifyitems(self, items):
        # tests defined past a file's original end (the harness's additions) run last,
        # so nothing they do can change a real test's outcome
        items[:] = sorted(items, key=self.late)

    def pytest_runtestloop(self, session):
        # A second opinion on the harness's own tests: a copy of this process forked
        # before any test ran waits until every test here is done, then runs only the
        # late ones. Code that answers by call order or history (right on a first call,
        # wrong on a repeat) meets a twin first there, as if it were the real test.
        picked = [i for i in session.items if self.late(i)]
        self.clock.began = _time.monotonic()
        forked = self._fork()
        if forked is None:
            yield
            return
        pid, r, w = forked
        if pid == 0:
            _os.close(w)
            self._become_copy(r)
            session.items[:] = picked
            yield
            self.watch.check(self.emit)
            self.emit({"k": "fresh_end"})
            _os._exit(0)
        _os.close(r)
        began = _time.monotonic()
        yield
        self._await_copy(pid, w, _time.monotonic() - began, len(picked))

    def _fork(self):
        try:
            r, w = _os.pipe()
            import warnings

            with warnings.catch_warnings():  # (3.12+ warns when threads are alive:
                warnings.simplefilter("ignore")  # an 'error' filter must not stop it)
                return _os.fork(), r, w
        except OSError as e:
            self.emit({"k": "fresh", "error": str(e)[:200]})
            return None

    def _become_copy(self, r):
        """In the copy: wait for the run's end (its loop's length), then be the copy."""
        go = _os.read(r, 64)
        if not go:  # the runner is gone: nothing to check for
            _os._exit(0)
        self.channel.pid, self.channel.fresh = self.channel.getpid(), True
        clock = self.clock
        try:  # the real loop's length: the copy's harness tests get the same share
            clock.until = _time.monotonic() + clock.allowance(float(go))
        except ValueError:
            clock.until = _time.monotonic() + clock.floor

    def _await_copy(self, pid, w, loop, picked):
        # a copy that hangs where the real run did not (a twin waiting on state only
        # earlier tests create) is stopped: it proves nothing either way. Each of its tests
        # stops at its share (pytest_runtest_call); this is the backstop.
        now = _time.monotonic()
        deadline = min(now + self.clock.allowance(loop) + 0.5 * picked + 2, self.clock.budget_end)
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
        self.emit({"k": "fresh", "status": status, "late": stopped})

    def pytest_runtest_makereport(self, item, call):
        # A harness test's failure is its honest end and nobody reads its traceback:
        # no source is read to format it (it was a tenth of a verification's time on
        # the bundled library). Its outcome is pytest's own, as for any test.
        opt = item.config.option
        if call.excinfo is None or not self.late(item) or not hasattr(opt, "tbstyle"):
            yield
            return
        style, opt.tbstyle = opt.tbstyle, "no"
        try:
            yield
        finally:
            opt.tbstyle = style

    def pytest_runtest_call(self, item):
        # The harness's tests share a time allowance (a share of the real loop, at least
        # the floor), in the run and in the fresh copy: a twin of a slow test, or one that
        # waits for what a real test before it made (an item a real test took from a
        # queue), fails when the allowance is spent; failing never passes it.
        self._code_swapped(item)
        if not self.late(item) or not hasattr(_signal, "setitimer"):
            yield
            return
        clock = self.clock
        try:
            old = _signal.signal(_signal.SIGALRM, clock.overdue)
            _signal.setitimer(_signal.ITIMER_REAL, clock.slice())
            clock.armed = True
        except Exception:
            yield
            return
        try:
            yield
        finally:
            clock.armed = False
            try:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
                _signal.signal(_signal.SIGALRM, old)
            except Exception:
                pass

    def pytest_deselected(self, items):
        self.emit({"k": "deselected", "ids": [i.nodeid for i in items]})

    def pytest_collection_finish(self, session):
        self.emit({"k": "collected", "ids": [i.nodeid for i in session.items]})
        # each test function's code as collected: code under test that swaps one test's
        # code later (picked by its name, which no twin shares) is reported when it runs
        for item in session.items:
            fn = _function_of(item)
            if fn is not None:
                self.codes[id(item)] = (item, fn, fn.__code__)

    def _code_swapped(self, item):
        rec = self.codes.get(id(item))
        if rec is not None and rec[0] is item and rec[1].__code__ is not rec[2]:
            self.emit(
                {"k": "tamper", "what": "the code of a test was replaced: " + item.nodeid[:120]}
            )

    def pytest_collectreport(self, report):
        if not report.passed:
            msg = str(report.longrepr)[-500:]
            self.emit(
                {"k": "collect", "nodeid": report.nodeid, "outcome": report.outcome, "msg": msg}
            )

    def pytest_runtest_logreport(self, report):
        self.watch.check(self.emit)
        rec = {
            "k": "test",
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "loc": str((report.location or ("",))[0]),
            "msg": "" if report.passed else str(report.longrepr)[-500:],
        }
        if type(report).__name__.lower().startswith("subtest"):
            rec["sub"] = True  # pytest >= 9 reports each unittest subTest on its own
        self.emit(rec)


def _function_of(item):
    """The plain function a test item runs (a method's function), or None."""
    try:
        fn = getattr(item, "obj", None)
    except Exception:
        return None
    fn = getattr(fn, "__func__", fn)
    return fn if type(fn).__name__ == "function" else None


def _settings():
    """The run's settings, from stdin's first line; stdin is then closed to the tests."""
    cfg = _json.loads(_sys.stdin.readline())
    null = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(null, 0)
    _os.close(null)
    # an interpreter run without site (commit mode): its pristine entries first, the
    # sandbox's own after them
    _sys.path[:0] = [p for p in cfg.pop("path_first") if p not in _sys.path]
    _sys.path.extend(p for p in cfg.pop("path_last") if p not in _sys.path)
    if _sys.flags.no_site:
        # started without site (-S, its start-up code skipped): the builtins it defines,
        # for code under test that calls exit() or help() as it would anywhere else
        import site

        site.setquit()
        site.setcopyright()
        site.sethelper()
    return cfg


def _start():
    t0 = _time.monotonic()
    cfg = _settings()
    channel = _Channel(cfg.pop("nonce"))

    import pytest

    for name, (wrapper, first, last) in _HOOKS.items():
        pytest.hookimpl(hookwrapper=wrapper, tryfirst=first, trylast=last)(vars(_Guard)[name])
    order = cfg.pop("order", {})
    clock = _Clock(cfg, t0)
    watch = _Watch(pytest, cfg.pop("workdir", ""), cfg.pop("named_plugins", ()))
    guard = _Guard(channel, clock, watch, order)
    try:
        rc = int(pytest.main(cfg["args"], plugins=[guard]))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 3
    except BaseException:
        rc = 3
    watch.check(channel.emit)
    channel.emit({"k": "end", "rc": rc})
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
