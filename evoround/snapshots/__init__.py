"""The snapshot store: content-addressed workspace states, their lineage and the
reference-state cache. Knows nothing of sandboxes or the engine.
"""

from evoround.snapshots._model import ManifestEntry, Snapshot, SnapshotKind, SnapshotLabel
from evoround.snapshots._store import SnapshotStore, WorkspaceRejected
from evoround.snapshots._tree import READ_CAP, SnapshotTree, dir_tree, overlay, read_capped

__all__ = [
    "READ_CAP",
    "ManifestEntry",
    "Snapshot",
    "SnapshotKind",
    "SnapshotLabel",
    "SnapshotStore",
    "SnapshotTree",
    "WorkspaceRejected",
    "dir_tree",
    "overlay",
    "read_capped",
]
