"""Claude Code (``--agent claude-code``): the real ``claude`` CLI, one session per attempt.

The binary is the one bundled in the ``claude-agent-sdk`` wheel (no npm, no
network install). Every round runs ``claude -p MESSAGE --output-format
stream-json`` inside the sandbox; round 1 creates the session with a known id
(``--session-id``) and later rounds ``--resume`` it, so the agent lives with its
own conversation as well as its own edits. Its stream-json becomes the
normalised trajectory.

Delivery of context is native: Claude Code reads CLAUDE.md and ``.claude/``
from the workspace itself; the task's system prompt goes through
``--append-system-prompt``; an AGENTS.md (when there is no CLAUDE.md) and a
pointer to the memory file are appended there too; skills found under
``skills/`` are installed as user skills in ``$HOME/.claude/skills`` (outside
the workspace, so they never show up in the round's diff).

Isolation: the model endpoint comes from ``ANTHROPIC_BASE_URL`` (a provider, a
LiteLLM proxy or the replay server); non-essential traffic, telemetry, error
reporting and auto-update are disabled. In the local sandbox Claude Code runs
on the host as the current user (trusted agents only); in a container (``network=none``) the
sandbox opens the model endpoint and nothing else on the container's loopback
(:meth:`Sandbox.expose_endpoint`, see ``sandboxes.docker._relay``): the agent can reach
its model and no other host.

State: after every round the session file (``~/.claude/projects/<cwd>/<id>.jsonl``)
is copied to ``round-NN/agent/``; :meth:`restore_state` puts it back so
``--resume`` continues the conversation in a new sandbox.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evoround.results import EventType, TrajectoryEvent, truncate
from evoround.sandboxes import Sandbox
from evoround.scaffolds._context import WorkspaceContext, scan_workspace
from evoround.scaffolds.session import (
    STATE_DIR,
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
)
from evoround.settings import settings
from evoround.tasks import Task

SANDBOX_BIN_DIR = "/opt/evoround/claude"
"""Where the binary is copied in sandboxes that cannot see the host's file system."""


def bundled_claude() -> Path:
    """The ``claude`` binary: ``EVOROUND_CLAUDE_BIN``, the claude-agent-sdk wheel, or PATH."""
    env = settings().claude_bin
    if env:
        return Path(env)
    try:
        import claude_agent_sdk

        p = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
        if p.is_file():
            return p
    except ImportError:
        pass
    found = shutil.which("claude")
    if found:
        return Path(found)
    raise FileNotFoundError(
        "no claude binary: pip install claude-agent-sdk (it bundles one) or set EVOROUND_CLAUDE_BIN"
    )


