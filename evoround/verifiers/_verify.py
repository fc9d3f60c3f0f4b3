"""Grade one suite in one verification sandbox, with the verifier the task asks for.

The controller and ``tasks validate`` both call :func:`verify_suite`, so a task is
validated by exactly the code that will grade agents on it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from evoround.results import VerifierOutcome
from evoround.sandboxes import Sandbox
from evoround.tasks import ActiveTest, Task, resolve_host_env
from evoround.verifiers._pytest import run_pytest
from evoround.verifiers._script import meets, run_script


def _early_stop(
    verdict: VerifierOutcome,
    own: float | dict[str, float] | None,
    threshold: float | dict[str, float] | None,
) -> bool | None:
    """Whether the round's own ``min_reward`` ends the attempt (None: it sets none).

    As a pass threshold, any fail of the round ends it; as Harbor's early stop, a reward
    below it does (no reward at all counts as below, as in Harbor)."""
    if own is None:
        return None
    if threshold is not None:
        return not verdict.passed
    return not meets(verdict.rewards, own)


def verify_suite(
    task: Task,
    sandbox: Sandbox,
    tests: list[ActiveTest],
    round_index: int,
    artifacts: Path | None = None,
    timeout: float | None = None,
    fresh: Callable[[], AbstractContextManager[Sandbox]] | None = None,
) -> VerifierOutcome:
    """Run ``tests`` against ``sandbox`` (a clone of some snapshot) and grade them.

    ``timeout``: what is left of the round's verification deadline (default: the task's
    ``verifier_timeout_sec``); ``fresh``: another clone of the same snapshot, for the script
    verifier's canary run (see ``_script_canary``)."""
    spec = task.config.verifier
    rspec = task.round(round_index).spec
    if timeout is None:
        timeout = rspec.verifier_timeout_sec or task.config.environment.verifier_timeout_sec
    if spec.kind == "none":
        return VerifierOutcome(
            passed=True, exit_code=0, problems=["no outcome tests (verifier kind none)"]
        )
    if spec.kind == "script":
        # Harbor: task [verifier].env, then the step's [steps.verifier.env] (later wins).
        env = resolve_host_env({**spec.env, **rspec.verifier_env})
        own = rspec.min_reward
        threshold = own if own is not None and spec.min_reward_semantics == "threshold" else None
        verdict = run_script(
            sandbox,
            tests,
            round_index,
            script=spec.script,
            timeout=timeout,
            artifacts=artifacts,
            min_reward=spec.min_reward if threshold is None else threshold,
            nonzero_exit=spec.nonzero_exit,
            env=env,
            fresh=fresh,
        )
        return verdict.model_copy(update={"early_stop": _early_stop(verdict, own, threshold)})
    return run_pytest(
        sandbox,
        tests,
        round_index,
        timeout=timeout,
        extra_args=spec.pytest_args,
        artifacts=artifacts,
    )
