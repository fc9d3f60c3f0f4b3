"""Failing twins for pytest runs inside a script verifier (a Harbor ``test.sh``).

The script guard (:mod:`._script_guard`) sees tampering with pytest, but results that
compare equal to anything (``__eq__`` always true), or code that reads the expected value
from the asserting line, pass every real test without touching pytest. The pytest
verifier catches them with failing twins (:mod:`._twins`): altered copies of real tests no
honest code can pass. Here the harness does not start pytest, and the script reads
pytest's exit code or its report files, so the twins must not change any of them:

- **Planted in pytest only.** The suite is copied unchanged (a script may also run its
  files with ``unittest``, ``python file.py`` or a pytest without the guard, where a twin
  on disk would fail an honest run). The guard plugin gets each planned file's twin code
  and the hash of the file's text; when pytest imports a test module whose file has that
  exact text (wherever the script put it, under whatever name), the twin code is run in
  the module's namespace, compiled at the lines past the file's end it would have had.
- **Hidden from the run.** The collect report that holds a twin's items (its module, or
  its class) loses them before any other plugin sees that report: they are never
  collected, selected, deselected, counted, run or reported by pytest.
- **Run after the real tests.** A ``pytest_runtestloop`` hookwrapper runs each hidden item
  with ``runtestprotocol(item, log=False)`` once the real loop is done (every fixture torn
  down): no report is logged, so no terminal, JUnit or CTRF line and no failure count;
  the exit status is pytest's own. Each twin's outcome goes on the guard's channel.
- **Judged on the host** (:func:`twin_evidence`): a twin reported passed is evidence of
  tampering whatever the reward; a twin planted in a run that completed, whose original
  ran there, but that never reported, is evidence against a claimed pass.

- **And again, first, in a fresh copy.** Before the real loop the plugin forks a copy that
  waits; once the twins ran here it runs them again (reports on the channel only), so code
  that answers by call history meets a twin first there. It gets a few times the twins'
  own time and is then stopped: a copy that ends early proves nothing here.

Not covered: a script whose pytest does not load the guard (see :mod:`._script_guard`),
runs that copy the test files with changes, code that kills the fresh copy, and the
pytest verifier's control tests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from evoround.verifiers._twins import Twin, TwinPlan, node_parts

PLUGIN = r'''

_TWINS = @TWINS@
try:
    from _pytest.runner import runtestprotocol as _runtestprotocol
except Exception:
    _runtestprotocol = None


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


class _Planted(object):
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
        plan = max(plans, key=lambda p: sum(1 for a, b in zip(reversed(real),
                                                             reversed(p["file"].split("/")))
                                            if a == b))
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

        collector._getobj = _getobj

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
        hidden = [x for x in result if isinstance(x, pytest.Item)
                  and (getattr(x, "originalname", None) or x.name.split("[")[0]) in names]
        if hidden:
            result[:] = [x for x in result if not any(x is h for h in hidden)]
            self.items.extend(hidden)
            _emit({"k": "planted", "s": self.sess.sid,
                   "ids": [str(h.nodeid)[:300] for h in hidden]})

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
            logged = []
            quiet = _Quiet(session.gethookproxy, logged.append)
            had = vars(session).get("gethookproxy")
            try:
                session.gethookproxy = quiet.proxy
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reports = _runtestprotocol(item, log=False, nextitem=None)
                outcome = _verdict(reports, logged)
            except BaseException as e:
                outcome, stop = "error", not isinstance(e, Exception)
            finally:
                vars(session).pop("gethookproxy", None)
                if had is not None:
                    session.gethookproxy = had
            _emit({"k": "t", "s": self.sess.sid, "id": str(item.nodeid)[:300], "o": outcome,
                   "x": self.sess.raised.pop(item.nodeid, None), "f": self.fresh})
            if stop:
                break


class _Quiet(object):
    """A node's hook relay as usual, but reports logged through it are only kept."""

    def __init__(self, real, keep):
        self.real, self.keep = real, keep

    def proxy(self, fspath):
        return _QuietRelay(self.real(fspath), self.keep)


class _QuietRelay(object):
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
'''


def _prefix(source: str) -> str:
    return source if source.endswith("\n") else source + "\n"


def twin_payload(plan: TwinPlan, files: dict[str, str]) -> dict[str, list[dict[str, object]]]:
    """What the plugin needs: text hash of an original file -> its twins (file, the code
    appended to it, its line count before, the twin names)."""
    out: dict[str, list[dict[str, object]]] = {}
    for path, full in plan.sources.items():
        original = files[path]
        head = _prefix(original)
        if not full.startswith(head):
            continue
        digest = hashlib.sha256(original.encode()).hexdigest()
        out.setdefault(digest, []).append(
            {
                "file": path,
                "pad": head.count("\n"),
                "code": full[len(head) :],
                "names": [t.name for t in plan.twins if t.file == path],
            }
        )
    return out


def plugin_source(payload: dict[str, list[dict[str, object]]]) -> str:
    return PLUGIN.replace("@TWINS@", json.dumps(payload))


@dataclass
class TwinRecords:
    """One pytest run's twin records (see :func:`twin_evidence`)."""

    cmd: str
    completed: bool
    """The run ended with pytest's own status 0 or 1 (its test loop ran)."""
    reported: set[str] = field(default_factory=set)
    """Node ids of the real tests it reported."""
    planted: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    """Twin node id -> outcome."""


def _where(tw: Twin) -> str:
    return f"{tw.file}::{tw.cls}::{tw.original}" if tw.cls else f"{tw.file}::{tw.original}"


def twin_evidence(runs: Iterable[TwinRecords], plan: TwinPlan) -> tuple[list[str], list[str]]:
    """(evidence whatever the reward, evidence against a claimed pass) from the twins.

    A twin is matched by its name (unique in the suite) and its original by the twin's own
    node id (same file part and class, the original's name), so the script's rootdir and
    paths do not matter."""
    always: list[str] = []
    if_passing: list[str] = []
    for run in runs:
        for nodeid, outcome in run.results.items():
            tw = plan.twin_of(nodeid)
            if tw is not None and outcome == "passed":
                always.append(
                    f"pytest run `{run.cmd}`: a failing twin of {_where(tw)} (an altered copy "
                    "no honest code can pass) was reported passed"
                )
        if not run.completed:
            continue
        reported = {node_parts(n)[:3] for n in run.reported}
        for nodeid in run.planted:
            tw = plan.twin_of(nodeid)
            if tw is None or nodeid in run.results:
                continue
            file, cls, _, _ = node_parts(nodeid)
            if (file, cls, tw.original) in reported:
                if_passing.append(
                    f"pytest run `{run.cmd}`: the failing twin of {_where(tw)} never ran "
                    "although its original did (tests were removed)"
                )
    return list(dict.fromkeys(always)), list(dict.fromkeys(if_passing))
