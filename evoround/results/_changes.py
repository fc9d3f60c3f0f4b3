"""What the agent changed in its workspace in one round, as the round's folder keeps it.

Why recorded at the round boundary rather than recomputed later: the snapshots a diff
needs may be gone (they are garbage-collected unless ``--keep-snapshots``) or live in
another backend's store (Docker images on another host), while the round folder is what a
viewer, a report or a person always has. Two files, both size-capped because their content
is the agent's: ``changes.json`` (this model: the files added, changed and removed) and
``workspace.diff`` (unified diffs of the text files, in path order).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CHANGES_FILE = "changes.json"
PATCH_FILE = "workspace.diff"
MAX_LISTED = 2000
"""Files listed per kind of change; more are counted, not listed."""
MAX_PATCH_BYTES = 1_000_000
"""The whole ``workspace.diff`` of a round (the rest is cut and said so)."""
MAX_DIFFED_BYTES = 256_000
"""A file larger than this (before or after) is listed, not diffed."""


class FileChange(BaseModel):
    """One changed path: its size after (or before, if removed) and why it has no diff."""

    model_config = ConfigDict(frozen=True)

    path: str
    size: int | None = None
    binary: bool = False
    too_large: bool = False


class RoundChanges(BaseModel):
    """The round's workspace change against the previous round's snapshot (the task's
    initial workspace for round 1, the reference state for a fast-forwarded round)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = 1
    parent: str | None = None
    """The snapshot the change is measured from (None: the task's initial workspace)."""
    added: list[FileChange] = Field(default_factory=list)
    modified: list[FileChange] = Field(default_factory=list)
    deleted: list[FileChange] = Field(default_factory=list)
    unlisted: int = 0
    """Changed files beyond :data:`MAX_LISTED` per kind (counted, not listed)."""
    patch_truncated: bool = False

    @property
    def paths(self) -> set[str]:
        return {c.path for c in (*self.added, *self.modified, *self.deleted)}

    @property
    def count(self) -> int:
        return len(self.added) + len(self.modified) + len(self.deleted) + self.unlisted