def project_slug(cwd: str) -> str:
    """Claude Code's folder name for a working directory under ``~/.claude/projects``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class ClaudeCodeScaffold(Scaffold):
    name = "claude-code"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_turns: int = 50,
        binary: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/").removesuffix("/v1") if base_url else None
        self.api_key = api_key
        self.max_turns = max_turns
        self.binary = binary
        self.extra_env = extra_env or {}

    def sandbox_mounts(self) -> dict[str, str]:
        return {str((self.binary or bundled_claude()).parent): SANDBOX_BIN_DIR}

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return ClaudeCodeSession(self, task, sandbox)


class ClaudeCodeSession(AgentSession):
    def __init__(self, cfg: ClaudeCodeScaffold, task: Task, sandbox: Sandbox) -> None:
        self.cfg = cfg
        self.task = task
        self.sandbox = sandbox
        self.session_id = str(uuid.uuid4())
        self.rounds_done = 0
        self.home = sandbox.exec('printf %s "$HOME"', timeout=30).stdout.strip() or "/root"
        self.binary = self._install_binary()
        # In a container with no network this opens the model endpoint, and only it.
        self.base_url = sandbox.expose_endpoint(cfg.base_url) if cfg.base_url else None
        ctx = scan_workspace(sandbox)
        self._install_skills(ctx)
        self.append_prompt = self._append_prompt(ctx)

    # ---- setup ------------------------------------------------------------------

    def _install_binary(self) -> str:
        host = self.cfg.binary or bundled_claude()
        from evoround.sandboxes import LocalSandbox

        if isinstance(self.sandbox, LocalSandbox):
            return str(host)  # same file system: no copy of a 370 MB binary per attempt
        path = f"{SANDBOX_BIN_DIR}/{host.name}"
        if self.sandbox.exec(["test", "-x", path], timeout=30).exit_code == 0:
            return path  # mounted read-only by the provider (sandbox_mounts)
        self.sandbox.copy_in(str(host.parent), SANDBOX_BIN_DIR)  # ~3 s: a remote engine
        self.sandbox.exec(["chmod", "+x", path], timeout=30)
        return path

    def _install_skills(self, ctx: WorkspaceContext) -> None:
        """Skills outside ``.claude/skills`` become user skills, so Claude Code loads them."""
        for skill in ctx.skills:
            if skill.path.startswith(".claude/"):
                continue
            src = skill.path.rsplit("/", 1)[0]
            dest = f"{self.home}/.claude/skills/{skill.name}"
            self.sandbox.exec(
                f"mkdir -p {shlex.quote(dest)} && cp -r {shlex.quote(src)}/. {shlex.quote(dest)}/",
                timeout=60,
            )

    def _append_prompt(self, ctx: WorkspaceContext) -> str:
        parts = []
        if self.task.config.task.system_prompt.strip():
            parts.append(self.task.config.task.system_prompt.strip())
        if "CLAUDE.md" not in ctx.instructions and "AGENTS.md" in ctx.instructions:
            parts.append(
                f"# Repository instructions (AGENTS.md)\n\n{ctx.instructions['AGENTS.md']}"
            )
        if ctx.memory:
            parts.append(WorkspaceContext(memory=ctx.memory).render())
        return "\n\n".join(parts)

    def _env(self) -> dict[str, str]:
        env = {
            "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # Claude Code's default (10 retries, backoff to ~40 s) spends minutes on an
            # endpoint that is down; a few retries ride out a blip (the host's value wins).
            "CLAUDE_CODE_MAX_RETRIES": os.environ.get("CLAUDE_CODE_MAX_RETRIES", "4"),
            "HOME": self.home,
        }
        if self.cfg.model:
            # Background calls (titles, summaries) would go to a small model by default:
            # the model under evaluation is the only one the endpoint (or proxy) serves.
            env["ANTHROPIC_SMALL_FAST_MODEL"] = self.cfg.model
            env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = self.cfg.model
        if self.base_url:
            env["ANTHROPIC_BASE_URL"] = self.base_url
        key = self.cfg.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if key or self.cfg.base_url:
            env["ANTHROPIC_API_KEY"] = key or "evoround-local"
        return {**env, **self.cfg.extra_env}

    def argv(self, message: str) -> list[str]:
        argv = [
            self.binary,
            "-p",
            message,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--max-turns",
            str(self.cfg.max_turns),
        ]
        if self.rounds_done == 0:
            argv += ["--session-id", self.session_id]
        else:
            argv += ["--resume", self.session_id]
        if self.cfg.model:
            argv += ["--model", self.cfg.model]
        if self.append_prompt:
            argv += ["--append-system-prompt", self.append_prompt]
        return argv

    # ---- rounds -----------------------------------------------------------------

    def run_round(self, inp: RoundInput) -> RoundTrace:
        env = self._env()
        if inp.model_headers:  # --proxy's round tag, one "Name: value" per line
            env["ANTHROPIC_CUSTOM_HEADERS"] = "\n".join(
                f"{k}: {v}" for k, v in inp.model_headers.items()
            )
        res = self.sandbox.exec(self.argv(inp.message), timeout=inp.timeout_sec, env=env)
        trace = RoundTrace(
            events=[TrajectoryEvent(type=EventType.message, role="user", content=inp.message)]
        )
        result = parse_stream_json(res.stdout, trace.events)
        self.rounds_done += 1
        api = model_api_failure(res.stdout, result, timed_out=res.timed_out)
        if api is not None:
            # The endpoint, not the agent: say so, with where it was pointed, in the record
            # and in the trajectory (the first place a user looks).
            where = self.base_url or "the Anthropic API"
            trace.status = TraceStatus.model_api
            trace.error = f"model API failed ({where}): {api}"
            hint = (
                f"{trace.error}. Check --api-base and that the sandbox can reach it; "
                "CLAUDE_CODE_MAX_RETRIES sets how often Claude Code retries."
            )
            trace.events.append(
                TrajectoryEvent(type=EventType.error, name="model_api", content=hint)
            )
        elif res.timed_out:
            trace.status = TraceStatus.timeout
            trace.error = f"agent timeout after {inp.timeout_sec:g}s"
        elif res.exit_code != 0 and (result is None or result.get("is_error")):
            trace.status = TraceStatus.error
            detail = (result or {}).get("result") or res.stderr.strip()[-1000:]
            trace.error = f"claude exited {res.exit_code}: {detail}"
            trace.events.append(TrajectoryEvent(type=EventType.error, content=trace.error))
        if inp.artifacts_dir is not None:
            self.save_state(inp.artifacts_dir / STATE_DIR)
        return trace

    def _session_file(self) -> str:
        cwd = self.sandbox.workdir
        return f"{self.home}/.claude/projects/{project_slug(cwd)}/{self.session_id}.jsonl"

    def save_state(self, state_dir: Path) -> None:
        """Copy Claude Code's own session file out of the sandbox (it is the conversation)."""
        state_dir.mkdir(parents=True, exist_ok=True)
        meta = {
            "scaffold": self.cfg.name,
            "session_id": self.session_id,
            "rounds_done": self.rounds_done,
            "cwd": self.sandbox.workdir,
        }
        try:
            (state_dir / "session.jsonl").write_bytes(self.sandbox.read_file(self._session_file()))
        except Exception as e:  # e.g. killed before the file existed: keep the metadata
            meta["missing_session_file"] = f"{type(e).__name__}: {e}"
        (state_dir / "session.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    def restore_state(self, state_dir: Path) -> None:
        meta = json.loads((state_dir / "session.json").read_text(encoding="utf-8"))
        self.session_id = meta["session_id"]
        self.rounds_done = meta["rounds_done"]
        self.sandbox.write_file(self._session_file(), (state_dir / "session.jsonl").read_bytes())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _json_lines(stdout: str) -> Iterator[Any]:
    """Every line of ``stdout`` that is JSON (Claude Code may print other text too)."""
    for line in stdout.splitlines():
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


@dataclass
class _Stream:
    """What reading a stream-json output collects besides the events themselves."""

    events: list[TrajectoryEvent]
    result: dict[str, Any] | None = None
    seen: set[str] = field(default_factory=set)
    """Message ids whose usage is already taken (one ``assistant`` line per content block)."""
    per_message: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    """(index of the message's first event, its usage) per assistant message."""


def _assistant_event(block: dict[str, Any]) -> TrajectoryEvent | None:
    """A text block is a message, a tool_use block a tool call; others (thinking) are not kept."""
    if block.get("type") == "text" and block.get("text"):
        return TrajectoryEvent(type=EventType.message, role="assistant", content=block["text"])
    if block.get("type") == "tool_use":
        return TrajectoryEvent(
            type=EventType.tool_call,
            tool_call_id=block.get("id"),
            name=block.get("name"),
            arguments=block.get("input") or {},
        )
    return None


def _on_assistant(stream: _Stream, obj: dict[str, Any]) -> None:
    msg = obj.get("message") or {}
    first = len(stream.events)
    for block in msg.get("content") or []:
        event = _assistant_event(block)
        if event is not None:
            stream.events.append(event)
    mid = msg.get("id")
    if mid and mid not in stream.seen and len(stream.events) > first:
        stream.seen.add(mid)
        stream.per_message.append((first, _int_usage(msg.get("usage"))))


def _on_user(stream: _Stream, obj: dict[str, Any]) -> None:
    """The user lines Claude Code prints are its tool results (the prompt is not echoed)."""
    for block in (obj.get("message") or {}).get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            stream.events.append(
                TrajectoryEvent(
                    type=EventType.tool_result,
                    tool_call_id=block.get("tool_use_id"),
                    content=truncate(_text(block.get("content"))),
                    exit_code=1 if block.get("is_error") else 0,
                )
            )


def _on_result(stream: _Stream, obj: dict[str, Any]) -> None:
    """The last line: kept for its totals; an unsuccessful end is an error event."""
    stream.result = obj
    if obj.get("is_error") or obj.get("subtype") not in (None, "success"):
        stream.events.append(
            TrajectoryEvent(
                type=EventType.error, name=obj.get("subtype"), content=_text(obj.get("result"))
            )
        )


_ON_LINE: dict[str, Callable[[_Stream, dict[str, Any]], None]] = {
    "assistant": _on_assistant,
    "user": _on_user,
    "result": _on_result,
}


def _place_usage(stream: _Stream) -> None:
    """The result line's exact totals go on the last assistant event; without them, each
    message's own usage goes on its first event."""
    events = stream.events
    total = _int_usage((stream.result or {}).get("usage"))
    assistant = [
        i for i, e in enumerate(events) if e.role == "assistant" or e.type is EventType.tool_call
    ]
    if total and assistant:
        events[assistant[-1]].usage = total
        return
    for idx, usage in stream.per_message:
        if usage:
            events[idx].usage = usage


def parse_stream_json(stdout: str, events: list[TrajectoryEvent]) -> dict[str, Any] | None:
    """Append the normalised events of Claude Code's stream-json; return its ``result`` line.

    Claude Code prints one ``assistant`` line per content block (same message id,
    same usage), so usage is taken once per message id; when the final ``result``
    line is there its totals replace the per-message figures (they are exact).
    """
    stream = _Stream(events)
    for obj in _json_lines(stdout):
        handler = _ON_LINE.get(obj.get("type"))
        if handler is not None:
            handler(stream, obj)
    _place_usage(stream)
    return stream.result


def _retries(stdout: str) -> tuple[list[dict[str, Any]], bool]:
    """The ``system/api_retry`` lines, and whether a real answer came after the last one
    (retries before an answer were recovered from)."""
    retries: list[dict[str, Any]] = []
    worked_after = False
    for obj in _json_lines(stdout):
        if not isinstance(obj, dict):
            continue
        if obj.get("type") == "system" and obj.get("subtype") == "api_retry":
            retries.append(obj)
            worked_after = False
        elif obj.get("type") == "user" or (
            obj.get("type") == "assistant"
            and (obj.get("message") or {}).get("model") != "<synthetic>"
        ):
            worked_after = True
    return retries, worked_after


def model_api_failure(stdout: str, result: dict[str, Any] | None, *, timed_out: bool) -> str | None:
    """Why the round failed on the model API, from Claude Code's stream-json, or None.

    Claude Code does not raise: it prints ``system/api_retry`` lines while it retries and,
    once out of retries, a ``result`` with ``is_error`` and "API Error: ...". A round that
    hit the agent timeout while the last thing Claude Code did was retry the API is the
    endpoint's failure too (a black-holed address retries far past any timeout).
    """
    retries, worked_after = _retries(stdout)
    last = retries[-1] if retries else {}
    detail = f"{len(retries)} retries, last error {last.get('error_status') or last.get('error')}"
    if result is not None and result.get("is_error"):
        text = _text(result.get("result")).strip()
        if text.startswith("API Error"):
            return f"{text} ({detail})" if retries else text
        return None
    if timed_out and retries and not worked_after:
        return f"still retrying when the agent timeout hit ({detail})"
    return None


def _int_usage(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    return {k: v for k, v in usage.items() if isinstance(v, int) and k.endswith("tokens")}
