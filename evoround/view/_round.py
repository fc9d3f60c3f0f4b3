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

from evoround.results import CHANGES_FILE, PATCH_FILE, RoundChanges, RoundResult, RoundUsage
from evoround.view._text import cap_parts, parts, plain, visible

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
    """A failing test's message without colour codes and the verifier's scratch path."""
    return cap(_SCRATCH.sub("tests/", plain(text or "")))


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
    args = raw.get("arguments") if isinstance(raw.get("arguments"), dict) else None
    segments = cap_parts(parts(str(raw.get("content") or "")), MAX_EVENT_CHARS)
    return {
        "type": plain(str(raw.get("type", "?")))[:40],
        "role": plain(str(raw.get("role") or ""))[:40],
        "name": plain(str(raw.get("name") or ""))[:200],
        "content": "".join(t for _, t in segments),
        "parts": segments,
        "arguments": _arguments(args),
        "exit_code": raw.get("exit_code") if isinstance(raw.get("exit_code"), int) else None,
        "model": model_figures(raw, args),
        "timestamp": str(raw.get("timestamp") or "")[:40],
    }


_ESCAPED_CSI = re.compile(r"\\u001b\[[0-9;?]*[A-Za-z]")
"""A colour code inside JSON text (where ESC is written ``\\u001b``)."""


def _arguments(args: dict[str, Any] | None) -> str:
    """Tool arguments as indented JSON, unicode as itself and colour codes removed."""
    if not args:
        return ""
    text = json.dumps(args, indent=1, default=str, ensure_ascii=False)
    return cap(plain(_ESCAPED_CSI.sub("", text)))


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def model_figures(raw: dict[str, Any], args: dict[str, Any] | None) -> dict[str, str] | None:
    """Tokens, cost and latency of a model call as the event recorded them (a ``model_call``
    event, or any event carrying token usage); each says "not recorded" when absent.

    Where each comes from: ``usage`` (token counts, OpenAI or Anthropic names),
    ``arguments.cost_usd`` (Harbor's per-step metrics), ``arguments.duration_sec`` (the
    ``--proxy`` timing of the call)."""
    usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else None
    if raw.get("type") != "model_call" and not usage:
        return None
    args = args or {}
    cost, latency = _number(args.get("cost_usd")), _number(args.get("duration_sec"))
    status = str(args.get("status") or "")[:40]
    code = args.get("status_code")
    return {
        "tokens": _tokens(usage or {}),
        "cost": f"${cost:.4f}" if cost is not None else "cost not recorded",
        "latency": f"{latency:.2f} s" if latency is not None else "latency not recorded",
        "status": "" if status in ("", "success") else f"{status} {code if code else ''}".strip(),
    }


def _tokens(usage: dict[str, Any]) -> str:
    counts = {k: int(v) for k, v in usage.items() if _number(v) is not None}
    u = RoundUsage.from_counts([counts]) if counts else None
    if u is None:
        return "tokens not recorded"
    return f"{u.total_tokens:,} tokens (in {u.prompt_tokens:,}, out {u.completion_tokens:,})"


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
    lines = text.split("\n")  # not splitlines: a \r or \x1c inside a line is content
    if lines[-1] == "":
        lines.pop()
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
            body = [(_line_class(x), visible(x)) for x in lines[i + 2 : j]]
            out.append(FilePatch(path=path, kind=kinds.get(path, "modified"), lines=body))
            i = j
        else:
            i += 1
    return out


def _patch_path(minus: str, plus: str) -> str:
    side = plus[4:] if plus[4:] != "/dev/null" else minus[4:]
    return side[2:] if side[:2] in ("a/", "b/") else side


def read_checks(folder: Path) -> list[dict[str, Any]]:
    """The round's check results, each as the page shows it (id, result, detail, evidence
    lines), whatever the file holds: a malformed entry shows as "?" rather than failing."""
    text = _read(folder / "checks.json")
    try:
        data = json.loads(text) if text else []
    except ValueError:
        return []
    return [_check(c) for c in data if isinstance(c, dict)] if isinstance(data, list) else []


def _check(c: dict[str, Any]) -> dict[str, Any]:
    found = c.get("evidence")
    evidence: list[Any] = found if isinstance(found, list) else []
    return {
        "id": plain(str(c.get("id") or "?"))[:200],
        "result": plain(str(c.get("result") or "?"))[:40],
        "detail": cap(plain(str(c.get("detail") or "")), 4000),
        "evidence": [_evidence(e) for e in evidence[:20]],
    }


def _evidence(e: object) -> str:
    """One evidence item as a line: ``kind #event path: excerpt``."""
    if not isinstance(e, dict):
        return cap(plain(str(e)), 2000)
    index = e.get("index")
    head = [
        str(e.get("kind") or ""),
        f"#{index}" if isinstance(index, int) else "",
        str(e.get("path") or ""),
    ]
    where = " ".join(h for h in head if h)
    return cap(
        plain(f"{where}: {e.get('excerpt') or ''}" if where else str(e.get("excerpt") or "")), 2000
    )


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
