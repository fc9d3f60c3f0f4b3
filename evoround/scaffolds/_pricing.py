"""What a round's model calls cost, in USD, from litellm's price map.

Why here: the agents are the room that knows litellm, and the engine prices a round once,
when it records it (the price of the day the round ran). A model the map does not know
(a replay server, a local model, a new release) is *unknown*, never 0: a budget or a
report must not read "free" where it means "no price".
"""

from __future__ import annotations

import os

from evoround.results import RoundUsage


def price_usage(model: str | None, usage: RoundUsage | None) -> RoundUsage | None:
    """``usage`` with ``cost_usd`` filled from litellm's map when the model has a price.

    Anthropic cache tokens are counted as prompt tokens and priced at the input rate (the
    record keeps no split), so a Claude Code round's price is an upper bound."""
    if usage is None or not model:
        return usage
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled map: offline
    try:
        import litellm
    except ImportError:  # the lean install: no price map, so no price
        return usage
    litellm.suppress_debug_info = True
    try:
        prompt_usd, completion_usd = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
    except Exception:  # litellm raises its own errors for unmapped models
        return usage
    return usage.model_copy(
        update={"cost_usd": float(prompt_usd + completion_usd), "priced_model": model}
    )


def has_price(model: str | None) -> bool:
    """Whether litellm's map prices ``model`` (a ``--max-cost`` budget needs it)."""
    from evoround.results import RoundUsage as _U

    priced = price_usage(model, _U(prompt_tokens=1000, completion_tokens=1000))
    return priced is not None and priced.cost_usd is not None
