"""Harbor's ``task.toml`` (its ``TaskConfig``), field by field, onto an evoround task.

Both Harbor layouts share this config: upstream multi-step / EvoCode-Bench (``[[steps]]``)
and harbor_multiturn (``round_N/``). Every field is either honoured (mapped onto the task
model, and the engine applies it) or named in a note saying what evoround does instead.
Nothing is dropped silently: unknown keys are named too.

Honoured: ``[task]`` name/description/keywords/authors, ``[metadata]`` (kept verbatim,
change types read from it; ``activity``/``style`` too, which are evoround's keys: the
published EvoCode-Bench tasks have none), ``[agent].timeout_sec``,
``[verifier].timeout_sec`` / ``env``, ``[environment]`` ``docker_image``, ``cpus``,
``memory_mb``/``memory``, ``allow_internet``/``network_mode``, ``env``, ``workdir``,
``healthcheck`` (applied before every round), ``[solution].env``, ``artifacts``, ``source``,
``multi_step_reward_strategy`` (recorded), per step ``agent.timeout_sec``,
``verifier.timeout_sec``/``env``, ``min_reward``, ``healthcheck``, ``artifacts``.

A step's ``min_reward`` keeps Harbor's meaning: only an early stop (the attempt ends
after a step whose reward is below it); every round passes on EvoCode-Bench's test,
reward >= 0.999 (the imported task says ``[verifier] min_reward_semantics =
"early_stop"``). Step fields evoround cannot honour (``agent.user``, ``verifier.user``,
``verifier.environment_mode``, ``verifier.environment``) are named in notes.

``schema_version`` (or the older ``version``): Harbor's task schema is 1.x (1.4 the
newest known); another major version is refused, a newer 1.x noted. ``[environment]
memory`` is read as Harbor reads it (a string such as ``"2G"``, ``"512M"``; anything else
is refused, as Harbor refuses it; a non-string Harbor ignores, and so does evoround).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evoround.tasks.importers._common import (
    ImportedTask,
    ImportError_,
    positive_number,
    workspace_of,
)

DEFAULT_PASS = 0.999
"""EvoCode-Bench's pass test of a step's reward (``compute_metrics.py``: reward >= 0.999)."""
TOP_KEYS = {
    "version",
    "schema_version",
    "task",
    "metadata",
    "verifier",
    "agent",
    "environment",
    "solution",
    "source",
    "multi_step_reward_strategy",
    "steps",
    "artifacts",
}
HEALTHCHECK_KEYS = {
    "command",
    "interval_sec",
    "timeout_sec",
    "start_period_sec",
    "start_interval_sec",
    "retries",
}
HONOURED_ENVIRONMENT = frozenset(
    {
        "docker_image",
        "cpus",
        "memory_mb",
        "memory",
        "workdir",
        "env",
        "network_mode",
        "allow_internet",
        "healthcheck",
        "os",
        "gpus",
    }
)
"""``[environment]`` keys mapped onto the task (or noted where they are read)."""
NOTED_ENVIRONMENT = ("build_timeout_sec", "storage_mb", "storage")
"""``[environment]`` keys evoround does not enforce: each gets a note of its own."""
ACTIVITY = {
    "construction": "construction",
    "spec_evolution": "spec_evolution",
    "specevolution": "spec_evolution",
    "review": "review",
    "migration": "migration",
}
STYLE = {
    "explorative": "explorative",
    "exploratory": "explorative",
    "contractual": "contractual",
    "document_driven": "document_driven",
    "documentdriven": "document_driven",
}


def _norm(v: Any) -> str:
    return str(v).strip().lower().replace("-", "_").replace(" ", "_")


def _table(cfg: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = cfg.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ImportError_(f"{where}: [{key}] must be a table")
    return v


def _unused(table: dict[str, Any], honoured: set[str], label: str, notes: list[str]) -> None:
    for k in sorted(set(table) - honoured):
        notes.append(f"{label}.{k} = {table[k]!r}: not honoured by evoround")


def healthcheck_of(hc: Any, label: str, notes: list[str]) -> dict[str, Any] | None:
    if hc is None:
        return None
    if not isinstance(hc, dict) or not hc.get("command"):
        raise ImportError_(f"{label}: a healthcheck needs a command")
    out = {k: v for k, v in hc.items() if k in HEALTHCHECK_KEYS}
    _unused(hc, HEALTHCHECK_KEYS, label, notes)
    return out


def artifacts_of(items: Any, label: str, notes: list[str]) -> list[str]:
    """Artifact paths; a table's ``destination``/``exclude`` are noted, its source kept."""
    out: list[str] = []
    for item in items or []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and item.get("source"):
            out.append(str(item["source"]))
            extra = {k: v for k, v in item.items() if k != "source" and v}
            if extra:
                notes.append(
                    f"{label}: artifact {item['source']!r} {extra}: destination/exclude not "
                    "honoured (the file is collected into round-NN/artifacts/<its path>)"
                )
        else:
            raise ImportError_(f"{label}: an artifact must be a path or {{source = ...}}")
    return out


