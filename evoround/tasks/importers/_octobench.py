"""Import OctoBench / OctoCodingBench instances (JSONL) as compliance-only evoround tasks.

An OctoBench instance is a conversation (``user_query``: one or more user turns) with a
system prompt and a per-instance checklist; it has no outcome tests. Each user turn
becomes a round, each checklist item a judge check of the mapped category, scored in
every round (task scope, because OctoBench judges the whole transcript against it), and
the verifier is ``none``: outcome is not graded, only the process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evoround.tasks import CheckCategory, load_task
from evoround.tasks.importers._common import ImportError_, slug

# OctoBench spells categories several ways (SP, system_prompt, AGENTS.md, claude_md, ...).
_CATEGORY_WORDS: list[tuple[tuple[str, ...], CheckCategory]] = [
    (("reminder",), CheckCategory.system_reminder),
    (("agents", "claude", "repo", "spec", "md"), CheckCategory.repo_spec),
    (("skill",), CheckCategory.skill),
    (("memory",), CheckCategory.memory),
    (("tool",), CheckCategory.tool_schema),
    (("user", "query", "uq"), CheckCategory.user_query),
    (("system", "sp", "prompt"), CheckCategory.system_prompt),
]


def map_category(name: str) -> CheckCategory:
    """OctoBench category name -> evoround category (unknown names: user_query)."""
    words = set(re.split(r"[^a-z]+", name.lower())) | {name.lower()}
    for keys, cat in _CATEGORY_WORDS:
        if any(k in words or any(w.startswith(k) for w in words if len(k) > 2) for k in keys):
            return cat
    return CheckCategory.user_query


@dataclass
class OctoResult:
    instance_id: str
    dest: Path
    n_rounds: int
    n_checks: int
    notes: list[str] = field(default_factory=list)


def _q(text: str) -> str:
    """A TOML basic string (JSON string escapes are valid TOML escapes)."""
    return json.dumps(text, ensure_ascii=False)


def _queries(inst: dict[str, Any], where: str) -> list[str]:
    raw = inst.get("user_query")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ImportError_(f"{where}: user_query: expected a non-empty list of user turns")
    out = []
    for n, q in enumerate(raw, start=1):
        text = q.get("content") if isinstance(q, dict) else q
        if not isinstance(text, str) or not text.strip():
            raise ImportError_(f"{where}: user_query[{n}]: expected text")
        out.append(text)
    return out


def _checks(inst: dict[str, Any], where: str) -> list[dict[str, str]]:
    checklist = inst.get("checklist") or {}
    if not isinstance(checklist, dict):
        raise ImportError_(f"{where}: checklist: expected a table of categories")
    checks: list[dict[str, str]] = []
    seen: set[str] = set()
    for cat_name, body in checklist.items():
        items = body.get("checks") if isinstance(body, dict) else body
        if not isinstance(items, list):
            raise ImportError_(f"{where}: checklist.{cat_name}.checks: expected a list")
        for n, item in enumerate(items, start=1):
            if not isinstance(item, dict) or not item.get("description"):
                raise ImportError_(f"{where}: checklist.{cat_name}.checks[{n}]: no description")
            cid = slug(str(item.get("check_id") or f"{cat_name}-{n}")) or f"check-{n}"
            while cid in seen:
                cid += "-x"
            seen.add(cid)
            kind = str(item.get("check_type") or "")
            desc = str(item["description"]) + (f" (OctoBench check type: {kind})" if kind else "")
            checks.append(
                {"id": cid, "category": map_category(str(cat_name)).value, "description": desc}
            )
    return checks


def convert_instance(inst: dict[str, Any], out_dir: Path, where: str) -> OctoResult:
    iid = str(inst.get("instance_id") or "").strip()
    if not iid:
        raise ImportError_(f"{where}: instance_id: missing")
    queries = _queries(inst, where)
    checks = _checks(inst, where)
    name = slug(iid) or "octobench-task"
    dest = out_dir / name
    if dest.exists():
        raise ImportError_(f"{dest}: already exists; choose an empty output folder")
    notes: list[str] = []
    lines = [
        "# Imported from OctoBench: a compliance-only task (no outcome tests).",
        "schema_version = 1",
        "",
        "[task]",
        f"name = {_q(name)}",
        f"description = {_q('OctoBench instance ' + iid)}",
        'activity = "construction"',
        'style = "explorative"',
        'tags = ["octobench"]',
        f"system_prompt = {_q(str(inst.get('system_prompt') or ''))}",
        "",
        "[environment]",
    ]
    image = inst.get("image")
    if image:
        lines.append(f"image = {_q(str(image))}")
        notes.append(f"docker image {image} must exist locally for --sandbox docker")
    workdir = inst.get("workspace_abs_path")
    if isinstance(workdir, str) and workdir.startswith("/"):
        lines.append(f"workdir = {_q(workdir)}")
    lines += ["", "[verifier]", 'kind = "none"', ""]
    for c in checks:
        lines += [
            "[[checks]]",
            f"id = {_q(c['id'])}",
            f"category = {_q(c['category'])}",
            'kind = "judge"',
            'scope = "task"',
            f"description = {_q(c['description'])}",
            "",
        ]
    for n in range(1, len(queries) + 1):
        lines += ["[[rounds]]", f'title = "User turn {n}"', ""]
    (dest / "workspace").mkdir(parents=True)
    for n, text in enumerate(queries, start=1):
        rd = dest / "rounds" / f"{n:02d}"
        rd.mkdir(parents=True)
        (rd / "instruction.md").write_text(text.rstrip() + "\n", encoding="utf-8")
    (dest / "task.toml").write_text("\n".join(lines), encoding="utf-8")
    if not image:
        notes.append("no image: the workspace starts empty")
    load_task(dest)  # what we wrote must load; a failure here is an importer bug
    return OctoResult(iid, dest, len(queries), len(checks), notes)


def import_octobench(src: Path, out_dir: Path) -> list[OctoResult]:
    """Convert every instance of an OctoBench JSONL file into a task under ``out_dir``."""
    if not src.is_file():
        raise ImportError_(f"{src}: no such file")
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[OctoResult] = []
    for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{src}:{n}"
        try:
            inst = json.loads(line)
        except json.JSONDecodeError as e:
            raise ImportError_(f"{where}: invalid JSON: {e}") from None
        if not isinstance(inst, dict):
            raise ImportError_(f"{where}: expected a JSON object per line")
        results.append(convert_instance(inst, out_dir, where))
    if not results:
        raise ImportError_(f"{src}: no instances")
    return results
