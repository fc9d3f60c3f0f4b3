"""The agent contract: a scaffold starts ONE session that lives across all rounds."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from evoround.results import TrajectoryEvent
from evoround.sandboxes import Sandbox
from evoround.tasks import Round, Task

STATE_DIR = "agent"
"""Folder, in a round's artefacts, that holds the session state saved after the round."""


class TraceStatus(StrEnum):
    ok = "ok"
    timeout = "timeout"
    error = "error"
    model_api = "model_api"
    """The agent's model API failed (unreachable, kept erroring) through its own retries:
    for scaffolds that report it in their output rather than raise (Claude Code)."""


@dataclass(frozen=True)
class RoundInput:
    task: Task
    round: Round
    message: str
    """The user message of the round, with any system reminder already appended."""
    timeout_sec: float
    artifacts_dir: Path | None = None
    """The round's artefact folder; sessions save their state in ``STATE_DIR`` under it
    after every round, so an attempt can be resumed with :meth:`AgentSession.restore_state`."""
    model_headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers to send with every model call of this round (``--proxy``'s round tag)."""


@dataclass
class RoundTrace:
    """What came back from one round: the trajectory segment and how it ended."""

    events: list[TrajectoryEvent] = field(default_factory=list)
    status: TraceStatus = TraceStatus.ok
    error: str | None = None


class AgentSession(ABC):
    @abstractmethod
    def run_round(self, inp: RoundInput) -> RoundTrace:
        """Do the round's work in the sandbox; must return by ``inp.timeout_sec``."""

    def close(self) -> None:
        """End the session (idempotent)."""

    def restore_state(self, state_dir: Path) -> None:
        """Continue the conversation saved in ``state_dir`` (``round-NN/agent`` of a previous
        run) instead of starting fresh: call right after :meth:`Scaffold.start`."""
        raise NotImplementedError(f"{type(self).__name__} cannot resume a saved session")


class Scaffold(ABC):
    name: str
    model: str | None = None
    has_process: bool = True
    """False for agents with no process of their own (the oracle applies reference files):
    checks about commands and messages are then not_applicable; diff checks still apply."""
    persistent_processes: bool = False
    """True for agents that leave processes running in the sandbox between commands (Harbor's
    Terminus-2 keeps a tmux server). The hardened local sandbox kills whatever a command
    leaves behind, so for these agents it drops the per-command pid namespace (bubblewrap
    keeps the filesystem and network isolation; with unshare they run unhardened, trusted
    only); the Docker sandbox keeps them in the attempt's container."""

    def sandbox_mounts(self) -> dict[str, str]:
        """Host folders (-> container paths) the agent needs inside a container, mounted
        read-only by container backends; a session must still work without them."""
        return {}

    @abstractmethod
    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        """Start a session bound to ``sandbox`` for ``task``; it serves every round."""


def round_message(task: Task, round_: Round) -> str:
    """The user turn as the agent sees it: instruction plus the round's system reminder."""
    msg = round_.instruction.rstrip() + "\n"
    if round_.spec.system_reminder:
        msg += f"\n<system-reminder>\n{round_.spec.system_reminder.strip()}\n</system-reminder>\n"
    return msg
