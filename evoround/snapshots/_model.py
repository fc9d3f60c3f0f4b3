"""Snapshot records: what a frozen workspace is and where it came from (lineage)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field


class SnapshotKind(StrEnum):
    agent = "agent"
    reference = "reference"
    initial = "initial"


class SnapshotLabel(BaseModel):
    """Lineage the engine attaches when it asks a sandbox for a snapshot."""

    model_config = ConfigDict(frozen=True)

    task: str
    task_digest: str
    kind: SnapshotKind
    round: int = Field(ge=0)
    attempt: str | None = None
    parent: str | None = None


class Snapshot(BaseModel):
    """A registered snapshot. ``locator`` is backend-specific (manifest digest, image id)."""

    model_config = ConfigDict(frozen=True)

    id: str
    backend: str
    locator: str
    task: str
    task_digest: str
    kind: SnapshotKind
    round: int
    attempt: str | None = None
    parent: str | None = None
    size_bytes: int = 0
    files: int = 0
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class ManifestEntry(TypedDict, total=False):
    """One entry of a stored manifest (``manifests/<digest>.json``): a file (with
    ``sha256`` and ``mode``), a link (with ``target``) or an empty folder (``dir``)."""

    path: Required[str]
    type: Required[str]
    sha256: str
    mode: int
    target: str
