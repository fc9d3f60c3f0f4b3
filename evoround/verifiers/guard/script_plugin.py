"""The script verifier's pytest plugin (see evoround/verifiers/_script_guard.py and
_script_twins.py): the same program for every verification, shipped as package data and
written into the sandbox under a random module name; what one verification decided (nonce,
channel, twins) is in a JSON file of the same name beside it."""

import atexit as _atexit
import json as _json
import os as _os
import sys as _sys

import pytest


def _config():
    # this verification's settings, written beside this file by the host; without them
    # (unreadable, not an object) the plugin does nothing
    try:
        with open(_os.path.splitext(__file__)[0] + ".json", encoding="utf-8") as f:
            found = _json.load(f)
        return found if isinstance(found, dict) else {}
    except Exception:
        return {}


_CONFIG = _config()
_NONCE = str(_CONFIG.get("nonce", ""))
_CHANNEL = str(_CONFIG.get("channel", ""))
_MARK = str(_CONFIG.get("mark", ""))
_WORKDIR = str(_CONFIG.get("workdir", ""))
_HOOKS = ("pytest_pyfunc_call", "pytest_runtest_protocol")
_seq = [0]
_ended: list = []
_exit_watch: dict = {}


def _emit(rec):
    rec["p"] = _os.getpid()
    try:
        data = (_NONCE + " " + _json.dumps(rec) + "\n").encode()
        fd = _os.open(_CHANNEL, _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT, 0o644)
        try:
            while data:
                data = data[_os.write(fd, data) :]
        finally:
            _os.close(fd)
    except Exception:
        pass


def _internals():
    found: dict = {}
    try:
        import builtins

        from _pytest import config as cfg
        from _pytest import main as mn
        from _pytest import python as py
        from _pytest import reports as rep
        from _pytest import runner as run
    except Exception:
        return found
    places = [
        (_sys, "exit"),
        (builtins, "SystemExit"),
        (cfg, "ExitCode"),
        (cfg, "main"),
        (cfg, "console_main"),
        (mn, "wrap_session"),
        (mn, "Session"),
        (py, "Function"),
        (py, "pytest_pyfunc_call"),
        (rep, "TestReport"),
        (run, "CallInfo"),
        (run, "call_and_report"),
        (run, "call_runtest_hook"),
        (run, "runtestprotocol"),
        (run, "pytest_runtest_makereport"),
        (run, "pytest_runtest_call"),
    ]
    for owner, name in places:
        if name in vars(owner):
            found[owner.__name__ + "." + name] = vars(owner)[name]
    for cls, name in (
        (getattr(py, "Function", None), "runtest"),
        (getattr(rep, "TestReport", None), "from_item_and_call"),
        (getattr(rep, "TestReport", None), "__init__"),
        (getattr(run, "CallInfo", None), "from_call"),
    ):
        if isinstance(cls, type) and name in vars(cls):
            found[cls.__module__ + "." + cls.__name__ + "." + name] = vars(cls)[name]
    return found


def _impls(config):
    # the first-result implementations (not wrappers): those can skip a test's body
    found: dict = {}
    try:
        for hook in _HOOKS:
            caller = getattr(config.hook, hook, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                if not (getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False)):
                    found[(hook, impl.plugin_name)] = impl.function
    except Exception:
        pass
    return found


def _in_workspace(func):
    # code the agent wrote, not a package installed in a virtualenv inside the workspace
    code = getattr(func, "__code__", None)
    name = getattr(code, "co_filename", "") or ""
    root = _os.path.realpath(_WORKDIR or _os.sep).rstrip(_os.sep) + _os.sep
    real = _os.path.realpath(name) if name else ""
    parts = real.split(_os.sep)
    if root == _os.sep or "site-packages" in parts or "dist-packages" in parts:
        return ""
    return name if real.startswith(root) else ""


