"""harbor_multiturn tasks (EvoCode-Bench legacy, the paper's layout) -> evoround task v1.

Source layout::

    task.toml                 # Harbor's task.toml with [metadata.multiround]
    instruction.md            # the task's overall statement (not sent per round)
    environment/Dockerfile
    round_1/instruction.md
    round_1/solution/solve.sh
    round_1/tests/test.sh     # cumulative; writes /logs/verifier/reward.txt; must exit 0
    round_2/...

``[metadata.multiround]``: ``num_rounds = N`` and one ``[[metadata.multiround.rounds]]``
per round with ``round = i`` and ``change_types = [...]`` (or the older single
``change_type = "..."``). Rounds must be exactly 1..N, in order, each with a ``round_<i>/``.
A non-zero exit of a round's test.sh is a verification error there, and here.
"""

from __future__ import annotations

import re
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
    strip_canary,
)
from evoround.tasks.importers._harbor_config import (
    apply_config,
    apply_environment_dir,
    environment_healthcheck,
)
from evoround.tasks.importers._harbor_steps import ALLOWED_TYPES

FORMAT = "harbor-multiturn"
ROUND = re.compile(r"^round_(\d+)$")


def _round_dirs(src: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in src.iterdir() if p.is_dir() and (m := ROUND.match(p.name))}


def detect(src: Path) -> bool:
    meta = read_toml(src / "task.toml").get("metadata", {}) or {}
    return (isinstance(meta, dict) and "multiround" in meta) or bool(_round_dirs(src))


def _types(entry: dict[str, Any], label: str) -> list[ChangeType]:
    raw = entry.get("change_types")
    if raw is None and "change_type" in entry:
        raw = entry["change_type"]  # the older form: a string (or, as Harbor allows, a list)
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    cleaned = [str(x).strip().lower() for x in items]
    bad = [x for x in cleaned if x not in ALLOWED_TYPES]
    if bad:
        raise ImportError_(f"{label}: change type {bad[0]!r} is not one of {sorted(ALLOWED_TYPES)}")
    if len(set(cleaned)) != len(cleaned):
        raise ImportError_(f"{label}: duplicate change types {cleaned}")
    return change_types_of(cleaned)


def load(src: Path) -> ImportedTask:
    where = f"{src}/task.toml"
    cfg = read_toml(src / "task.toml")
    imported = ImportedTask(name=src.name, source_format=FORMAT, rounds=[], nonzero_exit="error")
    imported.source_name = src.name
    apply_config(cfg, src, imported)
    multi = _multiround(cfg, where)
    dirs = _round_dirs(src)
    if not dirs:
        raise ImportError_(f"{src}: no round_N directories")
    n = _num_rounds(multi, dirs, src, where)
    entries = _round_entries(multi, n, where, imported.notes)
    for k in sorted(set(multi) - {"num_rounds", "rounds"}):
        imported.notes.append(f"metadata.multiround.{k}: kept only in [task.metadata]")
    _statement(src, imported)
    env_hc = environment_healthcheck(imported)
    for i in range(1, n + 1):
        entry = entries[i - 1] if entries else {}
        imported.rounds.append(_round(dirs[i], i, entry, env_hc, where, imported.notes))
    apply_environment_dir(src, imported)
    if cfg.get("steps"):
        imported.notes.append("[[steps]] ignored: this is a harbor_multiturn (round_N/) task")
    return imported


def _multiround(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """``[metadata.multiround]`` (``{}`` when absent)."""
    meta = cfg.get("metadata", {}) or {}
    if not isinstance(meta, dict):
        raise ImportError_(f"{where}: metadata must be a table, not {meta!r}")
    multi = meta.get("multiround", {}) or {}
    if not isinstance(multi, dict):
        raise ImportError_(f"{where}: metadata.multiround must be a table, not {multi!r}")
    return multi


def _num_rounds(multi: dict[str, Any], dirs: dict[int, Path], src: Path, where: str) -> int:
    """``num_rounds`` (default: the round_N folders), which must be exactly round_1..round_N."""
    n = multi.get("num_rounds", len(dirs))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ImportError_(f"{where}: metadata.multiround.num_rounds must be a positive integer")
    if sorted(dirs) != list(range(1, n + 1)):
        raise ImportError_(
            f"{src}: round directories {sorted(dirs)} are not exactly round_1..round_{n} "
            "(metadata.multiround.num_rounds)"
        )
    return n


def _round_entries(
    multi: dict[str, Any], n: int, where: str, notes: list[str]
) -> list[dict[str, Any]]:
    """``[[metadata.multiround.rounds]]``: none, or exactly round = 1..n in order."""
    entries = multi.get("rounds") or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ImportError_(
            f"{where}: metadata.multiround.rounds must be an array of tables "
            "([[metadata.multiround.rounds]])"
        )
    if not entries:
        notes.append("no [[metadata.multiround.rounds]]: rounds have no change types")
    elif [e.get("round") for e in entries] != list(range(1, n + 1)):
        raise ImportError_(
            f"{where}: [[metadata.multiround.rounds]] must list round = 1..{n} in order"
        )
    return entries


def _statement(src: Path, imported: ImportedTask) -> None:
    """The top-level instruction.md: the task's statement (kept), not sent per round."""
    top = src / "instruction.md"
    if not top.is_file():
        imported.notes.append("no top-level instruction.md (harbor_multiturn requires one)")
        return
    statement = read_text(top)
    imported.metadata["statement"] = statement  # the task statement, as harbor_multiturn
    imported.description = imported.description or statement.strip().splitlines()[0][:300]


def _round(
    d: Path,
    i: int,
    entry: dict[str, Any],
    env_hc: dict[str, Any] | None,
    where: str,
    notes: list[str],
) -> ImportedRound:
    """``round_<i>/`` with its entry of ``[[metadata.multiround.rounds]]`` (or ``{}``)."""
    instr = d / "instruction.md"
    if not instr.is_file():
        raise ImportError_(f"{instr}: missing instruction.md")
    if not (d / "tests" / "test.sh").is_file():
        raise ImportError_(f"{d}/tests/test.sh: missing")
    label = f"{where}: metadata.multiround.rounds[{i}]"
    extra = sorted(set(entry) - {"round", "change_types", "change_type"})
    if extra:
        notes.append(f"{label}: keys {extra} kept only in [task.metadata]")
    return ImportedRound(
        instruction=strip_canary(read_text(instr)),
        solution_dir=d / "solution",
        tests_dir=d / "tests",
        name=d.name,
        change_types=_types(entry, label),
        healthcheck=env_hc,
    )
