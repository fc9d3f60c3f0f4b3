"""``--agent harbor:NAME``: Harbor's own agents in evoround's multi-round session.

evoround's side of the bridge (the other side is ``_bridge_main.py``, run in Harbor's
interpreter): one bridge process per attempt holds one Harbor agent instance, and
every round's instruction goes to that same instance, in order. While the agent works,
its ``BaseEnvironment`` calls come back here and are served on evoround's
:class:`~evoround.sandboxes.Sandbox` (exec with timeout, env and user; upload and
download of files and folders), so snapshots, verification and grading stay evoround's.

How a session continues, by agent (the bridge's ``describe`` says which):

- ``conversation`` (Terminus-2): the bridge carries the chat from round to round and
  the tmux session lives on in the container; the chat is saved after every round
  (``round-NN/agent/state.json``) and restored on ``--resume`` (the tmux session
  cannot be: a resumed attempt gets a fresh terminal in a new container).
- ``native`` (installed agents with ``capabilities.resume``: Claude Code, Codex, ...):
  Harbor's ``resume()`` continues the agent's own session, which lives in the container
  outside the workspace, so ``--resume`` cannot continue it and says so.
- ``none``: every round is a fresh conversation (files and processes persist); each
  round's trajectory opens with a system event saying so.

Installed agents install themselves inside the container at setup (npm, curl, pip):
in a container without network (evoround's default) that fails, and the error says so.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shlex
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from evoround.fileio import atomic_write
from evoround.results import EventType, TrajectoryEvent
from evoround.sandboxes import Sandbox, SandboxError
from evoround.scaffolds.harbor._atif import MAIN_FILE, atif_events, context_usage
from evoround.scaffolds.harbor._install import HarborError, harbor_runtime
from evoround.scaffolds.harbor._process import (
    START_TIMEOUT_SEC,
    BridgeRequestError,
    open_bridge,
)
from evoround.scaffolds.session import (
    STATE_DIR,
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
)
from evoround.settings import evoround_home, settings
from evoround.tasks import Task

SETUP_TIMEOUT_SEC = 360.0
"""Harbor's default agent setup budget (``BaseAgent.DEFAULT_SETUP_TIMEOUT_SEC``)."""
GRACE_SEC = 60.0
"""How long past a round's deadline the bridge may take to report before it is killed."""
MAX_TRANSFER_BYTES = 256 * 1024 * 1024
STATE_FILE = "state.json"

CONTINUATION_HELP = {
    "conversation": "keeps its conversation and its tmux session across rounds",
    "native": "continues its own session with Harbor's resume() (not across --resume)",
    "none": "cannot continue a session: every round starts a fresh conversation",
}
NOTES = {
    "conversation": "keeps one conversation across rounds (the bridge carries Terminus-2's "
    "chat, as harbor_multiturn does); a resumed attempt continues it with a new terminal",
    "native": "continues its own session between rounds with Harbor's resume(); that session "
    "lives in the container, so an interrupted attempt cannot be resumed",
    "none": "cannot continue a session: every round started a fresh conversation (the "
    "workspace persisted); not comparable with a persistent session",
}


def _agent_kwargs() -> dict[str, Any]:
    raw = settings().harbor_agent_kwargs
    if not raw:
        return {}
    try:
        val = json.loads(raw)
    except ValueError as e:
        raise HarborError(f"EVOROUND_HARBOR_AGENT_KWARGS is not JSON: {e}") from None
    if not isinstance(val, dict):
        raise HarborError("EVOROUND_HARBOR_AGENT_KWARGS must be a JSON object")
    return val


def _key_var(model: str | None) -> str:
    provider = (model or "openai").partition("/")[0] if "/" in (model or "") else "openai"
    return {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}.get(
        provider, f"{provider.upper().replace('-', '_')}_API_KEY"
    )