def _function_of(item):
    """The plain function a test item runs (a method's function), or None."""
    try:
        fn = getattr(item, "obj", None)
    except Exception:
        return None
    fn = getattr(fn, "__func__", fn)
    return fn if type(fn).__name__ == "function" else None


def _rc(session):
    try:
        return int(getattr(session, "exitstatus", None))  # type: ignore[arg-type]  # None raises here: no status
    except Exception:
        return None


def _at_exit():
    try:
        _exit_check()
    except Exception:
        _emit({"k": "exit"})


def _exit_check():
    # Registered before any workspace code ran, so it runs after every atexit hook of the
    # tested code; what could still change the process's exit status is checked here.
    what = []
    for sess in _ended:
        if _rc(sess.session) != sess.rc:
            what.append(
                "the exit status changed after pytest finished (%s to %s)"
                % (sess.rc, _rc(sess.session))
            )
    now, said = _internals(), set().union(*[sess.sent for sess in _ended])
    for label, obj in _exit_watch.items():
        if now.get(label) is not obj and label + " was replaced" not in said:
            what.append(label + " was replaced before the process exited")
    _emit({"k": "exit", "tampered": what[:20]})


class _Session:
    """One pytest session's state and its own hooks (a nested in-process run gets its own)."""

    def __init__(self, config, sid, mark):
        self.config, self.sid, self.mark = config, sid, mark
        self.internals, self.impls = _internals(), _impls(config)
        self.raised, self.tampered, self.sent, self.session = {}, set(), set(), None
        self.codes = {}  # id(item) -> (item, its test function, that function's code)
        self.top = False  # set by _start before the session is registered

    def check(self):
        try:
            self._check()
        except Exception:
            pass

    def _check(self):
        now = _internals()
        for label, obj in self.internals.items():
            if now.get(label) is not obj:
                self.tampered.add(label + " was replaced")
        for key, func in _impls(self.config).items():
            if key in self.impls and self.impls[key] is not func:
                self.tampered.add("%s of plugin %s was replaced" % key)
            origin = "" if key in self.impls else _in_workspace(func)
            if origin:  # registered during the run by code in the workspace
                self.tampered.add("%s implemented by workspace code %s" % (key[0], origin))
        for what in sorted(self.tampered - self.sent):
            self.sent.add(what)
            _emit({"k": "tamper", "s": self.sid, "what": what[:300]})

    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collection_finish(self, session):
        # each test function's code as collected: code under test that swaps a test's code
        # later (a real test picked by its name, which no twin shares) is seen when it runs
        try:
            for item in session.items:
                fn = _function_of(item)
                if fn is not None:
                    self.codes[id(item)] = (item, fn, fn.__code__)
        except Exception:
            pass

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        rec = self.codes.get(id(item))
        if rec is not None and rec[0] is item and rec[1].__code__ is not rec[2]:
            self.tampered.add("the code of a test was replaced: " + str(item.nodeid)[:120])
        outcome = yield
        try:
            self.raised[item.nodeid] = outcome.excinfo is not None
        except Exception:
            pass

    def pytest_runtest_logreport(self, report):
        try:
            self._log(report)
        except Exception:
            pass

    def _log(self, report):
        if report.when == "call" or report.outcome != "passed":
            raised = self.raised.pop(report.nodeid, None) if report.when == "call" else None
            _emit(
                {
                    "k": "r",
                    "s": self.sid,
                    "id": str(report.nodeid)[:300],
                    "w": report.when,
                    "o": report.outcome,
                    "x": raised,
                }
            )
        if report.when == "teardown":
            self.check()

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        try:
            self._end()
        except Exception:
            pass

    def _end(self):
        self.check()
        self.rc = rc = _rc(self.session)
        if self.top:
            _ended.append(self)
        if self.mark is None:
            _os.environ.pop(_MARK, None)
        else:
            _os.environ[_MARK] = self.mark
        _emit({"k": "end", "s": self.sid, "rc": rc})


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # The guard must never break an honest run: a failure of its own makes it do nothing.
    try:
        _start(config)
    except Exception:
        pass


