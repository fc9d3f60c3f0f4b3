"""The snapshot store: content-addressed workspace states, their lineage and the
reference-state cache. Knows nothing of sandboxes or the engine.
"""

from evoround.snapshots._model import ManifestEntry, Snapshot, SnapshotKind, SnapshotLabel
from evoround.snapshots._store import SnapshotStore, WorkspaceRejected

__all__ = [
    "ManifestEntry",
    "Snapshot",
    "SnapshotKind",
    "SnapshotLabel",
    "SnapshotStore",
    "WorkspaceRejected",
]
