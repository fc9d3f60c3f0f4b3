"""evoround's end of the bridge protocol: the bridge process and its request loop.

One :class:`Bridge` is one process in Harbor's interpreter (see ``_bridge_main.py`` for the
protocol). :meth:`Bridge.request` sends a request and, until its answer comes, serves the
environment calls the bridge makes back with the given function (the session's sandbox).
The bridge's stderr goes to an unlinked temporary file, so a SIGKILLed engine leaves no log
behind; it dies with the engine (``PR_SET_PDEATHSIG``) and lives in its own session, so
Ctrl-C reaches the engine, which then closes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from evoround.scaffolds.harbor._install import HarborError, HarborNotInstalled, HarborRuntime

PROTOCOL = 1
"""The bridge protocol version this side speaks (``_bridge_main.PROTOCOL`` must match)."""
START_TIMEOUT_SEC = 120.0
"""Interpreter start and ``import harbor`` (seconds; a cold cache on a busy machine)."""


class BridgeRequestError(HarborError):
    """The bridge answered a request with an error (``kind`` says which)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class BridgeTimeout(HarborError):
    """The bridge did not answer in time (it is then killed)."""


class Bridge:
    """One bridge process; :meth:`request` sends a request and serves its calls back."""

    def __init__(self, runtime: HarborRuntime, env: dict[str, str] | None = None) -> None:
        script = runtime.place_bridge()
        # An unlinked file: the bridge writes its log there and nothing is left on disk even
        # if the engine is SIGKILLed. Read with pread (the offset is shared with the child).
        self.log = tempfile.TemporaryFile(prefix="evoround-harbor-bridge-")  # noqa: SIM115
        try:
            self.proc = self._spawn(runtime, script, env)
        except (OSError, subprocess.SubprocessError) as e:
            self.log.close()
            raise HarborNotInstalled(
                f"cannot start Harbor's interpreter {runtime.python}: {e}"
            ) from None
        if self.proc.stdin is None:  # never: _spawn asks for a pipe
            raise HarborError("Harbor's bridge has no stdin pipe")
        self._out: IO[bytes] = self.proc.stdin
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, name="harbor-bridge-reader", daemon=True).start()

    def _spawn(
        self, runtime: HarborRuntime, script: str, env: dict[str, str] | None
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            runtime.argv(script),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**runtime.env(), **(env or {})},
            preexec_fn=runtime.preexec(),
            start_new_session=True,  # Ctrl-C goes to the engine, which closes the bridge
        )

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue  # not the protocol: the bridge keeps its stdout for it, so rare
            if isinstance(msg, dict):
                self._inbox.put(msg)
        self._inbox.put(None)

    def _send(self, obj: dict[str, Any]) -> None:
        try:
            self._out.write((json.dumps(obj) + "\n").encode())
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._died() from None

    def log_bytes(self, cap: int = 8 * 1024 * 1024) -> bytes:
        """The bridge's log so far (its last ``cap`` bytes)."""
        fd = self.log.fileno()
        size = os.fstat(fd).st_size
        return os.pread(fd, cap, max(0, size - cap))

    def log_tail(self, n: int = 1500) -> str:
        try:
            return self.log_bytes()[-n * 4 :].decode(errors="replace")[-n:].strip()
        except OSError:
            return ""

    def _died(self) -> HarborError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        tail = self.log_tail()
        return HarborError(
            f"the Harbor bridge exited (code {self.proc.poll()})" + (f": {tail}" if tail else "")
        )

    def request(
        self,
        op: str,
        *,
        timeout: float | None,
        serve: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        **payload: Any,
    ) -> dict[str, Any]:
        self._next += 1
        rid = self._next
        self._send({"id": rid, "op": op, **payload})
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise BridgeTimeout(f"the Harbor bridge did not answer {op!r} in {timeout:g}s")
            try:
                msg = self._inbox.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise self._died()
            if "call" in msg:
                self._send(self._serve(msg, serve))
            elif msg.get("id") == rid:
                if msg.get("ok"):
                    return dict(msg.get("result") or {})
                raise BridgeRequestError(str(msg.get("kind") or "error"), str(msg.get("error")))

    @staticmethod
    def _serve(
        msg: dict[str, Any], serve: Callable[[dict[str, Any]], dict[str, Any]] | None
    ) -> dict[str, Any]:
        if serve is None:
            return {"reply": msg["call"], "ok": False, "error": "no sandbox is attached"}
        try:
            return {"reply": msg["call"], "ok": True, "result": serve(msg)}
        except Exception as e:  # the agent sees the error as Harbor's environment raising
            return {"reply": msg["call"], "ok": False, "error": f"{type(e).__name__}: {e}"}

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(HarborError):
                self.request("close", timeout=10)
        with contextlib.suppress(OSError):
            self._out.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self.proc.poll() is None:
            self.kill()
        self.log.close()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


def open_bridge(runtime: HarborRuntime, env: dict[str, str] | None = None) -> tuple[Bridge, dict]:
    """A started bridge that passed ``hello`` (protocol and harbor checked)."""
    bridge = Bridge(runtime, env)
    try:
        info = bridge.request("hello", timeout=START_TIMEOUT_SEC)
    except HarborError as e:
        bridge.kill()
        where = (
            f"EVOROUND_HARBOR_PYTHON={runtime.python}"
            if runtime.root is None
            else f"Harbor's interpreter in {runtime.root}"
        )
        raise HarborNotInstalled(f"{where} cannot run the bridge: {e}") from None
    if info.get("protocol") != PROTOCOL:
        bridge.close()
        raise HarborError(
            f"the Harbor bridge speaks protocol {info.get('protocol')}, evoround {PROTOCOL}"
        )
    return bridge, info