def _start(config):
    if not (_NONCE and _CHANNEL and _MARK):
        return
    _seq[0] += 1
    sid = "%d-%d" % (_os.getpid(), _seq[0])
    worker = hasattr(config, "workerinput") or "PYTEST_XDIST_WORKER" in _os.environ
    nested = _MARK in _os.environ
    args = [str(a)[:200] for a in getattr(config, "invocation_params", config).args][:20]
    sess = _Session(config, sid, _os.environ.get(_MARK))
    sess.top = not nested and not worker
    config.pluginmanager.register(sess, "evo-" + sid)
    _os.environ[_MARK] = sid
    try:
        _twins_for(config, sess)
    except Exception:
        pass
    if sess.top and not _exit_watch:
        _exit_watch.update(sess.internals)
        _atexit.register(_at_exit)
    # last: a start record promises an end record and an exit record
    _emit({"k": "start", "s": sid, "nested": nested, "worker": worker, "args": args})


_TWINS = _CONFIG.get("twins") or {}
try:
    from _pytest.runner import runtestprotocol as _runtestprotocol
except Exception:
    _runtestprotocol = None  # type: ignore[assignment]  # no twins then


def _twins_for(config, sess):
    if _TWINS and _runtestprotocol is not None:
        config.pluginmanager.register(_Planted(sess), "evo-twins-" + sess.sid)


def _digest(path):
    import hashlib

    try:
        with open(path, "rb") as f:
            data = f.read(8 << 20)
        return hashlib.sha256(data).hexdigest()
    except Exception:
        return None


