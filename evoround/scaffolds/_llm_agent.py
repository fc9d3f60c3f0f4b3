"""The built-in agent (``--agent evoround-agent --model provider/name``).

A compact tool-calling loop through litellm, so any provider (or a local replay
server, or a LiteLLM proxy) works. It exists to give evoround one agent whose
every moving part is visible: tools ``bash`` (runs in the sandbox, with a
timeout), ``read_file``, ``write_file``, ``str_replace`` and ``finish``.

One conversation lives across all rounds of an attempt (the point of a
multi-turn evaluation): the system message is sent once, each round appends the
user turn (instruction + reminder) and the assistant/tool messages. After every
round the conversation is saved to ``round-NN/agent/conversation.json``;
:meth:`restore_state` continues it, so a resumed attempt keeps its history.
Per-round budgets: ``max_steps`` model calls and ``max_tokens`` total tokens.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from evoround.fileio import atomic_write
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
from evoround.throttle import model_slot

PREAMBLE = """You are a coding agent working in a repository at {workdir}.
Use the tools to inspect and change files and to run commands; paths are relative to the
repository root. Work until the user's request is done, then call `finish` with a one-line
summary. The user may come back with further requests in later turns."""


def _function(
    name: str, description: str, required: list[str], **properties: dict[str, Any]
) -> dict[str, Any]:
    """One tool in OpenAI's function-calling format (what the model is sent, as is)."""
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


_STRING = {"type": "string"}
TOOLS: list[dict[str, Any]] = [
    _function(
        "bash",
        "Run a bash command in the repository root.",
        ["command"],
        command=_STRING,
        timeout={"type": "number", "description": "Seconds (default 120)."},
    ),
    _function("read_file", "Read a text file.", ["path"], path=_STRING),
    _function(
        "write_file",
        "Create or overwrite a file.",
        ["path", "content"],
        path=_STRING,
        content=_STRING,
    ),
    _function(
        "str_replace",
        "Replace one exact, unique occurrence of old_str in a file with new_str.",
        ["path", "old_str", "new_str"],
        path=_STRING,
        old_str=_STRING,
        new_str=_STRING,
    ),
    _function("finish", "End your turn: the user's request is done.", [], summary=_STRING),
]

RETRYABLE = (
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "BadGatewayError",
    "APIError",
)


class _Deadline(Exception):
    """The round's time is up (raised out of the loop, ends the round as a timeout)."""


class LLMAgentScaffold(Scaffold):
    """``evoround-agent``: the built-in litellm tool-calling agent."""

    name = "evoround-agent"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        max_steps: int = 50,
        max_tokens: int | None = None,
        bash_timeout: float = 120.0,
        retries: int = 4,
        extra_headers: dict[str, str] | None = None,
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
        self.max_tokens = max_tokens
        self.bash_timeout = bash_timeout
        self.retries = retries
        self.extra_headers = extra_headers or {}

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return LLMAgentSession(self, task, sandbox)


_ToolHandler = Callable[["LLMAgentSession", dict[str, Any], float], tuple[str, int]]


