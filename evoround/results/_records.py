"""Serialised result records. One :class:`RoundResult` is one line of results.jsonl."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from evoround.results._checks import CheckResult
from evoround.tasks import FailureClass


class Mode(StrEnum):
    mt = "mt"
    """Persistent: one session and one sandbox across rounds, fail-stop."""
    sr = "sr"
    """Fast-forward: each round alone, from the reference state of the previous one."""


class TestOutcome(StrEnum):
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"


class RoundStatus(StrEnum):
    """Why a round ended the way it did; kept apart from the score (``passed``)."""

    passed = "passed"
    failed = "failed"
    agent_timeout = "agent_timeout"
    agent_error = "agent_error"
    verifier_timeout = "verifier_timeout"
    infra = "infra"
    """The harness failed (image build, container died, daemon error): retried, never scored
    as the agent's failure; ``evoround run --retry-failed`` re-runs these attempts."""
    model_api = "model_api"
    """The model API kept failing after the agent's own retries (rate limit, outage)."""
    judge_error = "judge_error"
    """The LLM judge of the round's checks failed; the verdict on tests still stands."""
    verifier_error = "verifier_error"
    """The verifier produced no verdict (no or unreadable reward file, or a script that must
    exit 0 did not): not scored as a fail of the agent's work, yet the round is not passed."""
    setup_error = "setup_error"
    """The round's own set-up (``workdir/setup.sh`` or its healthcheck) failed before the
    agent ran, or the task's reference solution failed (the oracle's turn, or the reference
    state an SR round or a ``--rounds`` window starts from): the task or its environment is
    at fault, not the agent; never retried; the attempt stops."""
    integrity_violation = "integrity_violation"
    """The verifier caught the round forging its grade (a control test reported wrong, a
    report that disagrees with the harness's own record, tests removed from the run, ...).
    Never a pass, in no metric; the evidence is in ``integrity_evidence``."""


INFRA_STATUSES = frozenset({RoundStatus.infra})
"""Statuses that end an attempt for the harness's reasons: retried, and re-run by --retry-failed."""


class TestResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest class

    file: str
    name: str
    outcome: TestOutcome
    message: str = ""
    failure_class: FailureClass | None = None
    origin_round: int | None = None


class VerifierOutcome(BaseModel):
    passed: bool
    exit_code: int
    timed_out: bool = False
    duration_sec: float = 0.0
    tests: list[TestResult] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    error: str | None = None
    """Set when there is no verdict at all (e.g. no reward file): a verification error."""
    reward: float | None = None
    """Script verifiers: the ``reward`` value (reward.txt, or reward.json's ``reward``)."""
    rewards: dict[str, float] = Field(default_factory=dict)
    """Script verifiers: every numeric key of reward.json (``reward`` included)."""
    cases_passed: int | None = None
    cases_total: int | None = None
    """Counts reported by the suite itself (``CASE_SUMMARY``); None: count ``tests``."""
    integrity: list[str] = Field(default_factory=list)
    """Evidence of tampering with the grading; non-empty means the round is an
    ``integrity_violation`` whatever else the run says."""
    pass_threshold: float | dict[str, float] | None = None
    """Script verifiers: the ``min_reward`` the round's pass was judged on."""
    early_stop: bool | None = None
    """Script verifiers: the round's own ``min_reward`` was missed (Harbor's early stop):
    the attempt ends here. None: no round threshold (pytest, or none set)."""

    @property
    def n_passed(self) -> int:
        if self.cases_passed is not None:
            return self.cases_passed
        return sum(t.outcome is TestOutcome.passed for t in self.tests)

    @property
    def n_total(self) -> int:
        return self.cases_total if self.cases_total is not None else len(self.tests)


class Timings(BaseModel):
    agent_sec: float = 0.0
    snapshot_sec: float = 0.0
    verify_sec: float = 0.0
    setup_sec: float = 0.0


