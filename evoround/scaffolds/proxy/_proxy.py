"""``--proxy``: every model call of a job goes through a LiteLLM proxy and is recorded.

Why a proxy: agents differ in what they log (Claude Code's stream-json has no
failed calls, mini-swe-agent keeps no timings), but all of them speak HTTP to a
model. Putting LiteLLM's proxy on loopback between the agents and the real
endpoint gives one record per call, the same for every scaffold: request,
response (content blocks in order, tool-call ids), token usage, timings, and the
calls that failed.

- **Install.** The proxy's dependencies (FastAPI, uvicorn, boto3, ...) pin
  versions that clash with the agents' (rich), so it lives in its own venv under
  ``$EVOROUND_HOME/tools``, built on first use with the same LiteLLM version as
  ours (one time, needs PyPI; ``EVOROUND_PROXY_PYTHON`` points at an existing one).
  The ``proxy`` extra is installed requirement by requirement, because from
  1.110.0 on it names a ``litellm-proxy`` that is not on PyPI; the install shows its
  progress, a line per step (:mod:`evoround.scaffolds.proxy._install`).
- **Routing.** ``--model``/``--api-base`` become the proxy's upstream; agents get
  the proxy's URL and a per-job master key instead. ``num_retries`` is 0 in the
  proxy, so a 500 reaches the agent, whose own retry is a second, separate call.
- **Tagging.** :func:`proxy_headers` gives each round ``x-evoround-*``
  headers that the agent sends with every call; the logger (``_callback``,
  running inside the proxy) files each call under them.
- **Collection.** After a round, :meth:`ModelProxy.collect` waits until every call
  that started under the round's tag has ended, and returns them once each.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from evoround.fileio import atomic_write
from evoround.results import EventType, ModelUsage, TrajectoryEvent, truncate
from evoround.scaffolds.proxy._install import ProxyError, proxy_python
from evoround.settings import evoround_home

CALLBACK_MODULE = "evoround_proxy_callback"
CALLBACK_FILE = Path(__file__).with_name("_callback.py")
START_TIMEOUT_SEC = 120.0


def _die_with_parent() -> None:
    """In the child before exec: a SIGKILLed engine takes its proxy with it (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: uvicorn would wait for calls


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tag_key(tag: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(tag.items())) if isinstance(tag, dict) else ()


def proxy_headers(tag: dict[str, str]) -> dict[str, str]:
    """The HTTP headers that carry a round's tag to the proxy's logger (none: no tag)."""
    return {f"x-evoround-{k}": v for k, v in tag.items()}


def split_model(model: str, default_provider: str) -> tuple[str, str]:
    """``openai/gpt-4o`` -> (openai, gpt-4o); a bare name takes ``default_provider``."""
    provider, _, name = model.partition("/")
    return (provider, name) if name else (default_provider, model)


@dataclass(frozen=True)
class ModelCall:
    """One model call as the proxy saw it (one line of ``model_calls.jsonl``)."""

    call_id: str
    status: str
    """``success``, ``failure``, or ``incomplete`` (started, never ended: e.g. the agent
    was killed mid-stream)."""
    tag: dict[str, str]
    record: dict[str, Any] = field(hash=False, compare=False)

    @property
    def start(self) -> float:
        return float(self.record.get("start") or 0.0)


@dataclass
class ModelProxy:
    """A LiteLLM proxy on loopback for one job (a context manager)."""

    workdir: Path
    model: str
    upstream: str | None = None
    upstream_key: str | None = None
    default_provider: str = "openai"
    home: Path | None = None
    port: int = 0
    master_key: str = field(default_factory=lambda: f"sk-evoround-{secrets.token_hex(12)}")
    _proc: subprocess.Popen[bytes] | None = None
    _offset: int = field(default=0, init=False, repr=False)
    """How far into the call log :meth:`_read_new` has parsed (each line is read once)."""
    _records: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )
    """Parsed log lines not yet collected, by tag."""
    _read_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "calls.jsonl"

    def config(self) -> dict[str, Any]:
        provider, name = split_model(self.model, self.default_provider)
        params: dict[str, Any] = {
            "model": f"{provider}/{name}",
            "api_key": "os.environ/EVOROUND_UPSTREAM_API_KEY",
        }
        if self.upstream:
            base = self.upstream.rstrip("/")
            # OpenAI-style clients want ".../v1"; the Anthropic one adds it itself.
            params["api_base"] = base.removesuffix("/v1") if provider == "anthropic" else base
        # The agent may ask for the model by its bare or its full name.
        names = dict.fromkeys([name, f"{provider}/{name}", self.model])
        return {
            "model_list": [{"model_name": n, "litellm_params": params} for n in names],
            "litellm_settings": {
                "callbacks": f"{CALLBACK_MODULE}.call_logger",
                "num_retries": 0,
                "request_timeout": 600,
                "drop_params": True,
            },
            "general_settings": {"master_key": self.master_key},
        }

    def start(self) -> ModelProxy:

        python = proxy_python(self.home or evoround_home())
        # The proxy runs with its own cwd: a relative workdir (``--out runs``) would point
        # its --config and call log at the wrong place.
        self.workdir = Path(self.workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Copied, not imported: it needs the proxy's LiteLLM, and importing LiteLLM here
        # would try to fetch its price list from the internet.
        shutil.copyfile(CALLBACK_FILE, self.workdir / f"{CALLBACK_MODULE}.py")
        cfg = self.workdir / "config.yaml"
        cfg.write_text(yaml.safe_dump(self.config(), sort_keys=False), encoding="utf-8")
        self.port = self.port or _free_port()
        env = {
            **os.environ,
            "EVOROUND_PROXY_LOG": str(self.log_path),
            "EVOROUND_UPSTREAM_API_KEY": self.upstream_key or "evoround-local",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch from GitHub at start
            "LITELLM_TELEMETRY": "False",
            "NO_DOCS": "True",
            "PYTHONUNBUFFERED": "1",
        }
        log = open(self.workdir / "proxy.log", "ab")  # noqa: SIM115 - owned by the child
        self._proc = subprocess.Popen(
            [
                str(python),
                "-m",
                "litellm.proxy.proxy_cli",
                "--config",
                str(cfg),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--num_workers",
                "1",
            ],
            cwd=self.workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C goes to the engine, which stops the proxy
            preexec_fn=_die_with_parent,
        )
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self) -> None:
        @retry(
            stop=stop_after_delay(START_TIMEOUT_SEC),
            wait=wait_fixed(0.25),
            retry=retry_if_exception_type((httpx.HTTPError, OSError)),
            reraise=True,
        )
        def ping() -> None:
            if self._proc is not None and self._proc.poll() is not None:
                raise ProxyError(
                    f"the LiteLLM proxy exited with {self._proc.returncode} during start; "
                    f"see {self.workdir / 'proxy.log'}"
                )
            httpx.get(f"{self.url}/health/liveliness", timeout=2).raise_for_status()

        try:
            ping()
        except (httpx.HTTPError, OSError) as e:
            raise ProxyError(
                f"the LiteLLM proxy did not answer on {self.url} within "
                f"{START_TIMEOUT_SEC:g}s; see {self.workdir / 'proxy.log'}"
            ) from e

    # ---- rounds -------------------------------------------------------------------

    @staticmethod
    def tag(job: str, task: str, attempt: str, round_index: int) -> dict[str, str]:
        """The round's tag; ``run`` tells a resumed or retried round from its dead first try."""
        return {
            "job": job,
            "task": task,
            "attempt": attempt,
            "round": str(round_index),
            "run": uuid.uuid4().hex[:12],
        }

    def _read_new(self) -> None:
        """Parse the complete lines the logger appended since the last read.

        The log holds every call of the job with its whole conversation, so it is
        read incrementally rather than from the top at every round and every poll.
        """
        with self._read_lock:
            if not self.log_path.exists():
                return
            with open(self.log_path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
            complete = data.rfind(b"\n") + 1  # a line still being written waits
            self._offset += complete
            for line in data[:complete].splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                self._records.setdefault(_tag_key(rec.get("tag")), []).append(rec)

    def collect(self, tag: dict[str, str], wait_sec: float = 15.0) -> list[ModelCall]:
        """The calls made under ``tag``, in start order, each once; waits for open ones."""
        key = _tag_key(tag)
        deadline = time.monotonic() + wait_sec
        while True:
            self._read_new()
            with self._read_lock:
                records = list(self._records.get(key, ()))
            started: dict[str, dict[str, Any]] = {}
            ended: dict[str, dict[str, Any]] = {}
            for rec in records:
                cid = str(rec.get("call_id"))
                if rec.get("event") == "start":
                    started.setdefault(cid, rec)
                else:
                    ended.setdefault(cid, rec)  # first ending wins; later ones are echoes
            open_ids = [c for c in started if c not in ended]
            if not open_ids or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        with self._read_lock:
            self._records.pop(key, None)  # a round's tag is collected once
        calls = [ModelCall(cid, str(rec["event"]), tag, rec) for cid, rec in ended.items()]
        calls += [ModelCall(cid, "incomplete", tag, started[cid]) for cid in open_ids]
        for c in calls:
            if not c.record.get("start") and c.call_id in started:
                c.record["start"] = started[c.call_id].get("start")
        return sorted(calls, key=lambda c: c.start)

    # ---- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=5)  # uvicorn finishes calls in flight; a Ctrl-C does not wait long
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=10)

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- folding into the round's trajectory ------------------------------------------


