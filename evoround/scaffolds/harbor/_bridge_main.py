"""evoround's Harbor bridge: a long-lived process inside Harbor's own interpreter.

Never imported by evoround (Harbor needs Python >= 3.12): the file is copied into Harbor's
interpreter and started there, one process per attempt (see ``_client.py``). It holds ONE
Harbor agent instance for the whole attempt and hands it each round's instruction in order.

Protocol (``PROTOCOL``): JSON objects, one per line, on stdin/stdout (fd 1 is pointed at
stderr, the log, before Harbor is imported, so stray prints cannot corrupt it).
Requests ``{"id", "op"}`` (hello, describe, catalogue, start, run, save_state,
restore_state, close) are answered ``{"id", "ok", "result"|"error", "kind"}``. While one
runs, Harbor's ``BaseEnvironment`` calls go back as ``{"call", "op"}`` (exec, upload_file,
upload_dir, download_file, download_dir), answered ``{"reply", "ok", "result"|"error"}``
by evoround on its ``Sandbox``. Files travel base64-encoded, folders as tar archives
unpacked with ``tarfile``'s ``data`` filter (no links or paths outside the target).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib.metadata
import inspect
import io
import json
import logging
import os
import shutil
import sys
import tarfile
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

PROTOCOL = 1
MAX_TRANSFER_BYTES = 256 * 1024 * 1024
"""Largest file or directory archive moved in one call (base64 inflates it by a third)."""


class BridgeError(Exception):
    """An error with a kind evoround maps to a message (``unknown_agent``, ``setup``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Channel:
    """Requests in, replies matched to outstanding calls; one writer lock for stdout."""

    def __init__(self, out: io.TextIOBase) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self.loop = asyncio.get_running_loop()
        self.requests: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def send(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, default=str, ensure_ascii=False)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()

    def start_reader(self) -> None:
        def read() -> None:
            for line in sys.stdin:
                self.loop.call_soon_threadsafe(self._dispatch, line)
            self.loop.call_soon_threadsafe(self._dispatch, None)

        threading.Thread(target=read, name="bridge-stdin", daemon=True).start()

    def _dispatch(self, line: str | None) -> None:
        if line is None:  # evoround went away: stop
            self.requests.put_nowait(None)
            return
        line = line.strip()
        if not line:
            return
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            print(f"bridge: ignoring a line that is not JSON: {line[:200]!r}", file=sys.stderr)
            return
        if "reply" in msg:
            fut = self._pending.pop(msg["reply"], None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            return
        self.requests.put_nowait(msg)

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        self._next += 1
        cid = self._next
        fut: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[cid] = fut
        try:
            self.send({"call": cid, "op": op, **args})
            msg = await fut
        finally:
            self._pending.pop(cid, None)
        if not msg.get("ok"):
            raise RuntimeError(str(msg.get("error") or f"{op} failed"))
        return dict(msg.get("result") or {})


def _tar_dir(src: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for p in sorted(src.rglob("*")):
            tf.add(p, arcname=str(p.relative_to(src)), recursive=False)
    data = buf.getvalue()
    if len(data) > MAX_TRANSFER_BYTES:
        raise RuntimeError(f"{src}: {len(data)} bytes is more than one transfer may carry")
    return data


def _untar(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
        tf.extractall(dest, filter="data")


# ---- Harbor's environment on evoround's sandbox -----------------------------------


def environment_class() -> type[Any]:
    from harbor.environments.base import BaseEnvironment, ExecResult

    class EvoroundEnvironment(BaseEnvironment):
        """Harbor's ``BaseEnvironment`` whose every operation is a call back to evoround."""

        channel: Channel

        @staticmethod
        def type() -> str:
            return "evoround"

        def _validate_definition(self) -> None:
            """The sandbox is evoround's: nothing of Harbor's to validate."""

        async def start(self, force_build: bool) -> None:
            # Harbor's orchestrator makes the log folders; agents write to them.
            await self.exec("mkdir -p /logs/agent /logs/artifacts", timeout_sec=60, user="root")

        async def stop(self, delete: bool) -> None:
            """evoround owns the sandbox's lifetime."""

        async def exec(
            self,
            command: str,
            cwd: str | None = None,
            env: dict[str, str] | None = None,
            timeout_sec: int | None = None,
            user: str | int | None = None,
        ) -> Any:
            res = await self.channel.call(
                "exec",
                command=command,
                cwd=cwd or self.task_env_config.workdir,
                env=self._merge_env(env) or {},
                timeout_sec=timeout_sec,
                user=self._resolve_user(user),
            )
            if res.get("timed_out"):
                # What Harbor's own Docker environment does on a timeout.
                raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
            return ExecResult(
                stdout=res.get("stdout"),
                stderr=res.get("stderr"),
                return_code=int(res.get("return_code", 1)),
            )

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            data = Path(source_path).read_bytes()
            if len(data) > MAX_TRANSFER_BYTES:
                raise RuntimeError(f"{source_path}: too large to upload")
            await self.channel.call(
                "upload_file", path=target_path, data=base64.b64encode(data).decode()
            )

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            tar = _tar_dir(Path(source_dir))
            await self.channel.call(
                "upload_dir", path=target_dir, tar=base64.b64encode(tar).decode()
            )

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            res = await self.channel.call("download_file", path=source_path)
            target = Path(target_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(res["data"]))

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            res = await self.channel.call("download_dir", path=source_dir)
            _untar(base64.b64decode(res["tar"]), Path(target_dir))

    return EvoroundEnvironment


# ---- session continuation for Terminus-2 -------------------------------------------


def continuing_terminus(base: type) -> type:
    """Terminus-2 that carries its conversation from one ``run()`` to the next.

    Harbor's Terminus-2 opens a new ``Chat`` in every ``run()`` (only the tmux session
    survives). harbor_multiturn, the runner behind EvoCode-Bench's leaderboard, keeps
    the conversation instead; this subclass does the same without touching Terminus-2's
    loop: from the second round on, the new chat starts with the previous messages, and
    the round opens with the new instruction and the terminal's current state (the
    first round keeps Harbor's full prompt template).
    """

    class ContinuingTerminus(base):
        _evo_history: list[Any] | None = None
        _evo_terminal: str | None = None

        async def run(self, instruction: str, environment: Any, context: Any) -> None:
            session = getattr(self, "_session", None)
            if self._evo_history and session is not None:
                original = session.get_incremental_output

                async def capture() -> str:
                    session.get_incremental_output = original  # once: the round's opening
                    out = await original()
                    self._evo_terminal = out
                    return out

                session.get_incremental_output = capture
            try:
                await super().run(instruction, environment, context)
            finally:
                chat = getattr(self, "_chat", None)
                if chat is not None:
                    self._evo_history = list(chat.messages)

        async def _run_agent_loop(
            self, initial_prompt: str, chat: Any, original_instruction: str = "", **kw: Any
        ) -> None:
            if self._evo_history:
                chat.messages.extend(self._evo_history)
                with contextlib.suppress(Exception):
                    chat.reset_response_chain()
                terminal = self._limit_output_length(self._evo_terminal or "")
                initial_prompt = f"{original_instruction.strip()}\n\n{terminal}".rstrip() + "\n"
                steps = getattr(self, "_trajectory_steps", None)
                if steps and getattr(steps[0], "source", None) == "user":
                    steps[0].message = initial_prompt  # the trajectory shows what was sent
            await super()._run_agent_loop(
                initial_prompt=initial_prompt,
                chat=chat,
                original_instruction=original_instruction,
                **kw,
            )

    ContinuingTerminus.__name__ = ContinuingTerminus.__qualname__ = base.__name__
    return ContinuingTerminus


# ---- agents ------------------------------------------------------------------------


def _agent_class(spec: str) -> type[Any]:
    """``terminus-2`` (Harbor's registered name) or ``module.path:Class``."""
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    if ":" in spec:
        module, _, cls_name = spec.partition(":")
        try:
            mod = __import__(module, fromlist=[cls_name])
            cls = getattr(mod, cls_name)
        except (ImportError, AttributeError) as e:
            raise BridgeError("unknown_agent", f"cannot import {spec}: {e}") from None
    else:
        if spec not in _registered():
            known = ", ".join(_registered())
            raise BridgeError(
                "unknown_agent", f"Harbor has no agent named {spec!r} (known: {known})"
            )
        try:
            cls = AgentFactory.get_agent_class(AgentName(spec))
        except Exception as e:  # an agent whose optional dependencies are missing
            raise BridgeError("unknown_agent", f"cannot load Harbor agent {spec!r}: {e}") from None
    from harbor.agents.base import BaseAgent

    if not (isinstance(cls, type) and issubclass(cls, BaseAgent)):
        raise BridgeError("unknown_agent", f"{spec} is not a Harbor agent (BaseAgent subclass)")
    return cls


def _registered() -> list[str]:
    """Harbor's agent names that its factory can build (``AgentName`` has a few more)."""
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    mapping = getattr(AgentFactory, "_AGENT_MAP", None)
    if isinstance(mapping, dict):
        return sorted(str(getattr(k, "value", k)) for k in mapping)
    return sorted(AgentName.values())


def _is_installed(cls: type) -> bool:
    from harbor.agents.installed.base import BaseInstalledAgent

    return issubclass(cls, BaseInstalledAgent)


def _is_terminus(cls: type) -> bool:
    try:
        from harbor.agents.terminus_2 import Terminus2
    except ImportError:
        return False
    return issubclass(cls, Terminus2)


def _accepted_kwargs(cls: type) -> list[str]:
    names: set[str] = set()
    model = getattr(cls, "options_model", None)
    if model is not None and hasattr(model, "model_fields"):
        names.update(model.model_fields)
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        with contextlib.suppress(TypeError, ValueError):
            for p in inspect.signature(init).parameters.values():
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    names.add(p.name)
    names.discard("self")
    return sorted(names)


def _continuation(cls: type) -> str:
    caps = getattr(cls, "capabilities", None)
    if _is_terminus(cls):
        return "conversation"
    if caps is not None and getattr(caps, "resume", False):
        return "native"
    return "none"


def describe(spec: str) -> dict[str, Any]:
    cls = _agent_class(spec)
    name = _safe(cls.name) or spec
    caps = getattr(cls, "capabilities", None)
    return {
        "spec": spec,
        "name": name,
        "import_path": f"{cls.__module__}:{cls.__qualname__}",
        "installed": _is_installed(cls),
        "continuation": _continuation(cls),
        "atif": bool(getattr(caps, "atif", False)),
        "accepts": _accepted_kwargs(cls),
    }


def catalogue() -> list[dict[str, Any]]:
    out = []
    for name in _registered():
        try:
            out.append(describe(name))
        except BridgeError as e:
            out.append({"spec": name, "name": name, "error": str(e)})
    return out


def _new_agent(cls: type[Any], spec: str, req: dict[str, Any], paths: Any) -> Any:
    """The agent with the model and options evoround asked for; options it does not take
    are a ``config`` error naming the agent."""
    kwargs = dict(req.get("kwargs") or {})
    try:
        return cls(
            logs_dir=paths.agent_dir,
            model_name=req.get("model") or None,
            extra_env=dict(req.get("extra_env") or {}) or None,
            **kwargs,
        )
    except (TypeError, ValueError) as e:
        raise BridgeError("config", f"{spec}: {e}") from None


# ---- the session ------------------------------------------------------------------


class Session:
    """One Harbor agent and one environment for one evoround attempt."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.agent: Any = None
        self.env: Any = None
        self.info: dict[str, Any] = {}
        self.rounds = 0
        self.tmp = Path(tempfile.mkdtemp(prefix="evoround-harbor-"))

    async def start(self, req: dict[str, Any]) -> dict[str, Any]:
        """Build the agent and its environment (calls back to evoround), then run the
        agent's setup (installed agents install themselves there)."""
        from harbor.models.trial.paths import TrialPaths

        spec = str(req["agent"])
        cls = _agent_class(spec)
        self.info = describe(spec)
        if _is_terminus(cls) and req.get("continue_conversation", True):
            cls = continuing_terminus(cls)
        paths = TrialPaths(trial_dir=self.tmp / "trial")
        paths.mkdir()
        self.env = self._environment(req, paths)
        self.agent = _new_agent(cls, spec, req, paths)
        self.agent.session_id = str(req.get("session_id") or "evoround")
        await self.env.start(force_build=False)
        await self._setup(spec, req)
        return {**self.info, "version": _safe(self.agent.version)}

    def _environment(self, req: dict[str, Any], paths: Any) -> Any:
        from harbor.models.task.config import EnvironmentConfig

        env_cls = environment_class()
        env_cls.channel = self.channel
        env_dir = self.tmp / "environment"
        env_dir.mkdir(exist_ok=True)
        return env_cls(
            environment_dir=env_dir,
            environment_name=str(req.get("task") or "task"),
            session_id=str(req.get("session_id") or "evoround"),
            trial_paths=paths,
            task_env_config=EnvironmentConfig(workdir=req.get("workdir") or None),
            persistent_env=dict(req.get("env") or {}),
        )

    async def _setup(self, spec: str, req: dict[str, Any]) -> None:
        """The agent's setup, bounded: any failure is a ``setup`` error evoround reports."""
        timeout = float(req.get("setup_timeout_sec") or 360)
        try:
            with self.env.scoped_exec_env(self.agent.extra_env):
                await asyncio.wait_for(self.agent.setup(environment=self.env), timeout=timeout)
        except TimeoutError:
            raise BridgeError("setup", f"{spec}: setup timed out after {timeout:g}s") from None
        except Exception as e:
            raise BridgeError("setup", f"{spec}: setup failed: {_short(e)}") from None

    async def run(self, req: dict[str, Any]) -> dict[str, Any]:
        from harbor.models.agent.context import AgentContext

        if self.agent is None:
            raise BridgeError("protocol", "run before start")
        logs = Path(self.agent.logs_dir)
        for old in logs.glob("trajectory*.json"):
            old.unlink()
        context = AgentContext()
        timeout = req.get("timeout_sec")
        resume = self.rounds > 0 and self.info.get("continuation") == "native"
        call = self.agent.resume if resume else self.agent.run
        status, error = "ok", None
        try:
            with self.env.scoped_exec_env(self.agent.extra_env):
                coro = call(str(req["instruction"]), self.env, context)
                if timeout:
                    await asyncio.wait_for(coro, timeout=float(timeout))
                else:
                    await coro
        except TimeoutError:
            status, error = "timeout", f"agent timeout after {float(timeout or 0):g}s"
        except Exception as e:
            status, error = "error", _short(e)
            traceback.print_exc(file=sys.stderr)
        self.rounds += 1
        if self.info.get("installed"):
            # Installed agents log inside the container; Harbor downloads and converts.
            with contextlib.suppress(Exception):
                await self.env.download_dir("/logs/agent", logs)
            if context.is_empty():
                with contextlib.suppress(Exception):
                    self.agent.populate_context_post_run(context)
        trajectories = []
        for p in sorted(logs.glob("trajectory*.json")):
            with contextlib.suppress(OSError, ValueError):
                trajectories.append(
                    {"file": p.name, "atif": json.loads(p.read_text(encoding="utf-8"))}
                )
        return {
            "status": status,
            "error": error,
            "mode": "resume" if resume else "run",
            "trajectories": trajectories,
            "context": json.loads(context.model_dump_json(exclude={"rollout_details"})),
        }

    def save_state(self) -> dict[str, Any]:
        history = getattr(self.agent, "_evo_history", None)
        state: dict[str, Any] = {
            "protocol": PROTOCOL,
            "agent": self.info.get("spec"),
            "rounds": self.rounds,
            "continuation": self.info.get("continuation"),
        }
        if history is not None:
            state["messages"] = json.loads(json.dumps(history, default=str))
        return state

    def restore_state(self, state: dict[str, Any]) -> dict[str, Any]:
        cont = self.info.get("continuation")
        if cont == "conversation":
            msgs = state.get("messages")
            if not isinstance(msgs, list):
                raise BridgeError("restore", "the saved state has no conversation to restore")
            self.agent._evo_history = msgs
            self.rounds = int(state.get("rounds") or 0)
            return {"restored": len(msgs)}
        if cont == "native":
            raise BridgeError(
                "restore",
                f"{self.info.get('spec')} keeps its session inside the container, outside "
                "the workspace snapshot: it cannot be continued in a new sandbox",
            )
        self.rounds = int(state.get("rounds") or 0)
        return {"restored": 0}  # no session to continue: every round starts fresh anyway

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _short(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip() or type(e).__name__}"[-2000:]


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def hello() -> dict[str, Any]:
    if sys.version_info < (3, 12):
        raise BridgeError("runtime", f"Python {sys.version.split()[0]} is too old for harbor")
    try:
        import harbor.agents.factory  # noqa: F401 - the import is the check
    except Exception as e:
        raise BridgeError("runtime", f"cannot import harbor: {_short(e)}") from None
    return {
        "protocol": PROTOCOL,
        "harbor": importlib.metadata.version("harbor"),
        "python": sys.version.split()[0],
    }


# ---- main -------------------------------------------------------------------------


async def serve(out: io.TextIOBase) -> None:
    channel = Channel(out)
    channel.start_reader()
    session = Session(channel)
    try:
        while True:
            req = await channel.requests.get()
            if req is None:
                return
            rid, op = req.get("id"), req.get("op")
            try:
                if op == "hello":
                    result: Any = hello()
                elif op == "describe":
                    result = describe(str(req["agent"]))
                elif op == "catalogue":
                    result = {"agents": catalogue()}
                elif op == "start":
                    result = await session.start(req)
                elif op == "run":
                    result = await session.run(req)
                elif op == "save_state":
                    result = session.save_state()
                elif op == "restore_state":
                    result = session.restore_state(dict(req.get("state") or {}))
                elif op == "close":
                    channel.send({"id": rid, "ok": True, "result": {}})
                    return
                else:
                    raise BridgeError("protocol", f"unknown op {op!r}")
                channel.send({"id": rid, "ok": True, "result": result})
            except BridgeError as e:
                channel.send({"id": rid, "ok": False, "kind": e.kind, "error": str(e)})
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                channel.send({"id": rid, "ok": False, "kind": "internal", "error": _short(e)})
    finally:
        session.close()


def main() -> None:
    # The protocol gets a private copy of stdout; fd 1 now goes to the log, so a stray
    # print from Harbor or LiteLLM cannot corrupt the protocol.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(out))
    # Everything is answered and the session cleaned up: skip the interpreter's shutdown
    # (LiteLLM's exit hooks take seconds), which would only delay the engine.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
