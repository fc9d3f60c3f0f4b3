"""The process checklist: rule checks and LLM-judge checks over one round's evidence."""

from evoround.results import CheckOutcome, CheckResult, Evidence
from evoround.verifiers.checklist._changes import round_changes, write_changes
from evoround.verifiers.checklist._judge import JudgeConfig
from evoround.verifiers.checklist._model import RoundEvidence, WorkspaceDiff, match_any
from evoround.verifiers.checklist._rules import RULES, run_rule
from evoround.verifiers.checklist._score import (
    git_head,
    needs_commits,
    new_commits,
    round_checks,
    safe_diff,
    score_checks,
    score_round,
    snapshot_diff,
    write_checks,
)

__all__ = [
    "CheckOutcome",
    "match_any",
    "CheckResult",
    "Evidence",
    "JudgeConfig",
    "RULES",
    "RoundEvidence",
    "WorkspaceDiff",
    "git_head",
    "needs_commits",
    "new_commits",
    "round_checks",
    "safe_diff",
    "run_rule",
    "score_checks",
    "score_round",
    "snapshot_diff",
    "write_checks",
    "round_changes",
    "write_changes",
]
