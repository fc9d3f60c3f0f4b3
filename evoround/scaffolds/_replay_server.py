"""A local replay model server: OpenAI chat-completions compatible, scripted from YAML.

There is no LLM API on the development machines, so every model path (litellm,
the judge, agent CLIs) is tested against this server over real HTTP. It answers
from a script, logs every request, and injects faults (HTTP errors n times,
garbage bodies) so retry paths are exercised for real.

Script (YAML or dict)::

    faults:                  # served first, in order, before any answer
      - {status: 500, times: 2}
      - {body: "<html>oops", times: 1}          # garbage body, HTTP 200
    answers:                 # first whose `match` (regex) hits the last user message
      - match: "Check no-emoji"
        content: '{"result": "fail", "reason": "emoji in message 3"}'
      - content: '{"result": "pass", "reason": "ok"}'
        times: 1             # optional: used at most this many times
    default: '{"result": "not_applicable", "reason": "n/a"}'   # optional

An answer may also carry ``status`` or ``body`` to fail on a match. Without a
matching answer or default the server replies 404 with an error object.
Use :func:`serve`, which returns a handle that is also a context manager.

**Agent conversations** (``rounds``): real agents send the whole conversation
with every request, so the server finds its place *from the request alone* —
the round is the number of real user turns (tool results do not count) and the
turn is the number of assistant messages since the last one. That makes replay
stateless: a retried request gets the same answer, and a resumed session that
lost its process still lands on the right turn. Once a round's turns are used
up the server answers ``final`` (plain text, no tool calls) so the agent stops::

    rounds:
      - - text: "I'll create counter.py."
          tool_calls:
            - {name: write_file, arguments: {path: counter.py, content: "..."}}
        - text: "Done."
      - turns: [...]          # long form; also `final: "..."`
    side_answer: "ok"         # requests without tools (titles, topic checks)
    faults:
      - {at: 3, status: 429}             # the 3rd request (1-based) fails
      - {at: 5, delay_sec: 30}           # the 5th answers after 30 s (timeouts)

Both wire formats are served: OpenAI ``/v1/chat/completions`` (tool calls,
``stream: true`` as SSE chunks) and Anthropic ``/v1/messages`` (``tool_use``
blocks, streaming SSE events as Claude Code requires, and ``count_tokens``).
Token usage is an estimate (characters / 4) so usage accounting is exercised.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evoround.tasks import describe_error, known_keys, unknown_key_message


class Fault(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: int | None = None
    """Default: 500 for an error object, 200 for a raw ``body`` (a garbage success)."""
    body: str | None = None
    """Raw body to send instead of an error object (garbage, truncated JSON, HTML)."""
    times: int = Field(default=1, ge=1)
    at: int | None = Field(default=None, ge=1)
    """Hit exactly the ``at``-th request (1-based, all requests counted) instead of the next."""
    delay_sec: float = Field(default=0.0, ge=0)
    """Wait this long first (a slow or hung model). Alone, the normal answer follows."""

    @property
    def fails(self) -> bool:
        return self.status is not None or self.body is not None or self.delay_sec == 0


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: str | None = None
    content: str | None = None
    status: int | None = None
    body: str | None = None
    times: int | None = Field(default=None, ge=1)


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    """Default: derived from round/turn/position, so a retried request gets the same id."""


class Turn(BaseModel):
    """One assistant message: optional text, then tool calls (in this order, as models do)."""

    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    delay_sec: float = Field(default=0.0, ge=0)


class RoundScript(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: list[Turn] = Field(default_factory=list)
    final: str = "Done."
    """Answered (text only) once the turns are used up, so the agent ends its round."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"turns": v} if isinstance(v, list) else v


class ReplayScript(BaseModel):
    model_config = ConfigDict(extra="forbid")
    faults: list[Fault] = Field(default_factory=list)
    answers: list[Answer] = Field(default_factory=list)
    default: str | None = None
    rounds: list[RoundScript] = Field(default_factory=list)
    side_answer: str = "ok"
    """Answer to requests without tools while ``rounds`` is scripted (titles, topic checks)."""


