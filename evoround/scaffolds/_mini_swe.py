"""mini-swe-agent (``--agent mini-swe-agent``): the PyPI package driven through its Python API.

mini-swe-agent's own ``run()`` starts a fresh conversation each call; a
multi-turn evaluation needs the opposite, so :class:`_ContinuingAgent` keeps its
``DefaultAgent`` loop and messages and only *appends* the next round's user
turn (the system message is sent once). Its ``exit`` bookkeeping messages are
dropped before a new round because they are not part of the model conversation.

Commands run in our sandbox through :class:`SandboxEnvironment`, an adapter with
mini-swe-agent's environment interface (``execute``/``get_template_vars``/
``serialize``), so the local and Docker backends both work and timeouts are the
engine's. The model is mini-swe-agent's ``LitellmModel`` (tool calling, one
``bash`` tool); the system message adds the task's system prompt and workspace
context like the built-in agent does.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from evoround.results import EventType, TrajectoryEvent, truncate
from evoround.sandboxes import Sandbox
from evoround.scaffolds._context import scan_workspace, system_message
from evoround.scaffolds.session import (
    STATE_DIR,
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
)
from evoround.tasks import Task

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _import_mini() -> Any:
    """Import quietly and offline (no banner, no remote litellm price list)."""
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
    import litellm
    import minisweagent

    litellm.suppress_debug_info = True  # its banners go to stdout and break --json output
    return minisweagent


class SandboxEnvironment:
    """mini-swe-agent's environment protocol over an evoround :class:`Sandbox`."""

    def __init__(self, sandbox: Sandbox, timeout: float = 120.0) -> None:
        self.sandbox = sandbox
        self.timeout = timeout
        self.deadline: float | None = None
        self.config: dict[str, Any] = {"cwd": sandbox.workdir, "timeout": timeout}
        uname = sandbox.exec("uname -s; uname -r; uname -v; uname -m", timeout=30).stdout
        keys = ("system", "release", "version", "machine")
        self._uname = dict(zip(keys, (uname.splitlines() + [""] * 4)[:4], strict=True))

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        from minisweagent.exceptions import Submitted

        limit = float(timeout or self.timeout)
        if self.deadline is not None:
            limit = max(0.1, min(limit, self.deadline - time.monotonic()))
        env = {"PAGER": "cat", "MANPAGER": "cat", "PIP_PROGRESS_BAR": "off", "TQDM_DISABLE": "1"}
        res = self.sandbox.exec(action.get("command", ""), timeout=limit, cwd=cwd or None, env=env)
        output: dict[str, Any] = {
            "output": res.stdout + res.stderr,
            "returncode": res.exit_code,
            "exception_info": f"command timed out after {limit:g}s" if res.timed_out else "",
        }
        lines = output["output"].lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT and res.exit_code == 0:
            submission = "".join(lines[1:])
            raise Submitted(
                {
                    "role": "exit",
                    "content": submission,
                    "extra": {"exit_status": "Submitted", "submission": submission},
                }
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, **self._uname, **kwargs}

    def serialize(self) -> dict:
        return {
            "info": {
                "config": {
                    "environment": self.config,
                    "environment_type": "evoround.SandboxEnvironment",
                }
            }
        }


