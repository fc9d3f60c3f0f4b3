"""Model-backed agents by name: the built-in agent, Claude Code, mini-swe-agent.

Kept apart from ``builtin`` so the model-free scaffolds never import litellm or
the agent packages; ``scaffold_from_name`` delegates here for these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from evoround.scaffolds.session import Scaffold

MODEL_AGENTS = ("evoround-agent", "claude-code", "mini-swe-agent")


def is_model_agent(agent: str) -> bool:
    """Whether ``--agent`` takes ``--model``/``--api-base`` (recorded in the job's lock):
    the agents above and Harbor's (``harbor:NAME``)."""
    return agent in MODEL_AGENTS or agent.startswith("harbor:")


@dataclass(frozen=True)
class ModelOptions:
    """How a model-backed agent reaches its model (``--model``, ``--api-base``, ...)."""

    model: str | None = None
    api_base: str | None = None
    """OpenAI-style base (``.../v1``) for litellm agents; for Claude Code the Anthropic
    base (``ANTHROPIC_BASE_URL``); a trailing ``/v1`` is removed for it."""
    api_key: str | None = None
    max_steps: int = 50
    max_tokens: int | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    proxy_url: str | None = None
    """``--proxy``: the job's LiteLLM proxy (``http://127.0.0.1:PORT``); calls go there, with
    ``proxy_key``, and the proxy forwards them to ``api_base``."""
    proxy_key: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    """Sampling settings passed with every model call (``--temperature``,
    ``--reasoning-effort``, ``--model-arg KEY=VALUE``): litellm keyword arguments."""

    def via_proxy(self, url: str, key: str) -> ModelOptions:
        return replace(self, proxy_url=url, proxy_key=key)


def model_scaffold(agent: str, opts: ModelOptions) -> Scaffold:
    """Build the named model-backed agent; a missing ``--model`` is an error where needed."""
    if agent == "evoround-agent":
        from evoround.scaffolds._llm_agent import LLMAgentScaffold

        if not opts.model:
            raise ValueError("--agent evoround-agent needs --model PROVIDER/NAME")
        agent_ = LLMAgentScaffold(
            opts.model,
            api_base=opts.api_base,
            api_key=opts.api_key,
            max_steps=opts.max_steps,
            max_tokens=opts.max_tokens,
            extra_headers=opts.extra_headers,
            model_args=opts.model_args,
        )
        return _proxied(agent_, opts)
    if agent == "claude-code":
        from evoround.scaffolds._claude_code import ClaudeCodeScaffold

        if opts.model_args:  # never drop a setting silently
            raise ValueError(
                "--agent claude-code takes no --temperature/--reasoning-effort/--model-arg: "
                "the claude CLI has no such settings"
            )
        if opts.proxy_url:  # Claude Code asks the proxy for the bare model name
            return ClaudeCodeScaffold(
                model=(opts.model or "").rpartition("/")[2] or None,
                base_url=opts.proxy_url,
                api_key=opts.proxy_key,
                max_turns=opts.max_steps,
            )
        return ClaudeCodeScaffold(
            model=opts.model,
            base_url=opts.api_base,
            api_key=opts.api_key,
            max_turns=opts.max_steps,
        )
    if agent == "mini-swe-agent":
        from evoround.scaffolds._mini_swe import MiniSweScaffold

        if not opts.model:
            raise ValueError("--agent mini-swe-agent needs --model PROVIDER/NAME")
        mini = MiniSweScaffold(
            opts.model,
            api_base=opts.api_base,
            api_key=opts.api_key,
            max_steps=opts.max_steps,
            model_args=opts.model_args,
        )
        return _proxied(mini, opts)
    raise ValueError(f"unknown model agent {agent!r} (known: {', '.join(MODEL_AGENTS)})")


def _proxied(scaffold: Any, opts: ModelOptions) -> Scaffold:
    """Point a litellm-based agent at the proxy's OpenAI-compatible endpoint.

    The recorded ``model`` stays the user's; the proxy serves that name, so the agent
    asks for ``openai/<model>`` (litellm's generic OpenAI-compatible client) there.
    """
    if opts.proxy_url:
        scaffold.call_model = f"openai/{opts.model}"
        scaffold.api_base = f"{opts.proxy_url}/v1"
        scaffold.api_key = opts.proxy_key
    return scaffold
