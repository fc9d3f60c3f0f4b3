"""Script verifier: Harbor's ``tests/test.sh`` style, where a script writes a reward file.

Harbor suites write ``/logs/verifier/reward.txt`` (or ``reward.json``). That absolute path
does not exist in the local sandbox (and must not be shared between verifications), so the
reward file lives in a fresh directory under the verification sandbox's scratch dir and is
handed to the script through environment variables:

- ``EVOROUND_REWARD_FILE``  the reward file (``.../logs/verifier/reward.txt``)
- ``EVOROUND_VERIFIER_DIR`` its directory (Harbor's ``/logs/verifier``)
- ``EVOROUND_LOGS_DIR``     Harbor's ``/logs``
- ``EVOROUND_TESTS_DIR``    the copied suite (Harbor's ``/tests``)
- ``EVOROUND_WORKDIR``      the workspace (Harbor's ``/app``)

The importers rewrite those Harbor paths into these variables.

Reading the verdict as the benchmark does (Harbor's verifier, EvoCode-Bench's scripts):

- ``reward.json`` first (a flat object; its numeric, non-boolean values are the rewards; a
  missing ``reward`` key is filled from ``reward.txt`` if that exists), else ``reward.txt``
  (one number). No file, an empty file or an unreadable one is a **verification error**
  (no verdict), not a fail.
- The round passes when every threshold is met: ``reward >= min_reward`` (0.999 by default,
  EvoCode-Bench's threshold; a table of thresholds for reward.json keys is allowed).
- A non-zero exit of the script: ``verifier.nonzero_exit`` says whether it fails the round
  (evoround's own tasks), is ignored (Harbor) or is a verification error (harbor_multiturn).
- Cases: EvoCode-Bench's ``test.sh`` prints one ``CASE_RESULT case_id=... status=...`` line per
  case and a ``CASE_SUMMARY total_cases= success_count= fail_count=`` line. The counts are
  read exactly as the benchmark's ``leaderboard.py`` reads them (:func:`parse_cases`): the
  first summary, else 0 of 0 cases (case ratio 0), whatever result lines there are; the
  result lines give the failing cases with their messages. Summaries that disagree (with
  each other or the result lines) are recorded problems, not a change of the counts. The
  agent's own code runs inside the script and may print such lines too: a case reported
  twice with two outcomes, or a full reward while a case failed, is an
  ``integrity_violation`` (evidence recorded).
- pytest runs inside the script: a guard plugin (:mod:`evoround.verifiers._script_guard`)
  is autoloaded by any pytest the script starts with its environment; a run it saw end
  early, end without finishing its exit, exit 0 with failures, a forced report or replaced
  pytest internals are evidence of tampering (``integrity_violation``).
- Rewards are read with the sandbox's safe reads (no symlink followed, regular files only,
  size-capped) from a logs folder with a random name made for this verification.

The suite is copied from the task directory on the host, outside the workspace, exactly like
the pytest verifier does.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shlex
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from evoround.results import TestOutcome, TestResult, VerifierOutcome
from evoround.sandboxes import ExecResult, Sandbox, UnsafeFile
from evoround.tasks import ActiveTest
from evoround.verifiers._pytest import copy_suite, suite_sources
from evoround.verifiers._script_canary import Canary, canary_evidence, canary_suite
from evoround.verifiers._script_guard import CHANNEL_LIMIT, GuardReport, judge_channel, make_guard
from evoround.verifiers._script_twins import twin_payload
from evoround.verifiers._twins import TwinPlan, plan_twins

DEFAULT_MIN_REWARD = 0.999
MAX_CASE_RESULTS = 500
"""Cap on parsed CASE_RESULT lines per round (the output is agent-influenced)."""

# EvoCode-Bench's own pattern, used as it uses it (UniPat-AI/EvoCodeBench,
# evaluation/viz/leaderboard.py: SUMMARY_RE with re.search): the first match anywhere in
# the output, one space between the fields, any text before or after it on the line.
_SUMMARY = re.compile(r"CASE_SUMMARY total_cases=(\d+) success_count=(\d+) fail_count=(\d+)")
_RESULT = re.compile(r"CASE_RESULT\s+(.*)$", re.M)
_FIELD = re.compile(r'([A-Za-z_][\w-]*)=(?:"([^"]*)"|(\S*))')


class RewardError(ValueError):
    """No usable reward: a verification error."""


def parse_reward_files(json_raw: bytes | None, txt_raw: bytes | None) -> dict[str, float]:
    """Rewards from ``reward.json`` / ``reward.txt`` with Harbor's precedence (json first)."""

    def txt_value() -> float:
        assert txt_raw is not None
        text = txt_raw.decode(errors="replace").strip()
        if not text:
            raise RewardError("reward.txt is empty")
        try:
            value = float(text)
        except ValueError:
            raise RewardError(f"reward.txt is not a number: {text[:60]!r}") from None
        if math.isnan(value):
            raise RewardError("reward.txt is NaN")
        return value

    if json_raw is not None:
        try:
            data = json.loads(json_raw.decode(errors="replace") or "null")
        except json.JSONDecodeError as e:
            raise RewardError(f"reward.json is not JSON: {e}") from None
        if not isinstance(data, dict):
            raise RewardError("reward.json is not a JSON object")
        rewards = {
            str(k): float(v)
            for k, v in data.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v)
        }
        if "reward" not in rewards and txt_raw is not None:
            rewards["reward"] = txt_value()
        if not rewards:
            raise RewardError("reward.json has no numeric values")
        return rewards
    if txt_raw is not None:
        return {"reward": txt_value()}
    raise RewardError("the script wrote no reward file (reward.txt or reward.json)")


