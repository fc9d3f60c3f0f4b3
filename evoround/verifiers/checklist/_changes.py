"""The round's workspace change as files a person can read later (``changes.json`` and
``workspace.diff`` in the round folder), built from the same diff the checks score.

Every byte here is the agent's: paths are kept as given (the viewer escapes them), files
larger than :data:`MAX_DIFFED_BYTES` or binary are listed without a diff, and the patch
stops at :data:`MAX_PATCH_BYTES` (said so in the record).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from evoround.results import (
    CHANGES_FILE,
    MAX_DIFFED_BYTES,
    MAX_LISTED,
    MAX_PATCH_BYTES,
    PATCH_FILE,
    FileChange,
    RoundChanges,
)
from evoround.verifiers.checklist._model import WorkspaceDiff


def _describe(path: str, data: bytes | None) -> FileChange:
    if data is None:
        return FileChange(path=path)
    return FileChange(
        path=path,
        size=len(data),
        binary=b"\0" in data[:8192],
        too_large=len(data) > MAX_DIFFED_BYTES,
    )


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _file_patch(path: str, before: bytes | None, after: bytes | None) -> str:
    """One file's unified diff (``--- a/p`` / ``+++ b/p``, /dev/null for a side that is absent)."""
    old = f"a/{path}" if before is not None else "/dev/null"
    new = f"b/{path}" if after is not None else "/dev/null"
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(_lines(before), _lines(after), old, new)
    )


def _diffable(change: FileChange, before: bytes | None) -> bool:
    if change.binary or change.too_large:
        return False
    return before is None or (len(before) <= MAX_DIFFED_BYTES and b"\0" not in before[:8192])


class _Patch:
    """The round's patch, kept under :data:`MAX_PATCH_BYTES` (files that do not fit are left
    out whole, never cut in the middle) and written in path order."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, str]] = []
        self.size = 0
        self.truncated = False

    def add(self, path: str, before: bytes | None, after: bytes | None) -> None:
        text = _file_patch(path, before, after)
        if self.size + len(text) > MAX_PATCH_BYTES:
            self.truncated = True
            return
        self.parts.append((path, text))
        self.size += len(text)

    def text(self) -> str:
        return "".join(t for _, t in sorted(self.parts))


def round_changes(diff: WorkspaceDiff, parent: str | None) -> tuple[RoundChanges, str]:
    """The record and the patch of one round."""
    kinds: dict[str, list[FileChange]] = {"added": [], "modified": [], "deleted": []}
    unlisted = 0
    patch = _Patch()
    for kind, paths in (
        ("added", diff.added),
        ("modified", diff.modified),
        ("deleted", diff.deleted),
    ):
        unlisted += max(0, len(paths) - MAX_LISTED)
        for path in paths[:MAX_LISTED]:
            before = diff.read_before(path) if kind != "added" else None
            after = diff.read_after(path) if kind != "deleted" else None
            change = _describe(path, before if kind == "deleted" else after)
            kinds[kind].append(change)
            if _diffable(change, before):
                patch.add(path, before, after)
    rec = RoundChanges(
        parent=parent,
        added=kinds["added"],
        modified=kinds["modified"],
        deleted=kinds["deleted"],
        unlisted=unlisted,
        patch_truncated=patch.truncated,
    )
    return rec, patch.text()


def write_changes(folder: Path, changes: RoundChanges, patch: str) -> None:
    """Both files into the round folder (the record last: its presence means both are whole)."""
    (folder / PATCH_FILE).write_text(patch, encoding="utf-8", errors="replace")
    (folder / CHANGES_FILE).write_text(changes.model_dump_json(indent=1), encoding="utf-8")
