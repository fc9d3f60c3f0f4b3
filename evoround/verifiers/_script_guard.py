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

from evoround.verifiers._programs import program
from evoround.verifiers._script_twins import TwinRecords, twin_evidence
from evoround.verifiers._twins import TwinPlan

CHANNEL_LIMIT = 32 << 20
"""Largest channel read back (about 200k reported tests)."""

_ADJ = ("quiet", "brisk", "amber", "lunar", "civic", "tidal", "polar", "noble", "rapid")
_NOUN = ("otter", "maple", "cobalt", "harbor", "falcon", "meadow", "quartz", "willow")

PLUGIN = program("script_plugin.py")
"""The plugin's source (``guard/script_plugin.py``), the same for every verification; its
settings go beside it (:func:`make_guard`)."""


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
    settings = {
        "nonce": nonce,
        "channel": channel,
        "mark": mark,
        "workdir": workdir,
        "twins": twins or {},
    }
    dist = f"{plugin_dir}/{module}-0.dist-info"
    files = {
        f"{plugin_dir}/{module}.py": PLUGIN,
        f"{plugin_dir}/{module}.json": json.dumps(settings),
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
