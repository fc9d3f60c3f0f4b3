"""Tamper evidence for pytest runs *inside* a script verifier (a Harbor ``test.sh``).

The most common Harbor ``test.sh`` runs pytest (``pytest /tests/...``, ``python -m pytest``,
``uvx ... pytest``) and writes reward 1 when it exits 0. The tested module is imported by
those tests, so it runs inside that pytest process and could ``os._exit(0)`` at import,
rewrite the exit status from an ``atexit`` hook, force reports to "passed" or make
``runtest`` a no-op, and the script would write a full reward. The harness does not control
how the script starts pytest, so it cannot use the pytest verifier's runner
(:mod:`evoround.verifiers._guard`). Instead:

- **Plugin.** Every verification gets a generated plugin module with a random name in a
  random folder of the clone's scratch, next to a ``.dist-info`` that declares it as a
  ``pytest11`` entry point. The script runs with that folder prepended to ``PYTHONPATH``,
  so any pytest it starts with that environment (directly, ``python -m``, ``uv run`` /
  ``uvx`` with the environment passed through) autoloads the plugin. If the script clears
  the environment, sets its own ``PYTHONPATH``, uses ``python -I`` or sets
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``, the plugin is simply not found: no error, no
  evidence (an entry point is used rather than ``-p``, which would make pytest fail).
- **Channel.** The plugin appends records, each line prefixed with a per-run nonce, to a
  file at a random path baked into the module: a start record per pytest session (before
  any test module, hence any workspace code, is imported), every call-phase report (with
  whether the test's call really raised, captured by a ``pytest_runtest_call``
  hookwrapper) and every failing setup/teardown, replaced pytest internals, an end record
  with the session's exit status (``pytest_unconfigure``, last), and an exit record from
  an ``atexit`` hook registered before any workspace code ran (so it runs after every hook
  the tested code registers, and is missing when one of those ends the process).
- **Judging** (:func:`judge_channel`, on the host, after the script): see the function.

Code in the pytest process can in principle find the nonce and the channel and write
perfect records; that is a targeted attack on evoround. Every generic forgery of a pytest
run leaves one of the traces above.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evoround.verifiers._script_twins import TwinRecords, plugin_source, twin_evidence
from evoround.verifiers._twins import TwinPlan

CHANNEL_LIMIT = 32 << 20
"""Largest channel read back (about 200k reported tests)."""

_ADJ = ("quiet", "brisk", "amber", "lunar", "civic", "tidal", "polar", "noble", "rapid")
_NOUN = ("otter", "maple", "cobalt", "harbor", "falcon", "meadow", "quartz", "willow")

PLUGIN = r'''"""pytest plugin (generated per verification by evoround; see _script_guard.py)."""
import atexit as _atexit
import json as _json
import os as _os
import sys as _sys

import pytest

_NONCE = @NONCE@
_CHANNEL = @CHANNEL@
_MARK = @MARK@
_WORKDIR = @WORKDIR@
_HOOKS = ("pytest_pyfunc_call", "pytest_runtest_protocol")
_seq = [0]
_ended = []
_exit_watch = {}


def _emit(rec):
    rec["p"] = _os.getpid()
    try:
        data = (_NONCE + " " + _json.dumps(rec) + "\n").encode()
        fd = _os.open(_CHANNEL, _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT, 0o644)
        try:
            while data:
                data = data[_os.write(fd, data):]
        finally:
            _os.close(fd)
    except Exception:
        pass


def _internals():
    found = {}
    try:
        import builtins
        from _pytest import config as cfg, main as mn, python as py, reports as rep, runner as run
    except Exception:
        return found
    places = [(_sys, "exit"), (builtins, "SystemExit"), (cfg, "ExitCode"), (cfg, "main"),
              (cfg, "console_main"), (mn, "wrap_session"), (mn, "Session"),
              (py, "Function"), (py, "pytest_pyfunc_call"), (rep, "TestReport"),
              (run, "CallInfo"), (run, "call_and_report"), (run, "call_runtest_hook"),
              (run, "runtestprotocol"), (run, "pytest_runtest_makereport"),
              (run, "pytest_runtest_call")]
    for owner, name in places:
        if name in vars(owner):
            found[owner.__name__ + "." + name] = vars(owner)[name]
    for cls, name in ((getattr(py, "Function", None), "runtest"),
                      (getattr(rep, "TestReport", None), "from_item_and_call"),
                      (getattr(rep, "TestReport", None), "__init__"),
                      (getattr(run, "CallInfo", None), "from_call")):
        if isinstance(cls, type) and name in vars(cls):
            found[cls.__module__ + "." + cls.__name__ + "." + name] = vars(cls)[name]
    return found


def _impls(config):
    # the first-result implementations (not wrappers): those can skip a test's body
    found = {}
    try:
        for hook in _HOOKS:
            caller = getattr(config.hook, hook, None)
            for impl in (caller.get_hookimpls() if caller is not None else ()):
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


def _rc(session):
    try:
        return int(getattr(session, "exitstatus", None))
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
            what.append("the exit status changed after pytest finished (%s to %s)"
                        % (sess.rc, _rc(sess.session)))
    now, said = _internals(), set().union(*[sess.sent for sess in _ended])
    for label, obj in _exit_watch.items():
        if now.get(label) is not obj and label + " was replaced" not in said:
            what.append(label + " was replaced before the process exited")
    _emit({"k": "exit", "tampered": what[:20]})


class _Session(object):
    """One pytest session's state and its own hooks (a nested in-process run gets its own)."""

    def __init__(self, config, sid, mark):
        self.config, self.sid, self.mark = config, sid, mark
        self.internals, self.impls = _internals(), _impls(config)
        self.raised, self.tampered, self.sent, self.session = {}, set(), set(), None

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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
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
            _emit({"k": "r", "s": self.sid, "id": str(report.nodeid)[:300],
                   "w": report.when, "o": report.outcome, "x": raised})
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
'''


@dataclass(frozen=True)
class ScriptGuard:
    """One verification's plugin: where it lives in the sandbox and what it writes."""

    folder: str
    """Sandbox path of the folder put first on the script's ``PYTHONPATH``."""
    channel: str
    """Sandbox path of the channel file the plugin appends to."""
    nonce: str
    files: dict[str, str]
    """The plugin's files, relative to the verification's base folder (``copy_suite`` extra)."""

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run with the plugin folder prepended to the sandbox's own ``PYTHONPATH``
        (read inside the sandbox, so an image's or a task's ``PYTHONPATH`` is kept)."""
        prefix = (
            f'PYTHONPATH="{self.folder}${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH; exec "$@"'
        )
        return ["bash", "-c", prefix, "evoround-verify", *argv]


def make_guard(
    base: str, workdir: str, twins: dict[str, list[dict[str, object]]] | None = None
) -> ScriptGuard:
    """A plugin with random names under ``base`` (a fresh folder in the clone's scratch);
    ``twins``: the failing twins it plants (:func:`._script_twins.twin_payload`)."""
    rng = secrets.SystemRandom()
    module = f"{rng.choice(_ADJ)}_{rng.choice(_NOUN)}_{secrets.token_hex(4)}"
    plugin_dir, channel_dir = secrets.token_hex(6), secrets.token_hex(6)
    nonce = secrets.token_hex(16)
    channel = f"{base}/{channel_dir}/{secrets.token_hex(6)}.log"
    mark = f"{rng.choice(_ADJ).upper()}_{rng.choice(_NOUN).upper()}_{secrets.token_hex(3).upper()}"
    source = PLUGIN
    for key, value in (
        ("NONCE", nonce),
        ("CHANNEL", channel),
        ("MARK", mark),
        ("WORKDIR", workdir),
    ):
        source = source.replace(f"@{key}@", json.dumps(value))
    source += plugin_source(twins or {})
    dist = f"{plugin_dir}/{module}-0.dist-info"
    files = {
        f"{plugin_dir}/{module}.py": source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {module}\nVersion: 0\n",
        f"{dist}/entry_points.txt": f"[pytest11]\n{module} = {module}\n",
        f"{channel_dir}/.keep": "",
    }
    return ScriptGuard(f"{base}/{plugin_dir}", channel, nonce, files)


@dataclass
class _Run:
    args: list[str]
    nested: bool
    worker: bool
    pid: int
    rc: int | None = None
    ended: bool = False
    failed: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)
    planted: list[str] = field(default_factory=list)
    twins: dict[str, str] = field(default_factory=dict)


@dataclass
class GuardReport:
    """What the channel showed: evidence of tampering, and a line for the verifier log."""

    sessions: int = 0
    """Top-level pytest runs seen (not started by a running pytest)."""
    nested: int = 0
    """pytest runs started by a running pytest (xdist workers, pytester runs)."""
    evidence: list[str] = field(default_factory=list)
    """Proof of tampering whatever the reward (replaced internals, forced reports)."""
    if_passing: list[str] = field(default_factory=list)
    """Evidence only while the script claims a passing reward (unfinished runs, ...)."""
    twins: int = 0
    """Failing twins run (and reported) by the pytest runs, all runs together."""


_SUITE = re.compile(r"\S*verify-[0-9a-f]{32}/tests")
"""The verification's suite folder (``_script.run_script``), shown as Harbor's ``/tests``."""


def _short(text: str) -> str:
    return _SUITE.sub("/tests", text)


def _cmd(run: _Run) -> str:
    return _short(" ".join(run.args))[:160] or "pytest"


def judge_channel(raw: bytes | None, nonce: str, twins: TwinPlan | None = None) -> GuardReport:
    """The channel's records, judged. Lines without the nonce are ignored (not ours).

    Evidence whatever the reward: a test whose call raised but whose report says passed;
    pytest internals or a test-running hook replaced during the run, or a
    ``pytest_pyfunc_call`` / ``pytest_runtest_protocol`` implemented by workspace code.

    Evidence while the reward passes (top-level sessions only: not a pytest started by a
    running pytest, e.g. an xdist worker or a pytester run): a session that started but
    never ended (forced exit); a process that ended its session but never finished its
    interpreter exit (an ``atexit`` hook or a thread forced it, e.g. to rewrite the exit
    status); a session whose exit status is 0 while it reported failures; malformed
    records carrying the nonce.

    Failing twins (``twins``, see :mod:`._script_twins`): one reported passed is evidence
    whatever the reward; one planted in a completed run where its original ran, but never
    reported, is evidence while the reward passes.

    Not evidence: a session that failed honestly while the reward is full (a script that
    reads pytest's log, as SWE-bench-style scripts do, may ignore unrelated failures).
    """
    rep = GuardReport()
    if not raw:
        return rep
    seen = _read_records(raw, nonce, rep)
    top = [r for r in seen.runs.values() if not r.nested and not r.worker]
    rep.sessions, rep.nested = len(top), len(seen.runs) - len(top)
    for run in top:
        rep.if_passing += _unfinished(run, seen.exited)
    if twins is not None and twins.twins:
        records = [
            TwinRecords(_cmd(r), r.ended and r.rc in (0, 1), r.reported, r.planted, r.twins)
            for r in seen.runs.values()
        ]
        always, if_passing = twin_evidence(records, twins)
        rep.evidence += always
        rep.if_passing += if_passing
        rep.twins = sum(len(r.twins) for r in seen.runs.values())
    if seen.malformed:
        rep.if_passing.append(f"{seen.malformed} malformed record(s) on the pytest result channel")
    rep.evidence = list(dict.fromkeys(rep.evidence))[:20]
    return rep


Record = dict[str, Any]
"""One decoded channel record: JSON written inside the sandbox, so of any shape (every
field is checked or converted where it is used)."""


@dataclass
class _Seen:
    """The channel's records, gathered per pytest session."""

    runs: dict[str, _Run] = field(default_factory=dict)
    """session id -> the session."""
    exited: dict[int, list[str]] = field(default_factory=dict)
    """pid -> what its interpreter exit found replaced (a process that finished its exit)."""
    malformed: int = 0


def _read_records(raw: bytes, nonce: str, rep: GuardReport) -> _Seen:
    """Every record carrying the nonce, applied in order; evidence found on the way (a forced
    report, replaced internals) goes to ``rep``."""
    tag = nonce + " "
    seen = _Seen()
    for line in raw.decode(errors="replace").splitlines():
        if not line.startswith(tag):
            continue
        try:
            rec = json.loads(line[len(tag) :])
            kind, pid = str(rec["k"]), int(rec["p"])
        except (ValueError, KeyError, TypeError):
            seen.malformed += 1
            continue
        _record(seen, rep, kind, pid, rec)
    return seen


def _list(rec: Record, key: str) -> list[Any]:
    """A field that must be a list (anything else counts as empty)."""
    value = rec.get(key)
    return value if isinstance(value, list) else []


def _record(seen: _Seen, rep: GuardReport, kind: str, pid: int, rec: Record) -> None:
    """One record: a session's start, a process's exit, or a record of a started session
    (one of a session that never started is malformed; unknown kinds are ignored)."""
    run = seen.runs.get(str(rec.get("s")))
    if kind == "start":
        args = _list(rec, "args")
        seen.runs[str(rec.get("s"))] = _Run(
            [str(a) for a in args], bool(rec.get("nested")), bool(rec.get("worker")), pid
        )
    elif kind == "exit":
        what = _list(rec, "tampered")
        seen.exited[pid] = [str(w)[:300] for w in what]
    elif run is None:
        seen.malformed += 1  # a record of a session that never started
    else:
        handle = _RUN_RECORDS.get(kind)
        if handle is not None:
            handle(run, pid, rec, rep.evidence)


def _on_end(run: _Run, pid: int, rec: Record, evidence: list[str]) -> None:
    if pid == run.pid:  # (a forked child cannot end its parent's run)
        run.ended, run.rc = True, rec.get("rc") if isinstance(rec.get("rc"), int) else None


def _on_tamper(run: _Run, pid: int, rec: Record, evidence: list[str]) -> None:
    """Replaced internals; a nested run's own view counts only in an xdist worker (a
    pytester run may replace what it likes)."""
    if not run.nested or run.worker:
        evidence.append(f"pytest run `{_cmd(run)}`: {str(rec.get('what'))[:300]}")


def _on_planted(run: _Run, pid: int, rec: Record, evidence: list[str]) -> None:
    ids = _list(rec, "ids")
    run.planted += [str(i) for i in ids[:50]]


def _on_twin(run: _Run, pid: int, rec: Record, evidence: list[str]) -> None:
    nodeid = str(rec.get("id"))
    if run.twins.get(nodeid) != "passed":  # (a forked child may report it again)
        run.twins[nodeid] = str(rec.get("o"))


def _on_report(run: _Run, pid: int, rec: Record, evidence: list[str]) -> None:
    """A test's report: a failure counts for the session (its own process only); a call
    that raised but is reported passed is a forced report."""
    run.reported.add(str(rec.get("id")))
    nodeid, outcome = _short(str(rec.get("id")))[:200], rec.get("o")
    if outcome == "failed" and pid == run.pid:  # (not a forked child's own view)
        run.failed.append(nodeid)
    if outcome == "passed" and rec.get("x") is True and (not run.nested or run.worker):
        evidence.append(
            f"pytest run `{_cmd(run)}`: {nodeid} raised in its call but was "
            "reported passed (a forced report)"
        )


_RUN_RECORDS: dict[str, Callable[[_Run, int, Record, list[str]], None]] = {
    "end": _on_end,
    "tamper": _on_tamper,
    "planted": _on_planted,
    "t": _on_twin,
    "r": _on_report,
}
"""What each kind of record of a started session does (``k`` of the record)."""


def _unfinished(run: _Run, exited: dict[int, list[str]]) -> list[str]:
    """Evidence (while the reward passes) that a top-level session did not end as pytest
    ends one: a forced exit, an interrupted interpreter exit, internals replaced at exit,
    or exit status 0 with failures."""
    if not run.ended:
        return [
            f"a pytest run inside the script (`{_cmd(run)}`) ended without finishing: "
            "its process was made to exit early (a forced exit)"
        ]
    if run.pid not in exited:
        return [
            f"the pytest run `{_cmd(run)}` finished (exit status {run.rc}) but its "
            "process never completed its exit: an atexit hook or a thread ended it "
            "(a rewritten exit status)"
        ]
    if exited[run.pid]:
        return [f"the pytest run `{_cmd(run)}`: {w}" for w in exited[run.pid]]
    if run.rc == 0 and run.failed:
        return [
            f"the pytest run `{_cmd(run)}` exited 0 while {len(run.failed)} test(s) "
            f"failed (first: {run.failed[0]})"
        ]
    return []