def parse_reward(raw: bytes, name: str) -> float:
    """One reward file on its own (``reward.txt`` or ``reward.json``): its ``reward`` value."""
    rewards = parse_reward_files(
        raw if name.endswith(".json") else None, None if name.endswith(".json") else raw
    )
    if "reward" not in rewards:
        raise RewardError(f"{name} has no 'reward' value")
    return rewards["reward"]


def meets(rewards: dict[str, float], threshold: float | dict[str, float]) -> bool:
    """Harbor's ``min_reward`` test: every named reward at least its threshold (absent: fail)."""
    wanted = {"reward": threshold} if isinstance(threshold, int | float) else threshold
    return all(rewards.get(k, -math.inf) >= float(v) for k, v in wanted.items())


@dataclass(frozen=True)
class Cases:
    passed: int
    total: int
    """The round's case counts as EvoCode-Bench's leaderboard.py reads them: the first
    ``CASE_SUMMARY`` line, else 0 of 0 (its case ratio is then 0)."""
    results: tuple[TestResult, ...]
    problems: tuple[str, ...] = ()
    """Disagreements among the case lines, recorded; the counts stay the benchmark's."""
    integrity: tuple[str, ...] = ()
    """Evidence that the case lines were tampered with (a case reported both ways)."""

    @property
    def any_failed(self) -> bool:
        return self.passed < self.total or any(
            r.outcome is not TestOutcome.passed for r in self.results
        )


def _origin_round(value: str | None) -> int | None:
    m = re.search(r"(\d+)\s*$", value or "")
    return int(m.group(1)) if m else None


def parse_cases(stdout: str, script: str) -> Cases:
    """``CASE_RESULT`` and ``CASE_SUMMARY`` lines of a suite's stdout.

    The counts are exactly the benchmark's (the first summary; none: 0 of 0, even with
    result lines); the result lines give the failing cases and their messages. The tested
    code runs inside the script and may print a summary first: what the benchmark counts
    is counted, and the disagreement is a recorded problem (the round's pass depends on
    the reward alone, never on these lines)."""
    results, evidence, capped = _case_results(stdout, script)
    summaries = [tuple(int(x) for x in m.groups()) for m in _SUMMARY.finditer(stdout)]
    if not summaries:
        return Cases(0, 0, tuple(results), integrity=tuple(evidence))
    total, ok_n, fail_n = summaries[0]
    problems: list[str] = []
    n_ok = sum(r.outcome is TestOutcome.passed for r in results)
    if len(set(summaries)) > 1:
        problems.append(
            f"{len(set(summaries))} different CASE_SUMMARY lines; the first counts "
            "(as EvoCode-Bench's leaderboard.py)"
        )
    elif ok_n + fail_n != total:
        problems.append(f"CASE_SUMMARY counts do not add up ({ok_n} + {fail_n} != {total})")
    elif results and not capped and (total, ok_n) != (len(results), n_ok):
        problems.append(
            f"CASE_SUMMARY says {ok_n}/{total} passed, the CASE_RESULT lines {n_ok}/{len(results)}"
        )
    return Cases(ok_n, total, tuple(results), tuple(problems), tuple(evidence))


