"""The rule registry and the helpers every rule uses: verdicts, params, outcomes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evoround.results import CheckOutcome, Evidence
from evoround.verifiers.checklist._model import RoundEvidence


class RuleParamError(ValueError):
    """The task author gave a rule wrong params (reported as ``error``)."""


@dataclass
class Verdict:
    result: CheckOutcome
    detail: str = ""
    evidence: list[Evidence] = field(default_factory=list)


RuleFn = Callable[[dict[str, Any], RoundEvidence], Verdict]


@dataclass(frozen=True)
class Rule:
    name: str
    fn: RuleFn
    needs: frozenset[str]
    doc: str


RULES: dict[str, Rule] = {}


def rule(name: str, *needs: str) -> Callable[[RuleFn], RuleFn]:
    def deco(fn: RuleFn) -> RuleFn:
        RULES[name] = Rule(name, fn, frozenset(needs), (fn.__doc__ or "").strip())
        return fn

    return deco


def param(params: dict[str, Any], key: str, default: Any = ..., kind: type | None = None) -> Any:
    if key not in params:
        if default is ...:
            raise RuleParamError(f"missing param {key!r}")
        return default
    val = params[key]
    if kind is not None and not isinstance(val, kind):
        raise RuleParamError(f"param {key!r} must be {kind.__name__}")
    return val


def param_regex(params: dict[str, Any], key: str) -> re.Pattern[str]:
    try:
        return re.compile(param(params, key, kind=str))
    except re.error as e:
        raise RuleParamError(f"param {key!r}: bad regex: {e}") from None


def param_globs(params: dict[str, Any], key: str, default: Any = ...) -> list[str]:
    val = param(params, key, default)
    return [val] if isinstance(val, str) else list(val)


PASS = CheckOutcome.passed
FAIL = CheckOutcome.failed
NA = CheckOutcome.not_applicable


def cut(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "…"


# ---- commands ------------------------------------------------------------------
