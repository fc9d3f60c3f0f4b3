"""The LiteLLM proxy's call logger: one JSON line per model call, tagged with its round.

This file runs *inside the proxy process* (its own venv, see ``_proxy``), loaded
by LiteLLM from the proxy's config folder, so it imports nothing from evoround.

Tagging: the engine gives each round's agent a set of ``x-evoround-*`` headers
(job, task, attempt, round); agents send them with every model call and the proxy
hands them to this logger with the request. No shared "current round" file exists,
so concurrent attempts through one proxy cannot be mixed up.

Exactly once: LiteLLM fires sync *and* async hooks for the same call, and may fire
a hook again on a stream's last chunk. Records are keyed by LiteLLM's call id plus
outcome and written once. A ``start`` line is written before each call, so the
engine can tell when every call of a round has its ending line.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

TAG_HEADERS = (
    "x-evoround-job",
    "x-evoround-task",
    "x-evoround-attempt",
    "x-evoround-round",
    "x-evoround-run",
)


def _jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.timestamp()
    for attr in ("model_dump", "dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                return _jsonable(fn())
            except Exception:
                pass
    return str(obj)


def _headers(kwargs: dict[str, Any]) -> dict[str, str]:
    lp = kwargs.get("litellm_params") or {}
    for src in (
        (lp.get("proxy_server_request") or {}).get("headers"),
        (lp.get("metadata") or {}).get("headers"),
        (lp.get("litellm_metadata") or {}).get("headers"),
        (kwargs.get("proxy_server_request") or {}).get("headers"),
        (kwargs.get("metadata") or {}).get("headers"),
        (kwargs.get("litellm_metadata") or {}).get("headers"),
    ):
        if isinstance(src, dict) and src:
            return {str(k).lower(): str(v) for k, v in src.items()}
    return {}


def tag_of(kwargs: dict[str, Any]) -> dict[str, str]:
    h = _headers(kwargs)
    return {k.removeprefix("x-evoround-"): h[k] for k in TAG_HEADERS if k in h}


class EvoroundCallLogger(CustomLogger):
    def __init__(self) -> None:
        super().__init__()
        self.path = os.environ.get("EVOROUND_PROXY_LOG", "evoround-proxy-calls.jsonl")
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _write(self, key: tuple[str, str], record: dict[str, Any]) -> None:
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
            line = json.dumps(_jsonable(record), ensure_ascii=False) + "\n"
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())

    @staticmethod
    def _call_id(kwargs: dict[str, Any]) -> str:
        return str(
            kwargs.get("litellm_call_id")
            or (kwargs.get("standard_logging_object") or {}).get("id")
            or id(kwargs)
        )

    def _record(
        self, event: str, kwargs: dict[str, Any], response: Any, start: Any, end: Any
    ) -> None:
        slo = kwargs.get("standard_logging_object") or {}
        call_id = self._call_id(kwargs)
        record: dict[str, Any] = {
            "event": event,
            "call_id": call_id,
            "tag": tag_of(kwargs),
            "model": kwargs.get("model") or slo.get("model"),
            "api": slo.get("call_type") or kwargs.get("call_type"),
            "start": start,
            "end": end,
            "messages": kwargs.get("messages") or slo.get("messages"),
            "usage": {
                "prompt_tokens": slo.get("prompt_tokens"),
                "completion_tokens": slo.get("completion_tokens"),
                "total_tokens": slo.get("total_tokens"),
            },
            "response": response if event == "success" else None,
        }
        if event == "failure":
            exc = kwargs.get("exception")
            record["error"] = f"{type(exc).__name__}: {exc}" if exc else slo.get("error_str")
            record["status_code"] = getattr(exc, "status_code", None)
        self._write((call_id, event), record)

    # pre-call: written before the request leaves, so the engine knows a call is open
    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        call_id = str(data.get("litellm_call_id") or "")
        if call_id:
            self._write(
                (call_id, "start"),
                {
                    "event": "start",
                    "call_id": call_id,
                    "tag": tag_of({"proxy_server_request": data.get("proxy_server_request")})
                    or tag_of(data),
                    "model": data.get("model"),
                    "start": time.time(),
                },
            )
        return data

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record("success", kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record("failure", kwargs, response_obj, start_time, end_time)

    def log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record("success", kwargs, response_obj, start_time, end_time)

    def log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record("failure", kwargs, response_obj, start_time, end_time)


call_logger = EvoroundCallLogger()