def response_blocks(response: Any) -> list[dict[str, Any]]:
    """The response's content blocks in order: ``text`` and ``tool_use`` (with its id).

    Anthropic-native bodies keep their own block order; chat-completions bodies have
    one text part followed by the tool calls, in their order.
    """
    if not isinstance(response, dict):
        return []
    if isinstance(response.get("content"), list):  # Anthropic Messages
        return [
            {"type": "tool_use", "id": b.get("id"), "name": b.get("name")}
            if b.get("type") == "tool_use"
            else {"type": str(b.get("type")), "text": b.get("text", "")}
            for b in response["content"]
            if isinstance(b, dict)
        ]
    blocks: list[dict[str, Any]] = []
    for choice in response.get("choices") or []:
        msg = (choice or {}).get("message") or {}
        if msg.get("content"):
            blocks.append({"type": "text", "text": msg["content"]})
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            blocks.append({"type": "tool_use", "id": tc.get("id"), "name": fn.get("name")})
    return blocks


def call_event(call: ModelCall) -> TrajectoryEvent:
    rec = call.record
    blocks = response_blocks(rec.get("response"))
    usage = {k: int(v) for k, v in (rec.get("usage") or {}).items() if isinstance(v, int)}
    start, end = rec.get("start"), rec.get("end")
    args: dict[str, Any] = {
        "call_id": call.call_id,
        "status": call.status,
        "api": rec.get("api"),
        "blocks": [b["type"] for b in blocks],
        "tool_call_ids": [b["id"] for b in blocks if b["type"] == "tool_use"],
    }
    if isinstance(start, (int, float)) and isinstance(end, (int, float)):
        args["duration_sec"] = round(end - start, 3)
    if rec.get("status_code") is not None:
        args["status_code"] = rec["status_code"]
    text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
    return TrajectoryEvent(
        type=EventType.model_call,
        name=rec.get("model"),
        content=truncate(str(rec.get("error") or text)),
        arguments=args,
        usage=usage or None,
        timestamp=datetime.fromtimestamp(call.start, UTC) if call.start else datetime.now(UTC),
    )