def activity_style(meta: dict[str, Any], notes: list[str]) -> tuple[str | None, str | None]:
    """``metadata.activity`` / ``metadata.style``: evoround's own keys, read when an author
    adds them. EvoCode-Bench's published tasks carry neither (their ``[metadata]`` has
    ``name``, ``difficulty``, ``category`` and the change-type chain; the activity x style
    table exists only in its README and paper), so an imported task says where its
    activity came from in a note."""
    act = meta.get("activity")
    sty = meta.get("style")
    activity = ACTIVITY.get(_norm(act)) if act is not None else None
    style = STYLE.get(_norm(sty)) if sty is not None else None
    if act is not None and activity is None:
        notes.append(f"metadata.activity = {act!r}: not one of {sorted(set(ACTIVITY.values()))}")
    if sty is not None and style is None:
        notes.append(f"metadata.style = {sty!r}: not one of {sorted(set(STYLE.values()))}")
    return activity, style


def apply_config(cfg: dict[str, Any], src: Path, imported: ImportedTask) -> None:
    """Map the task-level fields of Harbor's ``task.toml`` onto ``imported``.

    One small function per part of the file, run in the file's order so the notes read
    top to bottom."""
    where = f"{src}/task.toml"
    for apply in _PARTS:
        apply(cfg, where, imported)