class HarborScaffold(Scaffold):
    """A Harbor agent by registered name (``terminus-2``) or import path (``mod:Class``)."""

    persistent_processes = True  # Terminus-2's tmux server lives across commands

    def __init__(
        self,
        spec: str,
        *,
        model: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        kwargs: dict[str, Any] | None = None,
        home: Path | None = None,
    ) -> None:
        self.spec = spec
        self.name = f"harbor:{spec}"
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.kwargs = {**_agent_kwargs(), **(kwargs or {})}
        self.continue_conversation = bool(self.kwargs.pop("continue_conversation", True))
        self.runtime = harbor_runtime(home or evoround_home())
        bridge, self.harbor = open_bridge(self.runtime, self.bridge_env())
        try:
            self.info = bridge.request("describe", timeout=START_TIMEOUT_SEC, agent=spec)
        except BridgeRequestError as e:
            raise HarborError(f"--agent {self.name}: {e}") from None
        finally:
            bridge.close()
        if self.info.get("continuation") == "conversation" and not model:
            raise HarborError(f"--agent {self.name} needs --model PROVIDER/NAME (litellm's name)")
        if not self.continue_conversation and self.info.get("continuation") == "conversation":
            self.info["continuation"] = "none"
        self.notes = [NOTES[self.continuation]]
        """For the report (and the job's lock, so a resume with other arguments is refused):
        how this agent's session behaved across rounds, and its extra arguments."""
        if self.kwargs or not self.continue_conversation:
            args = {**self.kwargs, "continue_conversation": self.continue_conversation}
            shown = {
                k: "***" if any(w in k.lower() for w in ("key", "token", "secret")) else v
                for k, v in args.items()
            }
            self.notes.append(f"ran with agent arguments {json.dumps(shown, sort_keys=True)}")
        if self.continuation == "none":
            print(
                f"evoround: {self.name} {CONTINUATION_HELP['none']}; results are not "
                "comparable with a persistent session",
                file=sys.stderr,
            )

    @property
    def continuation(self) -> str:
        return str(self.info.get("continuation") or "none")

    @property
    def installed(self) -> bool:
        """Harbor's installed agents run inside the sandbox; the others in the bridge."""
        return bool(self.info.get("installed"))

    def bridge_env(self) -> dict[str, str]:
        """API keys for the bridge: the user's, or a placeholder for a local endpoint."""
        var = _key_var(self.model)
        if self.api_key:
            return {var: self.api_key}
        if self.api_base and not os.environ.get(var):
            return {var: "evoround-local"}
        return {}

    def connection(self, sandbox: Sandbox) -> tuple[dict[str, Any], dict[str, str]]:
        """``--api-base`` the way Harbor takes it: the agent's ``api_base``/``base_url``
        option if it has one, else the provider's base-URL variable for the agent's
        process. Installed agents call the model from inside the sandbox, which then
        opens that endpoint (and only it)."""
        if not self.api_base:
            return {}, {}
        url = sandbox.expose_endpoint(self.api_base) if self.installed else self.api_base
        accepts = set(self.info.get("accepts") or [])
        for name in ("api_base", "base_url"):
            if name in accepts:
                return {name: url}, {}
        if (self.model or "").startswith("anthropic/"):
            return {}, {"ANTHROPIC_BASE_URL": url.rstrip("/").removesuffix("/v1")}
        return {}, {"OPENAI_BASE_URL": url, "OPENAI_API_BASE": url}

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        try:
            return HarborSession(self, task, sandbox)
        except HarborError as e:  # recorded as the attempt's infra failure, with the reason
            raise SandboxError(str(e)) from None


def _path(msg: dict[str, Any]) -> str:
    return str(msg.get("path") or "")


def _as_user(cmd: str, user: Any) -> str:
    """``cmd`` run as Harbor's ``user`` (a uid or a name); as is for root or none."""
    if user in (None, "", 0, "0", "root"):
        return cmd
    if isinstance(user, int) or str(user).isdigit():
        return (
            f"setpriv --reuid={int(user)} --regid={int(user)} --clear-groups "
            f"bash -c {shlex.quote(cmd)}"
        )
    return f"runuser -u {shlex.quote(str(user))} -- bash -c {shlex.quote(cmd)}"


_EnvironmentCall = Callable[["HarborSession", dict[str, Any]], dict[str, Any]]