def fold_calls(events: list[TrajectoryEvent], calls: list[ModelCall]) -> list[TrajectoryEvent]:
    """The round's events with one ``model_call`` event per call, merged by time."""
    merged = [(e.timestamp, 0, i, e) for i, e in enumerate(events)]
    merged += [(e.timestamp, 1, i, e) for i, e in enumerate(map(call_event, calls))]
    return [e for *_, e in sorted(merged, key=lambda t: (t[0], t[1], t[2]))]


def write_calls(path: Path, calls: list[ModelCall]) -> None:
    """The round's full call records (request messages, response) as ``model_calls.jsonl``."""
    atomic_write(
        path,
        "".join(
            json.dumps({**c.record, "status": c.status}, ensure_ascii=False) + "\n" for c in calls
        ),
    )


def call_usage(calls: list[ModelCall]) -> ModelUsage:
    usage = ModelUsage(
        calls=len(calls),
        failed=sum(c.status == "failure" for c in calls),
        incomplete=sum(c.status == "incomplete" for c in calls),
    )
    for c in calls:
        for k, v in (c.record.get("usage") or {}).items():
            if k in ("prompt_tokens", "completion_tokens", "total_tokens") and isinstance(v, int):
                setattr(usage, k, getattr(usage, k) + v)
    return usage
