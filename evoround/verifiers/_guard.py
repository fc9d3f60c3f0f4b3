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

from evoround.verifiers._programs import program

EXIT_TESTS_FAILED = 1
"""pytest's return code when some tests failed: what an honest run returns (the control)."""

RUNNER = program("pytest_runner.py")
"""The runner's source (``guard/pytest_runner.py``), written into the sandbox as is."""

HARNESS_SHARE = 0.04
"""The share of the real test loop's time the harness's tests (controls and twins) may take
together, once in the run and once in the fresh copy (see the runner): at most about 8 % of
the suite's test time in all, beyond :data:`HARNESS_FLOOR` (issue 32: a 25 s suite verifies
within 1.1x of plain pytest)."""
HARNESS_FLOOR = 0.6
"""Seconds the harness's tests may always take (per run and per fresh copy), however short the
real loop; one started after that is spent gets :data:`HARNESS_SLICE`."""
HARNESS_SLICE = 0.05
"""Seconds a harness test started after the allowance is spent may take: enough for a forged
pass (which comes at once) and for a control, not for a twin of a slow test (whose honest end
is a failure anyway). Was 0.5 s: three twins of 1 s tests cost 2 x 2 s on a 25 s suite."""

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
        "slice": HARNESS_SLICE,
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
