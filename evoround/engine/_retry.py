"""Failure classes that are not the agent's fault, and how infra failures are retried.

Why: a flaky daemon or a container that dies must not be scored as an agent failing a
round. Infra failures are retried (tenacity, exponential backoff) and only after the
limit are they recorded, as ``infra``; ``evoround run --retry-failed`` re-runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from evoround.sandboxes import SandboxError
from evoround.settings import settings

if TYPE_CHECKING:
    from evoround.results import RoundResult

T = TypeVar("T")

_MODEL_API_ERRORS = (
    "APIConnectionError",
    "APIError",
    "RateLimitError",
    "ServiceUnavailableError",
    "InternalServerError",
    "Timeout",
    "APITimeoutError",
    "BadGatewayError",
)


def is_model_api_error(exc: BaseException) -> bool:
    """Whether an exception out of an agent is its model API failing (litellm/openai/anthropic).

    Matched by class name along the MRO so no provider SDK must be importable here.
    """
    for cls in type(exc).__mro__:
        if cls.__name__ in _MODEL_API_ERRORS and cls.__module__.split(".")[0] in (
            "litellm",
            "openai",
            "anthropic",
            "httpx",
        ):
            return True
    return False


class InfraFailure(SandboxError):
    """An attempt hit an infra failure (recorded as a round with status ``infra``).

    Raised instead of recording while retries remain, so the executor can back off and
    continue the attempt from its last recorded round, as a resume would.
    """

    def __init__(self, message: str, result: RoundResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def infra_retries() -> int:
    """How many times an infra failure is retried (``EVOROUND_INFRA_RETRIES``, default 3)."""
    return settings().infra_retries


def retry_infra(
    fn: Callable[[int], T],
    *,
    retries: int | None = None,
    on_retry: Callable[[BaseException, int], None] | None = None,
    max_wait: float | None = None,
) -> T:
    """Call ``fn(try_number)`` until it does not raise :class:`SandboxError`.

    ``try_number`` starts at 1; ``fn`` knows from it whether this is the last try (and must
    then record the failure instead of raising). Backoff: exponential from 0.5 s.
    """
    n = infra_retries() if retries is None else retries
    if max_wait is None:
        max_wait = settings().infra_backoff_max

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None:
            exc = state.outcome.exception()
            if exc is not None:
                on_retry(exc, state.attempt_number)

    for attempt in Retrying(
        retry=retry_if_exception_type(SandboxError),
        stop=stop_after_attempt(n + 1),
        wait=wait_exponential(multiplier=0.5, max=max_wait),
        before_sleep=before_sleep,
        reraise=True,
    ):
        with attempt:
            return fn(attempt.retry_state.attempt_number)
    raise AssertionError("unreachable")  # pragma: no cover
