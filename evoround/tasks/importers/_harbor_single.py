"""A plain (single-step) Harbor task -> a one-round evoround task.

Source layout (Harbor's own, Terminal-Bench's successor)::

    task.toml              # [task], [metadata], [agent], [verifier], [environment], ...
    instruction.md         # what the agent is asked
    environment/Dockerfile
    solution/solve.sh      # the reference (the oracle)
    tests/test.sh          # writes /logs/verifier/reward.txt (or reward.json)

Why import it at all: a one-round task is the degenerate chain (round 1 is the whole
task), so single-step suites can run beside multi-step ones and be compared. The round is
a construction from the given environment, so its change type is ``extension`` (said in a
note). Every ``task.toml`` field is read by the same code as the multi-step formats.
"""

from __future__ import annotations

from pathlib import Path

from evoround.tasks import ChangeType
from evoround.tasks.importers._common import (
    ImportedRound,
    ImportedTask,
    ImportError_,
    read_text,
    read_toml,
    strip_canary,
)
from evoround.tasks.importers._harbor_config import (
    apply_config,
    apply_environment_dir,
    environment_healthcheck,
)

FORMAT = "harbor"


def detect(src: Path) -> bool:
    """A Harbor task folder without steps: task.toml, instruction.md and tests/ at its root."""
    return (
        (src / "task.toml").is_file()
        and (src / "instruction.md").is_file()
        and (src / "tests").is_dir()
        and not (src / "steps").is_dir()
        and not read_toml(src / "task.toml").get("steps")
    )


def load(src: Path) -> ImportedTask:
    cfg = read_toml(src / "task.toml")
    imported = ImportedTask(name=src.name, source_format=FORMAT, rounds=[])
    imported.source_name = src.name
    apply_config(cfg, src, imported)
    if not (src / "tests" / "test.sh").is_file():
        raise ImportError_(f"{src}/tests/test.sh: missing (Harbor's verifier entry point)")
    if cfg.get("multi_step_reward_strategy") is not None:
        imported.notes.append(
            "multi_step_reward_strategy: a single-step task has one reward; not used"
        )
    imported.notes.append(
        "a single-step Harbor task: imported as one round of change type 'extension'"
    )
    imported.rounds.append(
        ImportedRound(
            instruction=strip_canary(read_text(src / "instruction.md")),
            solution_dir=src / "solution",
            tests_dir=src / "tests",
            name=src.name,
            change_types=[ChangeType.extension],
            healthcheck=environment_healthcheck(imported),
        )
    )
    apply_environment_dir(src, imported)
    return imported