def _case_results(stdout: str, script: str) -> tuple[list[TestResult], list[str], bool]:
    """(one result per case id, in order of first report; evidence of a case reported both
    passed and failed; whether :data:`MAX_CASE_RESULTS` cut the lines short)."""
    results: list[TestResult] = []
    seen: dict[str, bool] = {}
    evidence: list[str] = []
    for m in _RESULT.finditer(stdout):
        if len(results) >= MAX_CASE_RESULTS:
            return results, evidence, True
        fields = {
            f.group(1): f.group(2) if f.group(2) is not None else f.group(3)
            for f in _FIELD.finditer(m.group(1))
        }
        ok = fields.get("status", "").lower() in ("success", "pass", "passed", "ok")
        case_id = fields.get("case_id") or ""
        if case_id in seen:  # a repeat: the same line again, or a flipped outcome
            if seen[case_id] != ok:
                evidence.append(f"CASE_RESULT {case_id[:80]} reported both passed and failed")
            continue
        if case_id:
            seen[case_id] = ok
        results.append(_case_result(fields, ok, case_id or f"case-{len(results) + 1}", script))
    return results, evidence, False


def _case_result(fields: dict[str, str], ok: bool, name: str, script: str) -> TestResult:
    """One ``CASE_RESULT`` line as a test result (a failure's message: its reason and the
    expected and actual values it gives)."""
    detail = [fields.get("failure_reason", "")]
    for key in ("expected", "actual"):
        if fields.get(key) and fields[key] != "n/a":
            detail.append(f"{key}: {fields[key]}")
    if fields.get("requirement_ref"):
        name += f" [{fields['requirement_ref']}]"
    return TestResult(
        file=script,
        name=name,
        outcome=TestOutcome.passed if ok else TestOutcome.failed,
        message="" if ok else "; ".join(d for d in detail if d)[:500],
        origin_round=_origin_round(fields.get("origin_step")),
    )


@dataclass(frozen=True)
class _Reading:
    """What the reward files and the script's run say, before the integrity checks."""

    rewards: dict[str, float]
    error: str | None
    """No verdict (a verification error), or None."""
    problems: list[str]
    claims_pass: bool
    """The run says the round passed (rewards met, no error, an accepted exit)."""


def run_script(
    sandbox: Sandbox,
    tests: list[ActiveTest],
    round_index: int,
    *,
    script: str,
    timeout: float,
    artifacts: Path | None = None,
    min_reward: float | dict[str, float] = DEFAULT_MIN_REWARD,
    nonzero_exit: str = "fail",
    env: dict[str, str] | None = None,
    fresh: Callable[[], AbstractContextManager[Sandbox]] | None = None,
) -> VerifierOutcome:
    """Copy the suite into ``sandbox`` (a clone of the round's snapshot), run ``script``.

    ``fresh`` makes another clone of the same snapshot: a claimed pass is checked there by
    the canary run (:mod:`._script_canary`); without it there is no canary."""
    base = f"{sandbox.scratch.rstrip('/')}/verify-{uuid.uuid4().hex}"
    verifier_dir = f"{base}/logs/verifier"
    modules, conftests = suite_sources(tests)
    twins = plan_twins(modules, conftests=conftests)
    guard = make_guard(base, sandbox.workdir, twin_payload(twins, modules))
    # one archive in: the suite, the (empty) log folders the script writes to, the guard
    copy_suite(
        sandbox,
        tests,
        base,
        under="tests",
        extra={"logs/verifier/.keep": "", "logs/artifacts/.keep": "", **guard.files},
    )
    entry = next((t for t in tests if t.path == script), None)
    if entry is None:
        problem = f"the active suite has no {script} (verifier.script)"
        return VerifierOutcome(passed=False, exit_code=-1, problems=[problem], error=problem)
    argv = ["bash", f"{base}/tests/{script}"]
    start = time.monotonic()
    res = sandbox.exec(
        guard.wrap(argv), timeout=timeout, cwd=sandbox.workdir, env=_script_env(sandbox, base, env)
    )
    duration = time.monotonic() - start
    sandbox.stop_strays()  # nothing the tested code started may rewrite the reward now
    json_raw, txt_raw, unsafe = _read_rewards(sandbox, verifier_dir)
    guarded = _read_guard(sandbox, guard.channel, guard.nonce, twins)
    cases = parse_cases(res.stdout, script)
    reading = _read_run(json_raw, txt_raw, cases, res, timeout, nonzero_exit, min_reward)
    rewards, error, problems = reading.rewards, reading.error, reading.problems
    integrity = _run_evidence(unsafe, cases, guarded, reading)
    reward = rewards.get("reward")
    if reading.claims_pass and not integrity and fresh is not None:
        integrity += _canary_findings(fresh, tests, cases, script, timeout, env, min_reward)
    passed = reading.claims_pass and not integrity
    if artifacts is not None:
        log = (
            f"$ {shlex.join(argv)}\n[exit {res.exit_code}] [rewards {rewards}] "
            f"[pytest runs seen by the guard: {guarded.sessions}, nested: {guarded.nested}] "
            f"[failing twins run: {guarded.twins} of {len(twins.twins)} planned]\n"
        )
        _save_artifacts(artifacts, log, res, rewards, json_raw is not None)
    return VerifierOutcome(
        passed=passed,
        exit_code=res.exit_code,
        timed_out=res.timed_out,
        duration_sec=duration,
        tests=list(cases.results) or [_one_case(script, entry, passed, reward, res)],
        problems=problems,
        error=error,
        reward=reward,
        rewards=rewards,
        cases_passed=cases.passed,
        cases_total=cases.total,
        integrity=integrity,
        pass_threshold=min_reward,
    )


