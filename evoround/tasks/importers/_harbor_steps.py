"""Harbor multi-step tasks (upstream Harbor, schema 1.1+; EvoCode-Bench schema 1.2) -> evoround.

Source layout::

    task.toml                      # [task], [metadata], [agent], [verifier], [environment],
                                   # [solution], artifacts, multi_step_reward_strategy, [[steps]]
    environment/Dockerfile         # one container for all steps (its FROM is kept as is)
    tests/                         # optional, task-level: merged under every step's tests
    steps/<name>/instruction.md
    steps/<name>/solution/solve.sh
    steps/<name>/tests/test.sh     # cumulative; writes /logs/verifier/reward.txt (or .json)
    steps/<name>/workdir/          # optional: put into WORKDIR before the agent; setup.sh run

Steps run in ``[[steps]]`` order. EvoCode-Bench names steps ``round-<i>`` and lists change
types in ``[metadata.requirement_chain]``: ``num_steps`` and ``[[...steps]]`` entries with
``step`` (the step's name) and ``change_types``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evoround.tasks import ChangeType
from evoround.tasks.importers._common import (
    ImportedRound,
    ImportedTask,
    ImportError_,
    change_types_of,
    read_text,
    read_toml,
    step_dir_name,
    strip_canary,
)
from evoround.tasks.importers._harbor_config import (
    apply_config,
    apply_environment_dir,
    apply_step,
    environment_healthcheck,
)

FORMAT = "harbor-steps"
STEP_KEYS = {"name", "agent", "verifier", "min_reward", "healthcheck", "artifacts"}
ALLOWED_TYPES = {"extension", "correction", "conflict"}


def detect(src: Path) -> bool:
    cfg = read_toml(src / "task.toml")
    return bool(cfg.get("steps")) or (src / "steps").is_dir()


def chain_types(meta: dict[str, Any], where: str, notes: list[str]) -> dict[str, list[ChangeType]]:
    """``[metadata.requirement_chain]``: step name -> change types (EvoCode-Bench 1.2)."""
    chain = meta.get("requirement_chain")
    if chain is None:
        return {}
    if not isinstance(chain, dict) or not isinstance(chain.get("steps"), list):
        raise ImportError_(
            f"{where}: metadata.requirement_chain must be a table with [[...steps]] entries "
            "(step = <name>, change_types = [...])"
        )
    out: dict[str, list[ChangeType]] = {}
    for n, entry in enumerate(chain["steps"], start=1):
        label = f"{where}: metadata.requirement_chain.steps[{n}]"
        if not isinstance(entry, dict) or not entry.get("step"):
            raise ImportError_(f"{label}: needs step = <step name>")
        raw = entry.get("change_types", entry.get("change_type"))
        items = raw if isinstance(raw, list) else [raw] if raw is not None else []
        bad = [x for x in items if str(x).strip().lower() not in ALLOWED_TYPES]
        if bad:
            raise ImportError_(
                f"{label}: change type {bad[0]!r} is not one of {sorted(ALLOWED_TYPES)}"
            )
        out[str(entry["step"])] = change_types_of(items)
        extra = sorted(set(entry) - {"step", "change_types", "change_type"})
        if extra:
            notes.append(f"{label}: keys {extra} kept only in [task.metadata]")
    declared = chain.get("num_steps")
    if declared is not None and declared != len(chain["steps"]):
        raise ImportError_(
            f"{where}: metadata.requirement_chain.num_steps = {declared} but "
            f"{len(chain['steps'])} steps are listed"
        )
    return out


def load(src: Path) -> ImportedTask:
    where = f"{src}/task.toml"
    cfg = read_toml(src / "task.toml")
    imported = ImportedTask(name=src.name, source_format=FORMAT, rounds=[])
    imported.source_name = src.name  # Harbor: the directory name unless [task].name is set
    apply_config(cfg, src, imported)
    steps = _declared_steps(cfg, where)
    meta = cfg.get("metadata") or {}
    types = chain_types(meta if isinstance(meta, dict) else {}, where, imported.notes)
    declared = [str(s.get("name") or "") for s in steps]
    unknown = sorted(set(types) - set(declared))
    if unknown:
        raise ImportError_(f"{where}: metadata.requirement_chain names unknown steps {unknown}")
    _note_undeclared_dirs(src, declared, imported.notes)
    shared = src / "tests" if (src / "tests").is_dir() else None
    ctx = _Steps(src, where, shared, environment_healthcheck(imported), types)
    for n, step in enumerate(steps, start=1):
        imported.rounds.append(_step_round(ctx, n, step, imported.notes))
    apply_environment_dir(src, imported)
    env_dir = src / "environment"
    compose = ("docker-compose.yaml", "docker-compose.yml")
    if not (env_dir / "Dockerfile").is_file() and any((env_dir / f).is_file() for f in compose):
        raise ImportError_(f"{env_dir}: docker-compose environments are not supported")
    return imported


def _declared_steps(cfg: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """``[[steps]]``: tables with distinct names that are plain folder names under steps/."""
    raw_steps = cfg.get("steps") or []
    if not isinstance(raw_steps, list):
        raise ImportError_(
            f"{where}: steps must be an array of tables ([[steps]]), not {type(raw_steps).__name__}"
        )
    if not raw_steps:
        raise ImportError_(f"{where}: declares no [[steps]]")
    steps: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for n, step in enumerate(raw_steps, start=1):
        if not isinstance(step, dict):
            raise ImportError_(f"{where}: steps[{n}] must be a table ([[steps]]), not {step!r}")
        name = step_dir_name(step.get("name"), f"{where}: steps[{n}]")
        if name in seen:
            raise ImportError_(
                f"{where}: steps[{n}].name {name!r} is a duplicate of steps[{seen[name]}]"
            )
        seen[name] = n
        steps.append(step)
    return steps


def _note_undeclared_dirs(src: Path, declared: list[str], notes: list[str]) -> None:
    """Harbor runs only the declared steps: a folder under steps/ beside them is not run."""
    if not (src / "steps").is_dir():
        return
    extra = sorted(p.name for p in (src / "steps").iterdir() if p.is_dir())
    extra = [x for x in extra if x not in declared]
    if extra:
        notes.append(f"steps/ directories not declared in [[steps]] (not run): {extra}")


@dataclass(frozen=True)
class _Steps:
    """What every step's conversion reads from the task as a whole."""

    src: Path
    where: str
    shared: Path | None
    """Task-level tests/ (merged under each step's own)."""
    env_healthcheck: dict[str, Any] | None
    """``[environment.healthcheck]``: the healthcheck of a step without its own."""
    types: dict[str, list[ChangeType]]