class LLMAgentSession(AgentSession):
    def __init__(self, cfg: LLMAgentScaffold, task: Task, sandbox: Sandbox) -> None:
        self.cfg = cfg
        self.task = task
        self.sandbox = sandbox
        preamble = PREAMBLE.format(workdir=sandbox.workdir)
        system = system_message(task, scan_workspace(sandbox), preamble)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self.round_headers: dict[str, str] = {}
        self.rounds_done = 0

    # ---- state ------------------------------------------------------------------

    def save_state(self, state_dir: Path) -> None:
        """Write the whole conversation (JSON) so the attempt can continue it later."""
        state_dir.mkdir(parents=True, exist_ok=True)
        data = {
            "scaffold": self.cfg.name,
            "model": self.cfg.model,
            "rounds_done": self.rounds_done,
            "messages": self.messages,
        }
        atomic_write(state_dir / "conversation.json", json.dumps(data, indent=1))

    def restore_state(self, state_dir: Path) -> None:
        data = json.loads((state_dir / "conversation.json").read_text(encoding="utf-8"))
        self.messages = data["messages"]
        self.rounds_done = data.get("rounds_done", 0)

    # ---- the loop ---------------------------------------------------------------

    def run_round(self, inp: RoundInput) -> RoundTrace:
        trace = RoundTrace(
            events=[TrajectoryEvent(type=EventType.message, role="user", content=inp.message)]
        )
        self.messages.append({"role": "user", "content": inp.message})
        self.round_headers = dict(inp.model_headers)
        deadline = time.monotonic() + inp.timeout_sec
        try:
            self._loop(trace, deadline)
        except _Deadline:
            trace.status = TraceStatus.timeout
            trace.error = f"agent timeout after {inp.timeout_sec:g}s"
        finally:
            self.rounds_done += 1
            if inp.artifacts_dir is not None:
                self.save_state(inp.artifacts_dir / STATE_DIR)
        return trace

    def _loop(self, trace: RoundTrace, deadline: float) -> None:
        tokens = 0
        for _step in range(self.cfg.max_steps):
            resp = self._complete(trace, deadline)
            msg = resp.choices[0].message
            usage = _usage(resp)
            tokens += usage.get("total_tokens", 0)
            calls = list(msg.tool_calls or [])
            assistant: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
            if calls:
                assistant["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            self.messages.append(assistant)
            trace.events.append(
                TrajectoryEvent(
                    type=EventType.message, role="assistant", content=msg.content or "", usage=usage
                )
            )
            if not calls:
                return
            finished = False
            for c in calls:
                finished |= self._run_tool(
                    trace, c.id, c.function.name, c.function.arguments, deadline
                )
            if finished:
                return
            if self.cfg.max_tokens is not None and tokens >= self.cfg.max_tokens:
                trace.events.append(
                    TrajectoryEvent(
                        type=EventType.error, content=f"token limit {self.cfg.max_tokens} reached"
                    )
                )
                return
        trace.events.append(
            TrajectoryEvent(
                type=EventType.error, content=f"step limit {self.cfg.max_steps} reached"
            )
        )

    def _complete(self, trace: RoundTrace, deadline: float) -> Any:
        """One model call with retries on transient errors; each failure is a trajectory error."""
        # no fetch of the remote price list: evaluations must run offline
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm  # slow to import: only when a model is really called

        litellm.suppress_debug_info = True  # its banners go to stdout and break --json output

        delay = 0.5
        for attempt in range(self.cfg.retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Deadline
            try:
                with model_slot():  # --max-model-connections: one slot per request in flight
                    return litellm.completion(
                        model=self.cfg.call_model,
                        messages=self.messages,
                        tools=TOOLS,
                        api_base=self.cfg.api_base,
                        api_key=self.cfg.api_key or _default_key(self.cfg),
                        timeout=left,
                        num_retries=0,
                        extra_headers={**self.cfg.extra_headers, **self.round_headers} or None,
                        **self.cfg.model_args,
                    )
            except Exception as e:
                if time.monotonic() >= deadline:
                    raise _Deadline from e
                kind = type(e).__name__
                trace.events.append(
                    TrajectoryEvent(
                        type=EventType.error, name="model_call", content=f"{kind}: {e}"[:2000]
                    )
                )
                if kind not in RETRYABLE or attempt == self.cfg.retries:
                    raise
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay *= 2
        raise AssertionError("unreachable")

    def _run_tool(
        self, trace: RoundTrace, call_id: str, name: str, raw_args: str, deadline: float
    ) -> bool:
        """Execute one tool call, append its result message; True when it was ``finish``."""
        output: str | None = None  # set here only when the arguments are unusable
        code = 0
        try:
            args = json.loads(raw_args or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as e:
            args = {}
            output, code = f"error: invalid JSON arguments: {e}", 1
        trace.events.append(
            TrajectoryEvent(
                type=EventType.tool_call, tool_call_id=call_id, name=name, arguments=args
            )
        )
        finished = name == "finish"
        if output is None:
            output, code = self._tool(name, args, deadline)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        trace.events.append(
            TrajectoryEvent(
                type=EventType.tool_result,
                tool_call_id=call_id,
                name=name,
                content=truncate(output),
                exit_code=code,
            )
        )
        return finished

    def _tool(self, name: str, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        """Run one tool; a bad call becomes an error result the model can read and correct,
        never a crash of the round (only the round's deadline escapes)."""
        handler = self._TOOLS.get(name)
        if handler is None:
            return f"error: unknown tool {name!r}", 1
        try:
            return handler(self, args, deadline)
        except _Deadline:
            raise
        except KeyError as e:
            return f"error: missing argument {e}", 1
        except (OSError, UnicodeDecodeError) as e:
            return f"error: {type(e).__name__}: {e}", 1

    def _bash(self, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        """The command gets the smaller of its own timeout and what is left of the round:
        a command cut by the round's deadline ends the round rather than answering."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Deadline
        limit = min(float(args.get("timeout") or self.cfg.bash_timeout), left)
        res = self.sandbox.exec(str(args["command"]), timeout=limit)
        if res.timed_out and time.monotonic() >= deadline - 0.05:
            raise _Deadline
        out = truncate(res.stdout + res.stderr, 20000)
        if res.timed_out:
            out += f"\n[timed out after {limit:g}s]"
        return f"exit code {res.exit_code}\n{out}", res.exit_code

    def _read_file(self, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        return self.sandbox.read_file(str(args["path"])).decode(errors="replace"), 0

    def _write_file(self, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        self.sandbox.write_file(str(args["path"]), str(args["content"]))
        return f"wrote {args['path']}", 0

    def _str_replace(self, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        """Exactly one occurrence, so an edit never lands somewhere the model did not mean."""
        path, old = str(args["path"]), str(args["old_str"])
        text = self.sandbox.read_file(path).decode()
        n = text.count(old)
        if n != 1:
            return f"error: old_str occurs {n} times in {path} (must be exactly once)", 1
        self.sandbox.write_file(path, text.replace(old, str(args["new_str"])))
        return f"edited {path}", 0

    def _finish(self, args: dict[str, Any], deadline: float) -> tuple[str, int]:
        return str(args.get("summary") or "finished"), 0

    _TOOLS: ClassVar[dict[str, _ToolHandler]] = {
        "bash": _bash,
        "read_file": _read_file,
        "write_file": _write_file,
        "str_replace": _str_replace,
        "finish": _finish,
    }
    """The tools of ``TOOLS`` by name (what the model calls -> what runs in the sandbox)."""


def _default_key(cfg: LLMAgentScaffold) -> str | None:
    """A local endpoint (replay server, proxy) needs some key; providers use their env var."""
    return "evoround-local" if cfg.api_base else None


def _usage(resp: Any) -> dict[str, int]:
    u = getattr(resp, "usage", None)
    if u is None:
        return {}
    out = {}
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = getattr(u, k, None)
        if isinstance(v, int):
            out[k] = v
    return out