class HarborSession(AgentSession):
    def __init__(self, cfg: HarborScaffold, task: Task, sandbox: Sandbox) -> None:
        self.cfg = cfg
        self.task = task
        self.sandbox = sandbox
        self.rounds_done = 0
        self._deadline: float | None = None
        self._dead: str | None = None
        if cfg.continuation == "conversation":
            self._need_tmux()
        kwargs, extra_env = cfg.connection(sandbox)
        self.bridge, _ = open_bridge(cfg.runtime, cfg.bridge_env())
        self._deadline = time.monotonic() + SETUP_TIMEOUT_SEC
        try:
            self.info = self.bridge.request(
                "start",
                timeout=SETUP_TIMEOUT_SEC + GRACE_SEC,
                serve=self._serve,
                agent=cfg.spec,
                model=cfg.model,
                kwargs={**kwargs, **cfg.kwargs},
                extra_env=extra_env,
                workdir=sandbox.workdir,
                task=task.name,
                session_id=f"{task.name}__evoround",
                setup_timeout_sec=SETUP_TIMEOUT_SEC,
                continue_conversation=cfg.continue_conversation,
                env=self._tmux_env(),
            )
        except BridgeRequestError as e:
            self.bridge.kill()
            raise HarborError(self._setup_message(e)) from None
        except BaseException:
            self.bridge.kill()
            raise
        finally:
            self._deadline = None

    # ---- setup ------------------------------------------------------------------------

    def _need_tmux(self) -> None:
        res = self.sandbox.exec("command -v tmux", timeout=30)
        if res.exit_code != 0:
            raise HarborError(
                f"{self.cfg.name} drives a tmux session and the task's sandbox has no tmux: "
                "install it in the task image (Debian: `apt-get install -y tmux` in "
                "environment/Dockerfile); the sandbox has no network to fetch it"
            )

    def _tmux_env(self) -> dict[str, str]:
        """In the local sandbox every attempt gets its own tmux server (not the user's)."""
        from evoround.sandboxes import LocalSandbox

        if isinstance(self.sandbox, LocalSandbox):
            return {"TMUX_TMPDIR": self.sandbox.scratch}
        return {}

    def _setup_message(self, e: BridgeRequestError) -> str:
        msg = f"--agent {self.cfg.name}: {e}"
        if e.kind == "setup" and self.cfg.installed:
            msg += (
                f" ({self.cfg.name} installs itself inside the sandbox with npm/curl/pip at "
                "setup and needs the internet there; evoround's containers have network=none "
                "unless the task asks for it)"
            )
        return msg

    # ---- the sandbox, served to Harbor's environment ------------------------------------

    def _left(self, asked: float | None) -> float | None:
        if self._deadline is None:
            return asked
        left = max(0.001, self._deadline - time.monotonic())
        return left if asked is None else min(asked, left)

    def _serve(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer one environment call of the bridge (Harbor's ``BaseEnvironment``)."""
        op = msg.get("op")
        handler = self._ENVIRONMENT_CALLS.get(op) if isinstance(op, str) else None
        if handler is None:
            raise ValueError(f"unknown environment call {op!r}")
        return handler(self, msg)

    def _exec(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A command, as the user Harbor asks for, within what is left of the round."""
        asked = msg.get("timeout_sec")
        res = self.sandbox.exec(
            _as_user(str(msg["command"]), msg.get("user")),
            timeout=self._left(float(asked) if asked else None),
            cwd=msg.get("cwd") or None,
            env={str(k): str(v) for k, v in (msg.get("env") or {}).items()} or None,
        )
        return {
            "stdout": res.stdout,
            "stderr": res.stderr,
            "return_code": res.exit_code,
            "timed_out": res.timed_out,
        }

    def _upload_file(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.sandbox.write_file(_path(msg), base64.b64decode(msg["data"]))
        return {}

    def _upload_dir(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A tar archive, unpacked with the ``data`` filter (no links out, no devices)."""
        with tempfile.TemporaryDirectory(prefix="evoround-harbor-up-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(base64.b64decode(msg["tar"]))) as tf:
                tf.extractall(tmp, filter="data")
            self.sandbox.copy_in(tmp, _path(msg))
        return {}

    def _download_file(self, msg: dict[str, Any]) -> dict[str, Any]:
        path = _path(msg)
        data = self.sandbox.read_file(path)
        if len(data) > MAX_TRANSFER_BYTES:
            raise OSError(f"{path}: {len(data)} bytes, more than one transfer may carry")
        return {"data": base64.b64encode(data).decode()}

    def _download_dir(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Tar and base64 in the sandbox, cut at one transfer's size (a larger folder is an
        error, not a truncated archive)."""
        path = _path(msg)
        cap = MAX_TRANSFER_BYTES * 4 // 3 + 4
        res = self.sandbox.exec(
            f"set -o pipefail; tar -C {shlex.quote(path)} -cf - . | base64 -w0 | head -c {cap}",
            timeout=self._left(300.0),
        )
        if res.exit_code != 0:
            raise OSError(f"download {path}: {res.stderr.strip()[-500:] or res.exit_code}")
        if len(res.stdout) >= cap:
            raise OSError(f"download {path}: more than one transfer may carry")
        return {"tar": res.stdout.strip()}

    _ENVIRONMENT_CALLS: ClassVar[dict[str, _EnvironmentCall]] = {
        "exec": _exec,
        "upload_file": _upload_file,
        "upload_dir": _upload_dir,
        "download_file": _download_file,
        "download_dir": _download_dir,
    }
    """The bridge's environment calls by ``op`` (the protocol of ``_bridge_main``)."""

    # ---- rounds ---------------------------------------------------------------------

    def run_round(self, inp: RoundInput) -> RoundTrace:
        trace = RoundTrace()
        if self.rounds_done and self.cfg.continuation == "none":
            trace.events.append(
                TrajectoryEvent(
                    type=EventType.message,
                    role="system",
                    content=f"evoround: {self.cfg.name} {CONTINUATION_HELP['none']} "
                    f"(round {inp.round.index}).",
                )
            )
        if self._dead is not None:
            trace.status, trace.error = TraceStatus.error, self._dead
            trace.events.append(TrajectoryEvent(type=EventType.error, content=self._dead))
            return trace
        self._deadline = time.monotonic() + inp.timeout_sec
        try:
            res = self.bridge.request(
                "run",
                timeout=inp.timeout_sec + GRACE_SEC,
                serve=self._serve,
                instruction=inp.message,
                round=inp.round.index,
                timeout_sec=inp.timeout_sec,
            )
        except HarborError as e:
            self._dead = f"the Harbor bridge failed: {e}"
            self.bridge.kill()
            trace.status, trace.error = TraceStatus.error, self._dead
            trace.events.append(TrajectoryEvent(type=EventType.error, content=self._dead))
            self._keep_log(inp)
            return trace
        finally:
            self._deadline = None
        self.rounds_done += 1
        trace.events.extend(self._events(res))
        status = res.get("status")
        if status == "timeout":
            trace.status = TraceStatus.timeout
            trace.error = res.get("error") or f"agent timeout after {inp.timeout_sec:g}s"
        elif status == "error":
            trace.status = TraceStatus.error
            trace.error = f"{self.cfg.name}: {res.get('error')}"
            trace.events.append(TrajectoryEvent(type=EventType.error, content=trace.error))
        if inp.artifacts_dir is not None:
            self.save_state(inp.artifacts_dir / STATE_DIR)
            self._keep_log(inp, res)
        return trace

    def _events(self, res: dict[str, Any]) -> list[TrajectoryEvent]:
        events: list[TrajectoryEvent] = []
        for item in res.get("trajectories") or []:
            if isinstance(item, dict) and MAIN_FILE.match(str(item.get("file") or "")):
                events.extend(atif_events(item.get("atif") or {}))
        if not any(e.usage for e in events):
            usage = context_usage(res.get("context") or {})
            if usage:
                assistant = [e for e in events if e.role == "assistant"] or events
                if assistant:
                    assistant[-1].usage = usage
                else:
                    events.append(
                        TrajectoryEvent(type=EventType.message, role="assistant", usage=usage)
                    )
        return events

    def _keep_log(self, inp: RoundInput, res: dict[str, Any] | None = None) -> None:
        """The bridge's log and Harbor's raw trajectory beside the round, for debugging."""
        if inp.artifacts_dir is None:
            return
        inp.artifacts_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            (inp.artifacts_dir / "harbor-bridge.log").write_bytes(self.bridge.log_bytes())
        for item in (res or {}).get("trajectories") or []:
            name = str(item.get("file") or "")
            if isinstance(item, dict) and name.startswith("trajectory") and "/" not in name:
                (inp.artifacts_dir / f"harbor-{name}").write_text(
                    json.dumps(item.get("atif"), indent=1), encoding="utf-8"
                )

    # ---- state --------------------------------------------------------------------------

    def save_state(self, state_dir: Path) -> None:
        state = self.bridge.request("save_state", timeout=60)
        state_dir.mkdir(parents=True, exist_ok=True)
        doc = {
            "scaffold": self.cfg.name,
            "harbor": self.cfg.harbor.get("harbor"),
            "rounds_done": self.rounds_done,
            "bridge": state,
        }
        atomic_write(state_dir / STATE_FILE, json.dumps(doc, indent=1))

    def restore_state(self, state_dir: Path) -> None:
        if self.cfg.continuation == "native":
            raise NotImplementedError(
                f"{self.cfg.name} keeps its session inside the container, outside the "
                "workspace snapshot, so it cannot be continued in a new sandbox"
            )
        path = state_dir / STATE_FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise NotImplementedError(f"no saved {self.cfg.name} session in {path}: {e}") from e
        if doc.get("scaffold") != self.cfg.name:
            raise NotImplementedError(
                f"{path} was saved by {doc.get('scaffold')}, not {self.cfg.name}"
            )
        try:
            self.bridge.request("restore_state", timeout=60, state=doc.get("bridge") or {})
        except BridgeRequestError as e:
            raise NotImplementedError(str(e)) from None
        self.rounds_done = int(doc.get("rounds_done") or 0)

    def close(self) -> None:
        bridge = getattr(self, "bridge", None)
        if bridge is not None:
            bridge.close()
        env = self._tmux_env()
        if env:  # the local sandbox: tmux daemonises, so its server would outlive the attempt
            with contextlib.suppress(Exception):
                self.sandbox.exec("tmux kill-server", timeout=30, env=env)