def _step_round(ctx: _Steps, n: int, step: dict[str, Any], notes: list[str]) -> ImportedRound:
    """Step ``n`` (1-based) as a round: its folder checked, its settings mapped."""
    label = f"steps[{n}]"
    name = str(step.get("name") or "")
    d = ctx.src / "steps" / name
    if not d.is_dir():
        raise ImportError_(f"{ctx.where}: {label}: no directory steps/{name}")
    instr = d / "instruction.md"
    if not instr.is_file():
        raise ImportError_(f"{instr}: missing instruction.md")
    has_test = (d / "tests" / "test.sh").is_file() or (
        ctx.shared and (ctx.shared / "test.sh").is_file()
    )
    if not has_test:
        raise ImportError_(f"{d}: no tests/test.sh (neither the step's nor the task's)")
    for k in sorted(set(step) - STEP_KEYS):
        notes.append(f"{label}.{k} = {step[k]!r}: not a Harbor step field; not honoured")
    per_step = apply_step(step, f"{label} ({name})", notes)
    if per_step["healthcheck"] is None and ctx.env_healthcheck is not None:
        per_step["healthcheck"] = ctx.env_healthcheck
    return ImportedRound(
        instruction=strip_canary(read_text(instr)),
        solution_dir=d / "solution",
        tests_dir=d / "tests" if (d / "tests").is_dir() else None,
        name=name,
        change_types=ctx.types.get(name, []),
        shared_tests_dir=ctx.shared,
        workdir_dir=d / "workdir" if (d / "workdir").is_dir() else None,
        **per_step,
    )