def _top_level(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    for k in sorted(set(cfg) - TOP_KEYS):
        imported.notes.append(f"task.toml: top-level key {k!r} is not a Harbor field; not honoured")
    _schema_version(cfg, where, imported)


NEWEST_SCHEMA = (1, 4)
"""The newest Harbor task schema whose fields this importer reads (Harbor's TaskConfig)."""


def _schema_version(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``schema_version`` (Harbor renames the older ``version`` to it): 1.x is read, a newer
    1.x said in a note, any other major version refused (its fields may mean other things)."""
    key = "schema_version" if "schema_version" in cfg else "version"
    raw = cfg.get(key)
    if raw is None:
        return
    try:
        parts = tuple(int(x) for x in str(raw).strip().split("."))
    except ValueError:
        parts = ()
    if not parts or parts[0] != NEWEST_SCHEMA[0]:
        raise ImportError_(
            f"{where}: {key} = {raw!r}: not a Harbor task schema this importer reads "
            f"(1.x, newest known {'.'.join(map(str, NEWEST_SCHEMA))})"
        )
    imported.metadata["harbor_schema_version"] = str(raw)
    if parts > NEWEST_SCHEMA:
        imported.notes.append(
            f"{key} = {raw!r}: newer than Harbor's schema "
            f"{'.'.join(map(str, NEWEST_SCHEMA))} that evoround knows; fields added since "
            "are named in the notes below as not honoured"
        )


def _task(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``[task]``: the name (also kept verbatim for exports), description, keywords, authors."""
    task = _table(cfg, "task", where)
    if not task:
        return
    if task.get("name"):
        imported.source_name = str(task["name"])
        imported.name = str(task["name"])
    imported.description = str(task.get("description") or imported.description)
    imported.tags += [str(k) for k in task.get("keywords") or []]
    if task.get("authors"):
        imported.metadata["authors"] = task["authors"]
    _unused(task, {"name", "description", "keywords", "authors"}, "[task]", imported.notes)


def _metadata(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``[metadata]``: kept verbatim; activity, style, tags and a description read from it."""
    meta = cfg.get("metadata") or {}
    if not isinstance(meta, dict):
        return
    imported.metadata.update(meta)
    imported.activity, imported.style = activity_style(meta, imported.notes)
    imported.tags += [str(t) for t in meta.get("tags", []) or [] if isinstance(t, str)]
    if not imported.description and meta.get("description"):
        imported.description = str(meta["description"])


def _source(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    if cfg.get("source"):
        imported.metadata["source"] = cfg["source"]


def _reward_strategy(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``multi_step_reward_strategy``: recorded; evoround scores every round either way."""
    strategy = cfg.get("multi_step_reward_strategy")
    if strategy is None:
        return
    imported.metadata["multi_step_reward_strategy"] = strategy
    if strategy not in ("mean", "final"):
        raise ImportError_(f"{where}: multi_step_reward_strategy {strategy!r}: mean or final")
    if strategy == "final":
        imported.notes.append(
            "multi_step_reward_strategy = 'final': evoround scores every round; the "
            "final step's reward is the Comp figure (mean reward is the mean over steps)"
        )


def _agent(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    agent = _table(cfg, "agent", where)
    imported.agent_timeout_sec = positive_number(agent, "timeout_sec", f"{where}: agent")
    _unused(agent, {"timeout_sec"}, "[agent]", imported.notes)


def _verifier(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``[verifier]``: timeout and env; a separate verifier environment is not needed here."""
    verifier = _table(cfg, "verifier", where)
    imported.verifier_timeout_sec = positive_number(verifier, "timeout_sec", f"{where}: verifier")
    imported.verifier_env = _strings(verifier.get("env"))
    if verifier.get("environment_mode") == "separate" or verifier.get("environment"):
        imported.notes.append(
            "[verifier] environment_mode = separate / [verifier.environment]: evoround always "
            "verifies in a fresh clone of the round's snapshot of the agent's container"
        )
    honoured = {"timeout_sec", "env", "environment_mode", "environment"}
    _unused(verifier, honoured, "[verifier]", imported.notes)


def _environment(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    """``[environment]``: image, resources, workdir, env, network, healthcheck, extras."""
    env = _table(cfg, "environment", where)
    if env.get("os", "linux") != "linux":
        raise ImportError_(f"{where}: [environment] os = {env['os']!r}: only linux tasks run")
    if env.get("docker_image"):
        imported.image = str(env["docker_image"])
    imported.cpus = positive_number(env, "cpus", f"{where}: environment")
    imported.memory_mb = _memory(env, where, imported.notes)
    if env.get("workdir"):
        imported.workdir = str(env["workdir"])
    imported.env = _strings(env.get("env"))
    _network(env, imported)
    if env.get("gpus"):
        imported.notes.append(f"[environment] gpus = {env['gpus']}: not honoured (no GPU support)")
    hc = healthcheck_of(env.get("healthcheck"), "[environment.healthcheck]", imported.notes)
    if hc is not None:
        imported.metadata.setdefault("evoround_environment_healthcheck", hc)
    honoured = set(HONOURED_ENVIRONMENT)
    for k in NOTED_ENVIRONMENT:
        if k in env:
            imported.notes.append(f"[environment] {k} = {env[k]!r}: not enforced by evoround")
            honoured.add(k)
    _unused(env, honoured, "[environment]", imported.notes)


def harbor_size_mb(text: str) -> int | None:
    """A size as Harbor's ``EnvironmentConfig`` reads ``memory``/``storage``: a number and
    G, M or K (case-insensitive), in MiB; None for anything else."""
    s = text.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(s[-1:])
    if scale is None:
        return None
    try:
        value = float(s[:-1])
    except ValueError:
        return None
    if not math.isfinite(value) or int(value * scale) < 1:
        return None
    return int(value * scale)


def _memory(env: dict[str, Any], where: str, notes: list[str]) -> int | None:
    """``memory_mb``, or the deprecated ``memory`` string, exactly as Harbor reads them."""
    mb = env.get("memory_mb")
    if mb is not None and (
        isinstance(mb, bool) or not isinstance(mb, int | float) or mb != int(mb) or mb < 1
    ):
        raise ImportError_(f"{where}: [environment] memory_mb = {mb!r}: a positive whole number")
    legacy = env.get("memory")
    if legacy is None:
        return None if mb is None else int(mb)
    if not isinstance(legacy, str):
        notes.append(
            f"[environment] memory = {legacy!r}: not a string such as '2G', which Harbor "
            "ignores; so does evoround (use memory_mb)"
        )
        return None if mb is None else int(mb)
    parsed = harbor_size_mb(legacy)
    if parsed is None:
        raise ImportError_(
            f"{where}: [environment] memory = {legacy!r}: not a size Harbor reads "
            "(a number and G, M or K, e.g. '2G'; or memory_mb = 2048)"
        )
    if mb is not None and int(mb) != parsed:
        raise ImportError_(
            f"{where}: [environment] memory = {legacy!r} ({parsed} MB) and memory_mb = "
            f"{mb!r} disagree (Harbor refuses this too)"
        )
    return parsed


def _network(env: dict[str, Any], imported: ImportedTask) -> None:
    """``network_mode`` (public, none, allowlist) or ``allow_internet``; neither: no network."""
    net = env.get("network_mode")
    if net is not None:
        if net == "allowlist":
            imported.notes.append(
                "[environment] network_mode = allowlist: evoround has no allowlist; "
                "the sandbox gets no network"
            )
        imported.network = net == "public"
    elif "allow_internet" in env:
        imported.network = bool(env["allow_internet"])
    else:
        imported.notes.append(
            "[environment] allow_internet: Harbor's default (true) is not applied; evoround "
            "sandboxes have no network unless [environment] network = true"
        )


def _solution(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    solution = _table(cfg, "solution", where)
    imported.solution_env = _strings(solution.get("env"))
    _unused(solution, {"env"}, "[solution]", imported.notes)


def _artifacts(cfg: dict[str, Any], where: str, imported: ImportedTask) -> None:
    imported.artifacts = artifacts_of(cfg.get("artifacts"), "artifacts", imported.notes)


_PARTS: tuple[Callable[[dict[str, Any], str, ImportedTask], None], ...] = (
    _top_level,
    _task,
    _metadata,
    _source,
    _reward_strategy,
    _agent,
    _verifier,
    _environment,
    _solution,
    _artifacts,
)
"""The parts of Harbor's task.toml, in the order their notes are written."""


def _strings(table: Any) -> dict[str, str]:
    """An env table (``{}`` when absent) with every key and value as text."""
    return {str(k): str(v) for k, v in (table or {}).items()}


def apply_environment_dir(src: Path, imported: ImportedTask) -> None:
    """``environment/`` (Dockerfile and build context) and the workspace shipped in it."""
    env_dir = src / "environment"
    imported.environment_dir = env_dir if env_dir.is_dir() else None
    imported.workspace_dir = workspace_of(env_dir) if env_dir.is_dir() else None


def environment_healthcheck(imported: ImportedTask) -> dict[str, Any] | None:
    """Harbor's environment healthcheck, run (by evoround) before every round's agent turn."""
    return imported.metadata.pop("evoround_environment_healthcheck", None)


def apply_step(step: dict[str, Any], label: str, notes: list[str]) -> dict[str, Any]:
    """A ``[[steps]]`` entry's per-step settings, as :class:`ImportedRound` keyword args."""
    out: dict[str, Any] = {}
    agent = step.get("agent") or {}
    verifier = step.get("verifier") or {}
    out["agent_timeout_sec"] = agent.get("timeout_sec")
    _unused(agent, {"timeout_sec"}, f"{label}.agent", notes)
    out["verifier_timeout_sec"] = verifier.get("timeout_sec")
    out["verifier_env"] = _strings(verifier.get("env"))
    _unused(verifier, {"timeout_sec", "env"}, f"{label}.verifier", notes)
    mr = step.get("min_reward")
    if mr is not None:
        if isinstance(mr, dict):
            out["min_reward"] = {str(k): float(v) for k, v in mr.items()}
        elif isinstance(mr, int | float) and not isinstance(mr, bool):
            out["min_reward"] = float(mr)
        else:
            raise ImportError_(f"{label}.min_reward: a number or a table of numbers")
        # Honoured as Harbor means it: [verifier] min_reward_semantics = "early_stop".
    out["healthcheck"] = healthcheck_of(step.get("healthcheck"), f"{label}.healthcheck", notes)
    out["artifacts"] = artifacts_of(step.get("artifacts"), f"{label}.artifacts", notes)
    return out