def _run_evidence(
    unsafe: list[str], cases: Cases, guarded: GuardReport, reading: _Reading
) -> list[str]:
    """What the run itself shows against a pass: unsafe reward files, inconsistent cases,
    the guard's findings (some count only against a claimed pass, see _script_guard), and a
    full reward beside failed cases."""
    integrity = unsafe + list(cases.integrity) + guarded.evidence
    if reading.claims_pass:
        integrity += guarded.if_passing
    reward = reading.rewards.get("reward")
    failed_cases = [r for r in cases.results if r.outcome is not TestOutcome.passed]
    if reward is not None and reward >= 1.0 and failed_cases:
        integrity.append(f"reward {reward:g} while {len(failed_cases)} case(s) failed")
    return integrity


def _canary_findings(
    fresh: Callable[[], AbstractContextManager[Sandbox]],
    tests: list[ActiveTest],
    cases: Cases,
    script: str,
    timeout: float,
    env: dict[str, str] | None,
    min_reward: float | dict[str, float],
) -> list[str]:
    """A claimed pass re-checked by the canary run in a fresh clone (none: no finding)."""
    canary = canary_suite(_texts(tests))
    if canary is None:
        return []
    real_ids = {r.name.split(" [", 1)[0] for r in cases.results}
    with fresh() as other:
        results, claims = _run_canary(other, tests, canary, script, timeout, env, min_reward)
    return canary_evidence(canary, results, claims, real_ids)


def _texts(tests: list[ActiveTest]) -> dict[str, str]:
    """The suite's Python files as text (for the canary)."""
    out: dict[str, str] = {}
    for t in tests:
        if t.path.endswith(".py"):
            with contextlib.suppress(OSError):
                out[t.path] = t.source.read_text(encoding="utf-8", errors="replace")
    return out


def _run_canary(
    sandbox: Sandbox,
    tests: list[ActiveTest],
    canary: Canary,
    script: str,
    timeout: float,
    env: dict[str, str] | None,
    min_reward: float | dict[str, float],
) -> tuple[tuple[TestResult, ...], bool]:
    """Run ``script`` on the canary copy of the suite in ``sandbox`` (a fresh clone): its
    case results and whether it claims a pass (any exit accepted: a forger's exit code
    proves nothing either way)."""
    base = f"{sandbox.scratch.rstrip('/')}/verify-{uuid.uuid4().hex}"
    extra = {f"tests/{path}": text for path, text in canary.files.items()}
    copy_suite(
        sandbox,
        tests,
        base,
        under="tests",
        extra={"logs/verifier/.keep": "", "logs/artifacts/.keep": "", **extra},
    )
    res = sandbox.exec(
        ["bash", f"{base}/tests/{script}"],
        timeout=timeout,
        cwd=sandbox.workdir,
        env=_script_env(sandbox, base, env),
    )
    sandbox.stop_strays()
    json_raw, txt_raw, _ = _read_rewards(sandbox, f"{base}/logs/verifier")
    cases = parse_cases(res.stdout, script)
    reading = _read_run(json_raw, txt_raw, cases, res, timeout, "ignore", min_reward)
    return cases.results, reading.claims_pass