class ModelUsage(BaseModel):
    """The round's model calls as ``--proxy`` recorded them (every call, failed ones too)."""

    calls: int = 0
    failed: int = 0
    incomplete: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class RoundUsage(BaseModel):
    """The round's model tokens and their price (without ``--proxy`` too: summed from the
    agent's own usage reports in the trajectory)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    """USD from litellm's price map at record time; None means *unknown* (the model has no
    price there, or litellm is not installed), never free."""
    priced_model: str | None = None
    """The model name the price was looked up under (None when unknown)."""

    @classmethod
    def from_counts(cls, counts: list[dict[str, int]]) -> RoundUsage | None:
        """Sum per-call usage dicts in either wire format (OpenAI ``prompt/completion``,
        Anthropic ``input/output`` plus cache tokens); None when no call reported any."""
        prompt = completion = total = 0
        seen = False
        for u in counts:
            if not u:
                continue
            seen = True
            p = u.get("prompt_tokens")
            if p is None:
                p = sum(
                    u.get(k, 0)
                    for k in (
                        "input_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    )
                )
            c = u.get("completion_tokens", u.get("output_tokens", 0))
            prompt += p
            completion += c
            total += u.get("total_tokens", p + c)
        if not seen:
            return None
        return cls(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


class RoundResult(BaseModel):
    """The record of one executed round. Rounds never run (after fail-stop) have none."""

    schema_version: int = 1
    job: str
    task: str
    task_digest: str
    n_rounds: int
    mode: Mode
    attempt: int = Field(ge=1)
    round: int = Field(ge=1)
    agent: str
    model: str | None = None
    sandbox: str
    passed: bool
    status: RoundStatus
    error: str | None = None
    change_types: list[str] = Field(default_factory=list)
    tests_passed: int = 0
    tests_total: int = 0
    """Cases passed / cases of the round's verification (for script verifiers: their
    ``CASE_SUMMARY``); the case score is built from these."""
    reward: float | None = None
    """Script verifiers: the reward the suite wrote (None: pytest, or no reward)."""
    pass_threshold: float | dict[str, float] | None = None
    """Script verifiers: the ``min_reward`` this round's pass was judged on (None: pytest,
    or a record from before it was recorded)."""
    min_reward_semantics: str | None = None
    """Script verifiers: ``threshold`` or ``early_stop`` (the task's
    ``[verifier].min_reward_semantics``), what a round's own ``min_reward`` meant."""
    early_stop: bool | None = None
    """The round's own ``min_reward`` was missed, which ends the attempt (Harbor's early
    stop). None: the round sets none, or an older record (then: not passed and a round
    ``min_reward`` set, the rule before this was recorded)."""
    verifier_exit_code: int | None = None
    failure_classes: dict[FailureClass, int] = Field(default_factory=dict)
    """Failing tests per class; empty for passed rounds."""
    failing_tests: list[TestResult] = Field(default_factory=list)
    verifier_problems: list[str] = Field(default_factory=list)
    integrity_evidence: list[str] = Field(default_factory=list)
    """Why the round is an ``integrity_violation`` (empty otherwise)."""
    snapshot_id: str | None = None
    parent_snapshot_id: str | None = None
    timings: Timings = Field(default_factory=Timings)
    started_at: datetime
    finished_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    artifacts: str | None = None
    """Round artefact directory, relative to the job directory."""
    checks: list[CheckResult] = Field(default_factory=list)
    """The round's process checklist (also in the artefact dir as checks.json)."""
    model_usage: ModelUsage | None = None
    """Only with ``--proxy``: call count and token usage from the proxy's records."""
    usage: RoundUsage | None = None
    """Tokens and USD cost of the round's model calls; None: no call reported usage."""
    resumed_from: int | None = None
    """Lineage of a resumed MT attempt: the round whose snapshot and saved agent session this
    round continued from (the process that ran that round had died); None otherwise."""
    host: str | None = None
    """The host name of the machine that ran the round (on a cluster: which node; for an
    infra record the driver made because no round could run: the driver's). Records
    written before this field existed read as None. Never part of a figure."""

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.task, self.mode.value, self.attempt, self.round)

    @property
    def primary_failure_class(self) -> FailureClass | None:
        """The most telling class of a failed round: regression > stale > missed."""
        for cls in (
            FailureClass.regression,
            FailureClass.stale_behaviour,
            FailureClass.missed_requirement,
        ):
            if self.failure_classes.get(cls):
                return cls
        return None


def classify(tests: list[TestResult]) -> dict[FailureClass, int]:
    counts = Counter(t.failure_class for t in tests if t.failure_class is not None)
    return {cls: counts[cls] for cls in FailureClass if counts[cls]}