def load_replay_script(src: ReplayScript | dict[str, Any] | str | Path) -> ReplayScript:
    if isinstance(src, ReplayScript):
        return src
    if isinstance(src, dict):
        return ReplayScript.model_validate(src)
    path = Path(src)
    try:
        raw = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte at offset {e.start})") from None
    except yaml.YAMLError as e:  # one line: where, and what the parser expected
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        why = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ValueError(f"invalid YAML{where}: {why}") from None
    if not isinstance(raw, dict):
        raise ValueError(
            f"a replay script is a mapping (rounds:, answers:), not {type(raw).__name__}"
        )
    try:
        return ReplayScript.model_validate(raw)
    except ValidationError as e:
        err = sorted(e.errors(), key=lambda x: x["type"] != "extra_forbidden")[0]
        if err["type"] == "extra_forbidden":
            where = ".".join(str(x) for x in err["loc"][:-1])
            known = known_keys(ReplayScript, err["loc"][:-1])
            msg = unknown_key_message(str(err["loc"][-1]), known)
            raise ValueError(f"{where + ': ' if where else ''}{msg}") from None
        loc = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"{loc}: {describe_error(err)}") from None


@dataclass
class _Reply:
    """What to send: a raw (status, text), or an assistant message to render per API."""

    status: int = 200
    text: str | None = None
    message: Turn | None = None
    ids_prefix: str = "r0t0"
    delay_sec: float = 0.0


@dataclass
class _State:
    script: ReplayScript
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[dict[str, Any]] = field(default_factory=list)
    fault_left: list[int] = field(default_factory=list)
    answer_used: list[int] = field(default_factory=list)
    log_path: Path | None = None

    def __post_init__(self) -> None:
        self.fault_left = [f.times for f in self.script.faults]
        self.answer_used = [0] * len(self.script.answers)

    def next_reply(self, body: dict[str, Any], api: str = "openai") -> _Reply:
        """The reply to one request; thread-safe, consumes faults and answers."""
        with self.lock:
            self.requests.append(body)
            n = len(self.requests)
            reply = self._reply(body, api, n)
            body["_status"] = reply.status
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(body) + "\n")
            return reply

    def _reply(self, body: dict[str, Any], api: str, n: int) -> _Reply:
        delay = 0.0
        for i, f in enumerate(self.script.faults):
            if self.fault_left[i] <= 0 or (f.at is not None and f.at != n):
                continue
            self.fault_left[i] -= 1
            delay = f.delay_sec
            if f.body is not None:
                return _Reply(f.status or 200, f.body, delay_sec=delay)
            if f.fails:
                return _Reply(f.status or 500, _error(f.status or 500), delay_sec=delay)
            break  # a pure delay: the normal answer follows, late
        reply = self._answer(body, api)
        reply.delay_sec += delay
        return reply

    def _answer(self, body: dict[str, Any], api: str) -> _Reply:
        """A scripted round's next turn for an agent's request (it sends tools), else the
        first answer that matches, else the fallbacks."""
        if self.script.rounds and body.get("tools"):
            return self._scripted_turn(body)
        matched = self._matching_answer(_last_user_text(body))
        if matched is not None:
            return matched
        if self.script.default is not None:
            return _Reply(message=Turn(text=self.script.default))
        if self.script.rounds:
            return _Reply(message=Turn(text=self.script.side_answer))
        return _Reply(404, _error(404, "no scripted answer matches this request"))

    def _scripted_turn(self, body: dict[str, Any]) -> _Reply:
        """The turn at the conversation's position; the round's final text once the turns
        are used up (so the agent ends its round). Records the position in the log."""
        rnd, turn = conversation_position(body.get("messages") or [])
        # evoround tags every model call with its round: an SR session of round 5
        # starts fresh (one user turn) but must get round 5's answers.
        tagged = str((body.get("_headers") or {}).get("x-evoround-round", ""))
        if tagged.isdigit() and int(tagged) >= 1:
            rnd = int(tagged)
        body["_round"], body["_turn"] = rnd, turn
        if rnd < 1 or rnd > len(self.script.rounds):
            return _Reply(404, _error(404, f"no scripted round {rnd}"))
        script = self.script.rounds[rnd - 1]
        if turn < len(script.turns):
            t = script.turns[turn]
            return _Reply(message=t, ids_prefix=f"r{rnd}t{turn}", delay_sec=t.delay_sec)
        return _Reply(message=Turn(text=script.final), ids_prefix=f"r{rnd}t{turn}")

    def _matching_answer(self, text: str) -> _Reply | None:
        """The first answer whose pattern matches and that has uses left (it uses one)."""
        for i, a in enumerate(self.script.answers):
            if a.times is not None and self.answer_used[i] >= a.times:
                continue
            if a.match is not None and not re.search(a.match, text):
                continue
            self.answer_used[i] += 1
            if a.body is not None:
                return _Reply(a.status or 200, a.body)
            if a.status is not None and a.status >= 400:
                return _Reply(a.status, _error(a.status))
            return _Reply(message=Turn(text=a.content or ""))
        return None