def _script_env(sandbox: Sandbox, base: str, env: dict[str, str] | None) -> dict[str, str]:
    """The task's environment and the variables that stand for Harbor's fixed paths (see the
    module docstring); ours win."""
    verifier_dir = f"{base}/logs/verifier"
    return {
        **(env or {}),
        "EVOROUND_TESTS_DIR": f"{base}/tests",
        "EVOROUND_LOGS_DIR": f"{base}/logs",
        "EVOROUND_VERIFIER_DIR": verifier_dir,
        "EVOROUND_REWARD_FILE": f"{verifier_dir}/reward.txt",
        "EVOROUND_WORKDIR": sandbox.workdir,
        "EVOROUND_PYTHON": sandbox.python,
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _read_rewards(
    sandbox: Sandbox, verifier_dir: str
) -> tuple[bytes | None, bytes | None, list[str]]:
    """(reward.json, reward.txt, evidence): each read safely, None when absent or unsafe; an
    unsafe one (a link, FIFO or oversized file where a reward belongs) is evidence."""
    unsafe: list[str] = []

    def read(name: str) -> bytes | None:
        try:
            return sandbox.read_file(f"{verifier_dir}/{name}")
        except UnsafeFile as e:  # a link, FIFO or oversized file where a reward belongs
            unsafe.append(f"{name}: {str(e).rsplit(': ', 1)[-1]}")
            return None
        except (FileNotFoundError, OSError, KeyError):
            return None

    json_raw, txt_raw = read("reward.json"), read("reward.txt")
    return json_raw, txt_raw, unsafe


def _read_run(
    json_raw: bytes | None,
    txt_raw: bytes | None,
    cases: Cases,
    res: ExecResult,
    timeout: float,
    nonzero_exit: str,
    min_reward: float | dict[str, float],
) -> _Reading:
    """The rewards, the verification error (if any), the problems and whether the run
    claims a pass."""
    problems: list[str] = []
    error: str | None = None
    rewards: dict[str, float] = {}
    try:
        rewards = parse_reward_files(json_raw, txt_raw)
    except RewardError as e:
        error = str(e)
    problems += cases.problems
    if error and cases.any_failed:
        # No usable reward, but the script's case lines already say the work failed (a
        # process of the tested code may have torn the file): a fail, not a lost verdict.
        problems.append(f"{error}; the case lines show failures")
        error = None
    if res.timed_out:
        problems.append(f"verifier timed out after {timeout:.0f}s")
        error = None  # a timeout is its own status
    elif res.exit_code != 0 and nonzero_exit == "error":
        error = f"the verifier script exited {res.exit_code}"
    if error:
        problems.append(error)
    claims_pass = (
        not res.timed_out
        and error is None
        and (res.exit_code == 0 or nonzero_exit == "ignore")
        and meets(rewards, min_reward)
    )
    return _Reading(rewards, error, problems, claims_pass)


def _save_artifacts(
    artifacts: Path, log: str, res: ExecResult, rewards: dict[str, float], had_json: bool
) -> None:
    """The run's log and output, and the rewards as read, for people."""
    artifacts.mkdir(parents=True, exist_ok=True)
    reward = rewards.get("reward")
    (artifacts / "verifier.log").write_text(log + res.stdout + "\n" + res.stderr, "utf-8")
    (artifacts / "test-stdout.txt").write_text(res.stdout, encoding="utf-8")
    if reward is not None:
        (artifacts / "reward.txt").write_text(f"{reward}\n", encoding="utf-8")
    if had_json and rewards:
        (artifacts / "reward.json").write_text(json.dumps(rewards), encoding="utf-8")


def _one_case(
    script: str, entry: ActiveTest, passed: bool, reward: float | None, res: ExecResult
) -> TestResult:
    """One synthetic case: a script suite without CASE lines is one verdict."""
    message = "" if passed else f"reward={reward} exit={res.exit_code}"
    tail = (res.stderr.strip() or res.stdout.strip()).splitlines()
    if not passed and tail:
        message += ": " + tail[-1][:300]
    return TestResult(
        file=script,
        name="reward",
        outcome=TestOutcome.passed if passed else TestOutcome.failed,
        message=message,
        origin_round=entry.origin_round,
    )


def _read_guard(sandbox: Sandbox, channel: str, nonce: str, twins: TwinPlan) -> GuardReport:
    """The guard plugin's channel, read safely and judged (no file: no pytest run seen)."""
    try:
        raw = sandbox.read_file(channel, limit=CHANNEL_LIMIT)
    except UnsafeFile as e:  # a link, FIFO or oversized file where our channel belongs
        return GuardReport(if_passing=[f"the pytest result channel: {e}"])
    except (FileNotFoundError, OSError, KeyError):
        return GuardReport()
    return judge_channel(raw, nonce, twins)