def _agent_class() -> type:
    _import_mini()
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.exceptions import FormatError, InterruptAgentFlow

    class _ContinuingAgent(DefaultAgent):
        """DefaultAgent whose conversation survives from one round to the next."""

        def run_round(self, task: str) -> dict:
            self.extra_template_vars |= {"task": task}
            self.messages = [m for m in self.messages if m.get("role") != "exit"]
            self.n_calls = 0  # the step limit is per round
            self._start_time = time.time()
            if not self.messages:
                system = self._render_template(self.config.system_template)
                self.add_messages(self.model.format_message(role="system", content=system))
            user = self._render_template(self.config.instance_template)
            self.add_messages(self.model.format_message(role="user", content=user))
            while True:
                try:
                    self.step()
                except FormatError as e:
                    self.add_messages(*e.messages)
                except InterruptAgentFlow as e:
                    self.add_messages(*e.messages)
                if self.messages[-1].get("role") == "exit":
                    self._answer_dangling_calls()
                    return self.messages[-1].get("extra", {})

        def _answer_dangling_calls(self) -> None:
            """The submit command ends the run before its tool result is written; a
            continued conversation must answer every tool call, or providers refuse it."""
            exit_msg = self.messages.pop()
            answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
            last: dict[str, Any] = next(
                (m for m in reversed(self.messages) if m.get("role") == "assistant"), {}
            )
            for tc in last.get("tool_calls") or []:
                if tc.get("id") not in answered:
                    content = "<returncode>0</returncode>\n<output>\nsubmitted\n</output>"
                    msg = {"role": "tool", "tool_call_id": tc["id"], "content": content}
                    self.messages.append({**msg, "extra": {"returncode": 0}})
            self.messages.append(exit_msg)

    return _ContinuingAgent


def _mini_config() -> dict[str, Any]:
    mini = _import_mini()
    return yaml.safe_load((Path(mini.__file__).parent / "config" / "mini.yaml").read_text())


class MiniSweScaffold(Scaffold):
    name = "mini-swe-agent"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        max_steps: int = 50,
        command_timeout: float = 120.0,
        model_args: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.model_args = dict(model_args or {})
        """litellm keyword arguments with every call (temperature, reasoning_effort, ...)."""
        self.call_model = model
        """The name sent to litellm; ``--proxy`` routes it (``openai/<model>``) via the proxy."""
        self.api_base = api_base
        self.api_key = api_key
        self.max_steps = max_steps
        self.command_timeout = command_timeout

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return MiniSweSession(self, task, sandbox)