class _Planted:
    """Failing twins planted in this session's test modules (see _script_twins.py)."""

    def __init__(self, sess):
        self.sess, self.modules, self.items, self.fresh = sess, {}, [], False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        try:
            self._prepare(collector)
        except Exception:
            pass
        outcome = yield
        try:
            self._hide(collector, outcome.get_result())
        except Exception:
            pass

    def _prepare(self, collector):
        if not isinstance(collector, pytest.Module) or type(collector).__name__ != "Module":
            return
        path = str(getattr(collector, "path", None) or collector.fspath)
        plans = _TWINS.get(_digest(path) or "")
        if not plans:
            return
        real = _os.path.realpath(path).split(_os.sep)
        plan = max(
            plans,
            key=lambda p: sum(
                1 for a, b in zip(reversed(real), reversed(p["file"].split("/"))) if a == b
            ),
        )
        self.modules[id(collector)] = (collector, plan)
        if getattr(collector, "_obj", None) is not None:
            self._plant(collector._obj, path, plan)
            return
        load = collector._getobj

        def _getobj():
            mod = load()
            try:
                self._plant(mod, path, plan)
            except Exception:
                pass
            return mod

        collector._getobj = _getobj  # type: ignore[method-assign]  # plants on import

    def _plant(self, mod, path, plan):
        import __future__

        flags = 0
        feature = vars(mod).get("annotations")
        if isinstance(feature, __future__._Feature):
            flags = feature.compiler_flag
        name = getattr(mod, "__file__", None) or path
        code = compile("\n" * plan["pad"] + plan["code"], name, "exec", flags, True)
        exec(code, vars(mod))
        try:  # the twins' lines, where linecache and inspect look (as if on disk)
            import linecache

            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = (text if text.endswith("\n") else text + "\n") + plan["code"]
            linecache.cache[name] = (len(lines), None, lines.splitlines(True), name)
        except Exception:
            pass

    def _hide(self, collector, rep):
        result = getattr(rep, "result", None)
        if not result:
            return
        node = collector if id(collector) in self.modules else collector.getparent(pytest.Module)
        entry = self.modules.get(id(node)) if node is not None else None
        if entry is None or entry[0] is not node:
            return
        names = set(entry[1]["names"])
        hidden = [
            x
            for x in result
            if isinstance(x, pytest.Item)
            and (getattr(x, "originalname", None) or x.name.split("[")[0]) in names
        ]
        if hidden:
            result[:] = [x for x in result if not any(x is h for h in hidden)]
            self.items.extend(hidden)
            _emit(
                {"k": "planted", "s": self.sess.sid, "ids": [str(h.nodeid)[:300] for h in hidden]}
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session):
        fresh = self._fork() if self.items else None
        outcome = yield
        limit = 0.0
        try:
            if outcome.excinfo is None and not session.config.option.collectonly:
                import time

                began = time.monotonic()
                self._run()
                limit = 5 + 3 * (time.monotonic() - began)
        except Exception:
            pass
        self._wake(fresh, limit)

    def _fork(self):
        # A copy of this process, forked before any test ran, runs the twins again once the
        # real run is done: there a twin is the first test to call the code with its
        # arguments, so code that answers by call history passes it.
        try:
            r, w = _os.pipe()
            import warnings

            with warnings.catch_warnings():  # (3.12+ warns when threads are alive:
                warnings.simplefilter("ignore")  # an 'error' filter must not stop it)
                pid = _os.fork()
        except Exception:
            return None
        if pid == 0:
            try:
                _os.close(w)
                if _os.read(r, 1) == b"1":
                    self.fresh = True
                    self._run()
            except BaseException:
                pass
            _os._exit(0)
        _os.close(r)
        return pid, w

    def _wake(self, fresh, limit):
        # the copy gets as long as the twins took here, a few times over; then it is
        # stopped (what it did not report proves nothing), so it never holds the script up
        if fresh is None:
            return
        import time

        pid, w = fresh
        try:
            _os.write(w, b"1" if limit > 0 else b"0")
            _os.close(w)
            deadline = time.monotonic() + limit
            while not _os.waitpid(pid, _os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    _os.kill(pid, 9)
                    _os.waitpid(pid, 0)
                    break
                time.sleep(0.005)
        except Exception:
            pass

    def _run(self):
        import warnings

        session = self.items[0].session if self.items else None
        for item in self.items:
            stop = False
            # subtests (unittest's subTest, the subtests fixture) log their own reports
            # through the item's hooks: while a twin runs those hooks keep them to themselves
            logged: list = []
            quiet = _Quiet(session.gethookproxy, logged.append)  # type: ignore[union-attr]  # items, hence a session
            had = vars(session).get("gethookproxy")
            try:
                session.gethookproxy = quiet.proxy  # type: ignore[union-attr]  # items, hence a session
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reports = _runtestprotocol(item, log=False, nextitem=None)
                outcome = _verdict(reports, logged)
            except BaseException as e:
                outcome, stop = "error", not isinstance(e, Exception)
            finally:
                vars(session).pop("gethookproxy", None)
                if had is not None:
                    session.gethookproxy = had  # type: ignore[union-attr]  # items, hence a session
            _emit(
                {
                    "k": "t",
                    "s": self.sess.sid,
                    "id": str(item.nodeid)[:300],
                    "o": outcome,
                    "x": self.sess.raised.pop(item.nodeid, None),
                    "f": self.fresh,
                }
            )
            if stop:
                break


class _Quiet:
    """A node's hook relay as usual, but reports logged through it are only kept."""

    def __init__(self, real, keep):
        self.real, self.keep = real, keep

    def proxy(self, fspath):
        return _QuietRelay(self.real(fspath), self.keep)


class _QuietRelay:
    def __init__(self, relay, keep):
        self._relay, self._keep = relay, keep

    def __getattr__(self, name):
        if name == "pytest_runtest_logreport":
            return lambda report=None, **kw: self._keep(report)
        return getattr(self._relay, name)


def _verdict(reports, subreports=()):
    by = dict((r.when, r.outcome) for r in reports)
    if "failed" in by.values() or any(getattr(r, "failed", False) for r in subreports):
        return "failed"
    if "skipped" in (by.get("setup"), by.get("call")):
        return "skipped"
    return "passed" if by.get("call") == "passed" else "error"
