"""The agent contract every scaffold implements: one session per attempt, serving every
round. A sub-room of its own so ``scaffolds/harbor`` (which the scaffolds door reaches
lazily, through ``scaffold_from_name``) can use it without an import circle.
"""

from evoround.scaffolds.session._protocol import (
    STATE_DIR,
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
    round_message,
)

__all__ = [
    "STATE_DIR",
    "AgentSession",
    "RoundInput",
    "RoundTrace",
    "Scaffold",
    "TraceStatus",
    "round_message",
]
