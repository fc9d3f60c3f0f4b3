"""The round's recorded workspace change (changes.json + workspace.diff), from a diff."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evoround.results import CHANGES_FILE, MAX_DIFFED_BYTES, PATCH_FILE, RoundChanges
from evoround.verifiers.checklist import WorkspaceDiff, round_changes, write_changes


def diff_of(before: dict[str, bytes], after: dict[str, bytes]) -> WorkspaceDiff:
    def digests(files: dict[str, bytes]) -> dict[str, str]:
        return {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}

    return WorkspaceDiff(
        before=digests(before),
        after=digests(after),
        read_before=before.get,
        read_after=after.get,
    )


def test_added_changed_removed_with_unified_diffs() -> None:
    d = diff_of(
        {"a.py": b"x = 1\n", "gone.txt": b"bye\n", "same.py": b"s\n"},
        {"a.py": b"x = 2\n", "new/b.py": b"y = 1", "same.py": b"s\n"},
    )
    ch, patch = round_changes(d, "snap-1")
    assert [c.path for c in ch.added] == ["new/b.py"]
    assert [c.path for c in ch.modified] == ["a.py"]
    assert [c.path for c in ch.deleted] == ["gone.txt"]
    assert ch.parent == "snap-1" and ch.count == 3
    assert patch.index("a/a.py") < patch.index("gone.txt") < patch.index("b/new/b.py")
    assert "-x = 1\n+x = 2\n" in patch
    assert "+y = 1\n\\ No newline at end of file\n" in patch
    assert "--- a/gone.txt\n+++ /dev/null\n" in patch


def test_binary_and_large_files_are_listed_not_diffed() -> None:
    big = b"a\n" * (MAX_DIFFED_BYTES // 2 + 1)
    d = diff_of({}, {"img.png": b"\x89PNG\0\0data", "big.txt": big})
    ch, patch = round_changes(d, None)
    flags = {c.path: (c.binary, c.too_large, c.size) for c in ch.added}
    assert flags == {"img.png": (True, False, 10), "big.txt": (False, True, len(big))}
    assert patch == ""


def test_patch_is_capped_whole_files_only() -> None:
    files = {f"f{i:03d}.txt": (f"line {i}\n" * 2000).encode() for i in range(200)}
    ch, patch = round_changes(diff_of({}, files), None)
    assert len(ch.added) == 200 and ch.patch_truncated
    assert len(patch) <= 1_000_000
    assert patch.count("+++ b/") == patch.count("--- /dev/null")  # no file cut in half


def test_ignored_caches_are_not_changes(tmp_path: Path) -> None:
    d = diff_of({}, {"__pycache__/a.cpython-311.pyc": b"\0", "ok.py": b"1\n"})
    ch, patch = round_changes(d, None)
    assert [c.path for c in ch.added] == ["ok.py"]
    write_changes(tmp_path, ch, patch)
    assert RoundChanges.model_validate_json((tmp_path / CHANGES_FILE).read_text()) == ch
    assert (tmp_path / PATCH_FILE).read_text() == patch


def test_hostile_names_and_bytes_survive(tmp_path: Path) -> None:
    name = "we\nird/<b>\udcff.py".encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    d = diff_of({}, {name: b"\xff\xfe not utf-8 \xc3\n"})
    ch, patch = round_changes(d, None)
    write_changes(tmp_path, ch, patch)
    assert (
        RoundChanges.model_validate_json((tmp_path / CHANGES_FILE).read_text()).added[0].path
        == name
    )