class MiniSweSession(AgentSession):
    def __init__(self, cfg: MiniSweScaffold, task: Task, sandbox: Sandbox) -> None:
        _import_mini()
        from minisweagent.models.litellm_model import LitellmModel

        self.cfg = cfg
        self.env = SandboxEnvironment(sandbox, cfg.command_timeout)
        conf = _mini_config()
        kwargs: dict[str, Any] = dict(conf.get("model", {}).get("model_kwargs") or {})
        if cfg.api_base:
            kwargs |= {"api_base": cfg.api_base, "api_key": cfg.api_key or "evoround-local"}
        elif cfg.api_key:
            kwargs["api_key"] = cfg.api_key
        kwargs |= cfg.model_args
        model_conf = {k: v for k, v in (conf.get("model") or {}).items() if k != "model_kwargs"}
        self.model = LitellmModel(
            model_name=cfg.call_model,
            model_kwargs=kwargs,
            cost_tracking="ignore_errors",
            **model_conf,
        )
        agent_conf = dict(conf["agent"])
        agent_conf.pop("mode", None)  # interactive-only setting
        context = system_message(task, scan_workspace(sandbox), "")
        # our text is data, not a template: keep Jinja away from any braces in it
        agent_conf["system_template"] = (
            agent_conf["system_template"].rstrip() + "\n\n{% raw %}" + context + "{% endraw %}\n"
        )
        agent_conf |= {"step_limit": cfg.max_steps, "cost_limit": 0}
        self.agent = _agent_class()(self.model, self.env, **agent_conf)

    def run_round(self, inp: RoundInput) -> RoundTrace:
        trace = RoundTrace(
            events=[TrajectoryEvent(type=EventType.message, role="user", content=inp.message)]
        )
        deadline = time.monotonic() + inp.timeout_sec
        self.env.deadline = deadline
        self.agent.config.wall_time_limit_seconds = max(1, int(inp.timeout_sec))
        self.model.config.model_kwargs["timeout"] = inp.timeout_sec
        if inp.model_headers:  # --proxy's round tag
            self.model.config.model_kwargs["extra_headers"] = dict(inp.model_headers)
        start = len(self.agent.messages)
        try:
            info = self.agent.run_round(inp.message)
        finally:
            _to_events(self.agent.messages[start:], trace.events)
            if inp.artifacts_dir is not None:
                self.save_state(inp.artifacts_dir / STATE_DIR)
        status = info.get("exit_status", "")
        if status == "TimeExceeded" or time.monotonic() >= deadline:
            trace.status = TraceStatus.timeout
            trace.error = f"agent timeout after {inp.timeout_sec:g}s"
        elif status not in ("Submitted", "LimitsExceeded"):
            trace.status = TraceStatus.error
            trace.error = f"mini-swe-agent exited: {status}"
        return trace

    def save_state(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        data = self.agent.serialize()
        (state_dir / "mini-swe-agent.json").write_text(json.dumps(data, indent=1, default=str))

    def restore_state(self, state_dir: Path) -> None:
        data = json.loads((state_dir / "mini-swe-agent.json").read_text())
        self.agent.messages = data["messages"]


_Message = dict[str, Any]
"""One mini-swe-agent message: OpenAI's format plus its own ``extra`` record."""


def _assistant(m: _Message, extra: dict[str, Any]) -> list[TrajectoryEvent]:
    """The reply, with its usage, then one event per tool call it made."""
    usage = (extra.get("response") or {}).get("usage") or {}
    out = [
        TrajectoryEvent(
            type=EventType.message,
            role="assistant",
            content=m.get("content") or "",
            usage={k: v for k, v in usage.items() if isinstance(v, int)} or None,
        )
    ]
    return out + [_tool_call(tc) for tc in m.get("tool_calls") or []]


def _tool_call(tc: dict[str, Any]) -> TrajectoryEvent:
    """Arguments that are not JSON are kept as ``raw`` (what the model really sent)."""
    fn = tc.get("function") or {}
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        args = {"raw": fn.get("arguments")}
    return TrajectoryEvent(
        type=EventType.tool_call, tool_call_id=tc.get("id"), name=fn.get("name"), arguments=args
    )


def _tool_result(m: _Message, extra: dict[str, Any]) -> list[TrajectoryEvent]:
    return [
        TrajectoryEvent(
            type=EventType.tool_result,
            tool_call_id=m.get("tool_call_id"),
            content=truncate(str(m.get("content") or "")),
            exit_code=extra.get("returncode"),
        )
    ]


def _exit(m: _Message, extra: dict[str, Any]) -> list[TrajectoryEvent]:
    """Any end but a submission (step limit, format errors, a crash) is an error event."""
    if extra.get("exit_status") in ("Submitted",):
        return []
    name = str(extra.get("exit_status") or "exit")
    return [TrajectoryEvent(type=EventType.error, name=name, content=str(m.get("content") or ""))]


def _user(m: _Message, extra: dict[str, Any]) -> list[TrajectoryEvent]:
    """A user message mini-swe-agent wrote itself after interrupting the agent's flow (a
    format error, say) is an error; the round's own instruction is recorded elsewhere."""
    if not extra.get("interrupt_type"):
        return []
    content = str(m.get("content") or "")
    return [TrajectoryEvent(type=EventType.error, name=extra["interrupt_type"], content=content)]


_BY_ROLE: dict[str, Callable[[_Message, dict[str, Any]], list[TrajectoryEvent]]] = {
    "assistant": _assistant,
    "tool": _tool_result,
    "exit": _exit,
    "user": _user,
}


def _to_events(messages: list[_Message], events: list[TrajectoryEvent]) -> None:
    """mini-swe-agent messages (OpenAI format plus ``extra``) as normalised events."""
    for m in messages:
        handler = _BY_ROLE.get(m.get("role") or "")
        if handler is not None:
            events.extend(handler(m, m.get("extra") or {}))
