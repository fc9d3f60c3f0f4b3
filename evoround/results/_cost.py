"""Tokens and USD over a set of round records (a round, an attempt, a job).

Why a type and not a float: a sum that includes a round whose model has no price is not a
smaller number, it is *unknown*; and a job whose agent made no model call cost nothing
(an oracle), which is neither. ``str()`` says which, for every report and the API.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evoround.results._records import RoundResult


@dataclass(frozen=True)
class Cost:
    tokens: int = 0
    usd: float | None = None
    """The sum in USD; None when no round reported usage or some round has no price."""
    rounds_with_usage: int = 0
    rounds_unpriced: int = 0
    """Rounds with tokens but no price in litellm's map: they make ``usd`` unknown."""

    @property
    def known(self) -> bool:
        return self.usd is not None

    def __str__(self) -> str:
        if not self.rounds_with_usage:
            return "-"  # no model call reported usage: nothing to price
        if self.usd is None:
            return "unknown"
        return f"${self.usd:.4f}"


def cost_of(records: Iterable[RoundResult]) -> Cost:
    tokens = usd = 0.0
    with_usage = unpriced = 0
    for r in records:
        u = r.usage
        if u is None:
            continue
        with_usage += 1
        tokens += u.total_tokens
        if u.cost_usd is None:
            unpriced += u.total_tokens > 0
        else:
            usd += u.cost_usd
    return Cost(
        tokens=int(tokens),
        usd=usd if with_usage and not unpriced else None,
        rounds_with_usage=with_usage,
        rounds_unpriced=unpriced,
    )
