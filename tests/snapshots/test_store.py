import os
from datetime import UTC, datetime
from pathlib import Path

from evoround.results import Mode, ResultsWriter, RoundResult, RoundStatus, read_results
from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore


def label(kind=SnapshotKind.agent, rnd=1, parent=None):
    return SnapshotLabel(task="t", task_digest="d" * 64, kind=kind, round=rnd, parent=parent)


def blobs(store: SnapshotStore) -> int:
    return sum(1 for p in (store.root / "blobs").rglob("*") if p.is_file())


def test_unchanged_files_are_stored_once(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg/a.py").write_text("a = 1\n")
    (ws / "b.txt").write_bytes(b"\x00\xffbinary")
    (ws / "empty").mkdir()
    os.symlink("b.txt", ws / "link")
    store = SnapshotStore(tmp_path / "store")
    m1, size, files = store.capture_dir(ws)
    assert files == 2 and size == 6 + 8
    assert blobs(store) == 2
    (ws / "c.txt").write_text("a = 1\n")  # same content as pkg/a.py
    m2, _, _ = store.capture_dir(ws)
    assert m2 != m1 and blobs(store) == 2
    out = tmp_path / "out"
    store.materialize(m2, out)
    assert (out / "pkg/a.py").read_text() == "a = 1\n"
    assert (out / "b.txt").read_bytes() == b"\x00\xffbinary"
    assert (out / "empty").is_dir() and os.readlink(out / "link") == "b.txt"


def test_same_tree_same_manifest(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "x").write_text("x")
    store = SnapshotStore(tmp_path / "store")
    assert store.capture_dir(ws)[0] == store.capture_dir(ws)[0]


def test_lineage_and_reference_cache(tmp_path: Path):
    store = SnapshotStore(tmp_path / "store")
    a = store.register(label(SnapshotKind.reference, 1), "local", "m1")
    b = store.register(label(SnapshotKind.reference, 2, parent=a.id), "local", "m2")
    assert [s.id for s in store.lineage(b.id)] == [b.id, a.id]
    assert store.reference("local", "d" * 64, 2) is None
    store.set_reference(b)
    assert store.reference("local", "d" * 64, 2) == b
    assert store.reference("docker", "d" * 64, 2) is None
    assert SnapshotStore(tmp_path / "store").get(b.id).created_at == b.created_at


def _result(rnd: int) -> RoundResult:
    return RoundResult(
        job="j",
        task="t",
        task_digest="d",
        n_rounds=3,
        mode=Mode.mt,
        attempt=1,
        round=rnd,
        agent="a",
        sandbox="local",
        passed=True,
        status=RoundStatus.passed,
        started_at=datetime.now(UTC),
    )


def test_torn_last_line_is_skipped_and_healed(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    w = ResultsWriter(path)
    w.append(_result(1))
    w.append(_result(2))
    w.close()
    with open(path, "a") as f:
        f.write('{"schema_version": 1, "job": "j", "ta')  # killed mid-write
    records, problems = read_results(path)
    assert [r.round for r in records] == [1, 2] and len(problems) == 1
    w = ResultsWriter(path)  # a resumed job cuts the torn tail before appending
    w.append(_result(3))
    w.close()
    records, problems = read_results(path)
    assert [r.round for r in records] == [1, 2, 3] and problems == []


def _tree(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = ("file", p.read_bytes(), p.stat().st_mode & 0o777)
    return out


def test_materialize_over_a_parent_writes_only_the_difference(tmp_path: Path):
    """Files, links, empty dirs and type changes: the result equals a full materialize."""
    store = SnapshotStore(tmp_path / "store")
    a, b = tmp_path / "a", tmp_path / "b"
    for d, files in (
        (a, {"keep.txt": "same", "gone.txt": "x", "dir/f": "1", "to_dir": "file", "deep/x/y": "z"}),
        (b, {"keep.txt": "same", "new.txt": "n", "to_dir/inner": "now a dir", "dir": "a file"}),
    ):
        for rel, text in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
    (a / "empty").mkdir()
    (a / "link").symlink_to("keep.txt")
    (b / "link").symlink_to("new.txt")
    (b / "empty2").mkdir()
    ma, _, _ = store.capture_dir(a)
    mb, _, _ = store.capture_dir(b)
    dest = tmp_path / "dest"
    store.materialize(ma, dest)
    kept_inode = (dest / "keep.txt").stat().st_ino
    touched = store.materialize(mb, dest, over=ma)
    full = tmp_path / "full"
    store.materialize(mb, full)
    assert _tree(dest) == _tree(full)
    assert (dest / "keep.txt").stat().st_ino == kept_inode, "an unchanged file is not rewritten"
    assert "keep.txt" not in touched
    # a stale path (changed behind the store's back) is rewritten, not written through
    (dest / "new.txt").unlink()
    os.link(dest / "keep.txt", dest / "new.txt")
    store.materialize(mb, dest, over=mb, stale=frozenset({"new.txt"}))
    assert (dest / "keep.txt").read_text() == "same"
    assert _tree(dest) == _tree(full)


def test_snapshot_sees_an_in_place_rewrite_that_keeps_size_and_mtime(tmp_path: Path):
    store = SnapshotStore(tmp_path / "store")
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "f.txt"
    f.write_text("aaaa")
    first, _, _ = store.capture_dir(ws)
    st = f.stat()
    f.write_text("bbbb")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    second, _, _ = store.capture_dir(ws)
    assert first != second
