"""The agents (scaffolds) and what they share: the session protocol, the built-in
oracle/nop/scripted agents, the model-backed agents (built-in, Claude Code,
mini-swe-agent), workspace context and the replay model server.
"""

from evoround.scaffolds._agents import MODEL_AGENTS, ModelOptions, is_model_agent
from evoround.scaffolds._builtin import (
    BUNDLED_SCRIPTS,
    NopScaffold,
    OracleScaffold,
    Script,
    ScriptedScaffold,
    load_script,
    scaffold_from_name,
)
from evoround.scaffolds._claude_code import SANDBOX_BIN_DIR, ClaudeCodeScaffold, bundled_claude
from evoround.scaffolds._pricing import has_price, price_usage
from evoround.scaffolds._reference import (
    ReferenceSolutionError,
    RoundSetupError,
    collect_artifacts,
    prepare_round,
    reference_apply,
    solution_env,
    stage_solutions,
)
from evoround.scaffolds._replay_server import conversation_position, load_replay_script, serve
from evoround.scaffolds.session import (
    STATE_DIR,
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
    round_message,
)

__all__ = [
    "has_price",
    "price_usage",
    "AgentSession",
    "BUNDLED_SCRIPTS",
    "ClaudeCodeScaffold",
    "MODEL_AGENTS",
    "ModelOptions",
    "NopScaffold",
    "OracleScaffold",
    "ReferenceSolutionError",
    "RoundInput",
    "RoundTrace",
    "SANDBOX_BIN_DIR",
    "STATE_DIR",
    "Scaffold",
    "Script",
    "ScriptedScaffold",
    "TraceStatus",
    "bundled_claude",
    "conversation_position",
    "is_model_agent",
    "load_script",
    "RoundSetupError",
    "collect_artifacts",
    "prepare_round",
    "reference_apply",
    "stage_solutions",
    "solution_env",
    "round_message",
    "scaffold_from_name",
    "load_replay_script",
    "serve",
]