def _is_tool_result(m: dict[str, Any]) -> bool:
    """A user-role message that only carries tool results (Anthropic) is not a user turn."""
    c = m.get("content")
    return (
        isinstance(c, list)
        and bool(c)
        and all(isinstance(p, dict) and p.get("type") == "tool_result" for p in c)
    )


def conversation_position(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(round, turn) of a request: real user turns so far, assistant messages since the last.

    OpenAI tool results have role ``tool``; Anthropic ones are user messages made only
    of ``tool_result`` blocks; neither starts a new round.
    """
    rnd, turn = 0, 0
    for m in messages:
        role = m.get("role")
        if role == "user" and not _is_tool_result(m):
            rnd, turn = rnd + 1, 0
        elif role == "assistant":
            turn += 1
    return rnd, turn


def _last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
            return str(c or "")
    return ""


def _tokens(obj: Any) -> int:
    """A stable token estimate (characters / 4): usage accounting without a tokenizer."""
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return max(1, len(text) // 4)


def _call_id(prefix: str, k: int, tc: ToolCall, api: str) -> str:
    if tc.id:
        return tc.id
    return f"{'toolu' if api == 'anthropic' else 'call'}_{prefix}_{k}"


def _error(status: int, message: str = "injected fault") -> str:
    return json.dumps({"error": {"message": f"{message} ({status})", "type": "replay_error"}})


def _completion(req: dict[str, Any], content: str) -> str:
    return openai_completion(req, Turn(text=content), "r0t0")


def _openai_usage(req: dict[str, Any], turn: Turn) -> dict[str, int]:
    prompt = _tokens(req.get("messages") or [])
    completion = _tokens(turn.model_dump(mode="json"))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _openai_tool_calls(turn: Turn, prefix: str) -> list[dict[str, Any]]:
    return [
        {
            "id": _call_id(prefix, k, tc, "openai"),
            "type": "function",
            "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
        }
        for k, tc in enumerate(turn.tool_calls)
    ]


def openai_completion(req: dict[str, Any], turn: Turn, prefix: str) -> str:
    """A chat.completion object: text content and tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = _openai_tool_calls(turn, prefix)
    elif message["content"] is None:
        message["content"] = ""
    return json.dumps(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.get("model", "replay"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": _openai_usage(req, turn),
        }
    )


def openai_stream(req: dict[str, Any], turn: Turn, prefix: str) -> list[str]:
    """The same answer as ``chat.completion.chunk`` SSE lines (``stream: true``)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": req.get("model", "replay"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        c = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(c)}\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    if turn.text:
        out.append(chunk({"content": turn.text}))
    for k, tc in enumerate(_openai_tool_calls(turn, prefix)):
        out.append(chunk({"tool_calls": [{"index": k, **tc}]}))
    finish = "tool_calls" if turn.tool_calls else "stop"
    out.append(chunk({}, finish, usage=_openai_usage(req, turn)))
    out.append("data: [DONE]\n\n")
    return out


def _anthropic_blocks(turn: Turn, prefix: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for k, tc in enumerate(turn.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": _call_id(prefix, k, tc, "anthropic"),
                "name": tc.name,
                "input": tc.arguments,
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks


def _anthropic_usage(req: dict[str, Any], turn: Turn) -> dict[str, int]:
    prompt = _tokens([req.get("system") or "", req.get("messages") or []])
    return {
        "input_tokens": prompt,
        "output_tokens": _tokens(turn.model_dump(mode="json")),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def anthropic_message(req: dict[str, Any], turn: Turn, prefix: str) -> str:
    """A Messages API response: text and ``tool_use`` blocks, in order."""
    return json.dumps(
        {
            "id": f"msg_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": req.get("model", "replay"),
            "content": _anthropic_blocks(turn, prefix),
            "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": _anthropic_usage(req, turn),
        }
    )


def anthropic_stream(req: dict[str, Any], turn: Turn, prefix: str) -> list[str]:
    """The Messages API streaming events (what Claude Code consumes), one SSE event each."""
    usage = _anthropic_usage(req, turn)

    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    start_usage = {**usage, "output_tokens": 1}
    out = [
        event(
            "message_start",
            {
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:20]}",
                    "type": "message",
                    "role": "assistant",
                    "model": req.get("model", "replay"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                }
            },
        ),
    ]
    for i, block in enumerate(_anthropic_blocks(turn, prefix)):
        if block["type"] == "text":
            out.append(
                event(
                    "content_block_start",
                    {"index": i, "content_block": {"type": "text", "text": ""}},
                )
            )
            out.append(
                event(
                    "content_block_delta",
                    {"index": i, "delta": {"type": "text_delta", "text": block["text"]}},
                )
            )
        else:
            empty = {**block, "input": {}}
            out.append(event("content_block_start", {"index": i, "content_block": empty}))
            partial = json.dumps(block["input"])
            out.append(
                event(
                    "content_block_delta",
                    {"index": i, "delta": {"type": "input_json_delta", "partial_json": partial}},
                )
            )
        out.append(event("content_block_stop", {"index": i}))
    stop = "tool_use" if turn.tool_calls else "end_turn"
    out.append(
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    out.append(event("message_stop", {}))
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by design
        return

    def _send(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[str]) -> None:
        """Server-sent events; the connection closes after the last one (HTTP/1.0)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for ev in events:
            self.wfile.write(ev.encode())
            self.wfile.flush()

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, _error(400, "request body is not JSON"))
            return
        route = self.path.split("?")[0].rstrip("/")
        if route.endswith("/messages/count_tokens"):
            tokens = _tokens([body.get("system") or "", body.get("messages") or []])
            self._send(200, json.dumps({"input_tokens": tokens}))
            return
        if route.endswith("/chat/completions"):
            api = "openai"
        elif route.endswith("/messages"):
            api = "anthropic"
        else:
            self._send(404, _error(404, f"unknown endpoint {self.path}"))
            return
        body["_path"] = self.path
        body["_api"] = api
        body["_headers"] = {
            k.lower(): v
            for k, v in self.headers.items()
            if k.lower().startswith(("x-", "anthropic-"))
        }
        reply = self.server.state.next_reply(body, api)
        if reply.delay_sec:
            time.sleep(reply.delay_sec)
        try:
            self._respond(reply, body, api)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (its own timeout): nothing left to tell it

    def _respond(self, reply: _Reply, body: dict[str, Any], api: str) -> None:
        if reply.message is None:
            text = reply.text or ""
            if api == "anthropic" and reply.status >= 400 and text.startswith('{"error"'):
                err_obj = json.loads(text)["error"]
                text = json.dumps(
                    {"type": "error", "error": {"type": "api_error", "message": err_obj["message"]}}
                )
            self._send(reply.status, text)
            return
        stream = bool(body.get("stream"))
        turn, prefix = reply.message, reply.ids_prefix
        if api == "anthropic":
            if stream:
                self._send_events(anthropic_stream(body, turn, prefix))
            else:
                self._send(200, anthropic_message(body, turn, prefix))
        elif stream:
            self._send_events(openai_stream(body, turn, prefix))
        else:
            self._send(200, openai_completion(body, turn, prefix))

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "replay"}]}))
        else:
            self._send(404, _error(404))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class ReplayServer:
    """A running replay server; ``url`` is the OpenAI-style base (``.../v1``)."""

    def __init__(self, server: _Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.port: int = server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.base_url = f"http://127.0.0.1:{self.port}"
        """Anthropic-style base (clients append ``/v1/messages``): ``ANTHROPIC_BASE_URL``."""

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received, in order (a copy)."""
        with self._server.state.lock:
            return list(self._server.state.requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def serve(
    script: ReplayScript | dict[str, Any] | str | Path,
    port: int = 0,
    host: str = "127.0.0.1",
    log_path: Path | str | None = None,
) -> ReplayServer:
    """Start a server in a background thread (``port=0``: any free port).

    ``log_path``: also append every request (JSON lines) to this file, so a server
    run from the command line leaves a log other processes can read.
    """
    server = _Server((host, port), _Handler)
    server.state = _State(load_replay_script(script), log_path=Path(log_path) if log_path else None)
    thread = threading.Thread(target=server.serve_forever, name="replay-server", daemon=True)
    thread.start()
    return ReplayServer(server, thread)
