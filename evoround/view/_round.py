"""One round's page data, read from its folder only when the page is asked for.

Everything read here was written from the agent's side of the sandbox (trajectory,
workspace diff, test output): it is size-capped here and escaped by the templates.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evoround.results import CHANGES_FILE, PATCH_FILE, RoundChanges, RoundResult

MAX_EVENTS = 2000
"""Trajectory events shown per round (the rest are counted)."""
MAX_EVENT_CHARS = 20_000
"""Characters of one event's text or arguments shown (head and tail kept)."""
MAX_TEXT_BYTES = 4_000_000
"""Bytes read of one round file (a trajectory or patch beyond this is cut)."""
_SCRATCH = re.compile(r"(?:\.\./)?(?:[\w.-]+/)*scratch/verify-[0-9a-f]+/suite/")
"""The verifier's private scratch prefix in test output: noise for a reader."""


def cap(text: str, limit: int = MAX_EVENT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters not shown ...]\n{text[-half:]}"


def clean_message(text: str | None) -> str:
    """A failing test's message without the verifier's scratch path."""
    return cap(_SCRATCH.sub("tests/", text or ""))


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TEXT_BYTES + 1)
    except OSError:
        return None
    text = data[:MAX_TEXT_BYTES].decode("utf-8", errors="replace")
    return text + ("\n[... cut: file larger than 4 MB ...]" if len(data) > MAX_TEXT_BYTES else "")


@dataclass(frozen=True)
class FilePatch:
    """One file's part of the round's unified diff."""

    path: str
    kind: str
    lines: list[tuple[str, str]]
    """(css class, line) pairs: ``add``, ``del``, ``hunk``, ``ctx``."""


@dataclass
class RoundDetail:
    rec: RoundResult
    events: list[dict[str, Any]] = field(default_factory=list)
    events_hidden: int = 0
    changes: RoundChanges | None = None
    patches: list[FilePatch] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)


def _event(raw: dict[str, Any]) -> dict[str, Any]:
    args = raw.get("arguments")
    return {
        "type": str(raw.get("type", "?"))[:40],
        "role": str(raw.get("role") or "")[:40],
        "name": str(raw.get("name") or "")[:200],
        "content": cap(str(raw.get("content") or "")),
        "arguments": cap(json.dumps(args, indent=1, default=str)) if args else "",
        "exit_code": raw.get("exit_code") if isinstance(raw.get("exit_code"), int) else None,
        "usage": raw.get("usage") if isinstance(raw.get("usage"), dict) else None,
        "timestamp": str(raw.get("timestamp") or "")[:40],
    }


def read_events(folder: Path) -> tuple[list[dict[str, Any]], int]:
    text = _read(folder / "trajectory.jsonl") or ""
    events: list[dict[str, Any]] = []
    hidden = 0
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if not isinstance(raw, dict):
            continue
        if len(events) >= MAX_EVENTS:
            hidden += 1
            continue
        events.append(_event(raw))
    return events, hidden


def read_changes(folder: Path) -> RoundChanges | None:
    text = _read(folder / CHANGES_FILE)
    if text is None:
        return None
    try:
        return RoundChanges.model_validate_json(text)
    except ValidationError:
        return None


_LINE_CLASS = (("+++", "meta"), ("---", "meta"), ("@@", "hunk"), ("+", "add"), ("-", "del"))


def _line_class(line: str) -> str:
    return next((c for p, c in _LINE_CLASS if line.startswith(p)), "ctx")


def read_patches(folder: Path, changes: RoundChanges | None) -> list[FilePatch]:
    """The round's patch split per file (a file's part starts at its ``--- `` line)."""
    text = _read(folder / PATCH_FILE)
    if not text:
        return []
    kinds = {}
    if changes is not None:
        kinds = {c.path: k for k in ("added", "modified", "deleted") for c in getattr(changes, k)}
    out: list[FilePatch] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            path = _patch_path(lines[i], lines[i + 1])
            j = i + 2
            while j < len(lines) and not (
                lines[j].startswith("--- ")
                and j + 1 < len(lines)
                and lines[j + 1].startswith("+++ ")
            ):
                j += 1
            body = [(_line_class(x), x) for x in lines[i + 2 : j]]
            out.append(FilePatch(path=path, kind=kinds.get(path, "modified"), lines=body))
            i = j
        else:
            i += 1
    return out


def _patch_path(minus: str, plus: str) -> str:
    side = plus[4:] if plus[4:] != "/dev/null" else minus[4:]
    return side[2:] if side[:2] in ("a/", "b/") else side


def read_checks(folder: Path) -> list[dict[str, Any]]:
    text = _read(folder / "checks.json")
    try:
        data = json.loads(text) if text else []
    except ValueError:
        return []
    return [c for c in data if isinstance(c, dict)] if isinstance(data, list) else []


def round_detail(job_dir: Path, rec: RoundResult) -> RoundDetail:
    """Read a round's folder (only the recorded ``artifacts`` folder, inside the job)."""
    detail = RoundDetail(rec=rec)
    folder = round_folder(job_dir, rec)
    if folder is None:
        return detail
    detail.events, detail.events_hidden = read_events(folder)
    detail.changes = read_changes(folder)
    detail.patches = read_patches(folder, detail.changes)
    detail.checks = read_checks(folder)
    return detail


def round_folder(job_dir: Path, rec: RoundResult) -> Path | None:
    """The record's artefact folder, if it lies inside the job folder (a record is data a
    job wrote, but a copied or edited results file must not point the viewer elsewhere)."""
    if not rec.artifacts:
        return None
    root = job_dir.resolve()
    folder = (root / rec.artifacts).resolve()
    return folder if folder.is_relative_to(root) and folder.is_dir() else None
