"""A full disk or a read-only folder under --out, EVOROUND_HOME or an export: one line
naming the path (exit 2), no temporary file left behind, no record lost or made up.

Real small tmpfs mounts (root only; skipped elsewhere), filled up for real."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evoround.fileio import atomic_write
from evoround.results import Mode, ResultsWriter, RoundResult, RoundStatus, read_results
from tests.helpers import COUNTER, evoround_cli

Mount = Callable[..., Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """``tmpfs(size, ro=False)``: a fresh tmpfs of ``size`` (e.g. "64k") under tmp_path."""
    mounted: list[Path] = []

    def mount(size: str, ro: bool = False) -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"{'ro,' if ro else ''}size={size}"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                              capture_output=True)  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):  # lazily: a file a failed test left open is no error
        subprocess.run(["umount", "-l", str(where)], check=True)


def _fill(folder: Path) -> Path:
    """Write a file in ``folder`` until the disk is full; the file (remove it for room)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    return filler


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp") or ".filling" in p.name]


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_temporary(
    tmpfs: Mount,
) -> None:
    disk = tmpfs("64k")
    target = disk / "report.html"
    atomic_write(target, "old")
    _fill(disk)
    with pytest.raises(OSError) as caught:
        atomic_write(target, "x" * 200_000)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert target.read_text() == "old" and _temporaries(disk) == []


def test_atomic_write_in_a_read_only_folder_names_the_target(tmpfs: Mount) -> None:
    target = tmpfs("64k", ro=True) / "report.html"
    with pytest.raises(OSError) as caught:
        atomic_write(target, "x")
    assert caught.value.errno == errno.EROFS and caught.value.filename == str(target)


def _record(rnd: int, error: str = "") -> RoundResult:
    return RoundResult(
        job="j", task="t", task_digest="d", n_rounds=9, mode=Mode.mt, attempt=1, round=rnd,
        agent="nop", model=None, sandbox="local", passed=False, status=RoundStatus.failed,
        error=error or None, started_at=datetime.now(UTC), host="h",
    )  # fmt: skip


def test_a_record_that_does_not_fit_leaves_only_whole_records(tmpfs: Mount) -> None:
    disk = tmpfs("64k")
    path = disk / "results.jsonl"
    writer = ResultsWriter(path)
    writer.append(_record(1))
    filler = _fill(disk)
    with pytest.raises(OSError) as caught:
        writer.append(_record(2, "e" * 100_000))  # part fits the file's last page, not all
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    records, problems = read_results(path)
    assert [r.round for r in records] == [1] and problems == []
    filler.unlink()  # room again: the same writer goes on, the file stays whole
    writer.append(_record(2))
    writer.close()
    assert [r.round for r in read_results(path)[0]] == [1, 2]


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in stderr and "evoround bug" not in stderr
    return lines[0]


def test_a_report_that_does_not_fit_exits_2_naming_it_and_leaves_no_temporary(
    tmpfs: Mount, tmp_path: Path
) -> None:
    """The rounds fit, the ~1 MB report.html does not (the temporary one used to stay)."""
    out = tmpfs("1200k")
    res = evoround_cli("run", str(COUNTER), "--sandbox", "local", "--out", str(out),
                       "--job", "j", env={"EVOROUND_HOME": str(tmp_path / "home")})  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    line = _one_line(res.stderr)
    assert f"{out}/j/report.html" in line and "disk is full" in line, line
    assert _temporaries(out) == []
    records, problems = read_results(out / "j" / "results.jsonl")
    assert len(records) == 8 and all(r.passed for r in records) and problems == []


def test_a_full_disk_mid_job_names_the_job_folder(tmpfs: Mount, tmp_path: Path) -> None:
    out = tmpfs("48k")
    res = evoround_cli("run", str(COUNTER), "--sandbox", "local", "--out", str(out),
                       "--job", "j", env={"EVOROUND_HOME": str(tmp_path / "home")})  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    assert str(out / "j") in _one_line(res.stderr)
    assert _temporaries(out) == []
    records, problems = read_results(out / "j" / "results.jsonl")
    assert all(r.passed for r in records) and problems == []  # nothing charged to the agent


def test_a_full_evoround_home_charges_nothing_to_the_agent(tmpfs: Mount, tmp_path: Path) -> None:
    """The snapshot store and the verifier's bytecode cache live in EVOROUND_HOME: a cache
    cut short by the full disk used to be installed and fail every later verification
    (the oracle's rounds recorded as failed)."""
    home = tmpfs("64k") / "home"
    res = evoround_cli("run", str(COUNTER), "--sandbox", "local", "--out",
                       str(tmp_path / "runs"), "--job", "j", env={"EVOROUND_HOME": str(home)})  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    assert str(home) in _one_line(res.stderr)
    assert _temporaries(home) == []
    records, _ = read_results(tmp_path / "runs" / "j" / "results.jsonl")
    assert all(r.passed for r in records), [(r.round, r.status) for r in records]


def test_an_export_that_does_not_fit_leaves_nothing(tmpfs: Mount, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = evoround_cli("run", str(COUNTER), "--sandbox", "local", "--mode", "mt", "--out",
                        str(runs), "--job", "j", env={"EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    disk = tmpfs("20k")
    res = evoround_cli("export", str(runs / "j"), str(disk / "exp"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert str(disk / "exp") in _one_line(res.stderr)
    assert list(disk.iterdir()) == []  # no half export to refuse the next try
