"""Durable results: one RoundResult per line, appended, flushed and fsynced.

A crash can at worst leave a torn LAST line; readers skip it and report it, so
every complete record written before a crash or Ctrl-C is kept.

A round is recorded once: its key is (task, mode, attempt, round). The writer refuses a
key the file already holds (:class:`DuplicateRecord`), also one another process appended
since it opened the file (appends are made under an ``flock`` of the file and first read
what others added); the reader reports a duplicate key and an unreadable line as
problems and counts neither (the first record of a key is the record).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from evoround.fileio import named
from evoround.results._records import RoundResult

Key = tuple[str, str, int, int]

_LINE = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
"""How a record is written (jsonlines' default, the format of every results file so far)."""

UNREADABLE = "skipped unreadable record"
DUPLICATE = "skipped duplicate record"
"""How the reader's problems begin after ``path:line: `` (see :func:`problem_summary`)."""


class DuplicateRecord(ValueError):
    """A round already recorded in the results file (a second writer, or a bug)."""


def _key_text(key: Key) -> str:
    task, mode, attempt, rnd = key
    return f"{task} {mode}-{attempt:02d} round {rnd}"


class ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._heal_torn_tail()
        self._lock = threading.Lock()
        # unbuffered: a write that fails leaves nothing pending for a later flush to add
        self._fh = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the writer
        self._keys: set[Key] = set()
        self._seen = 0
        """Bytes of the file whose keys are in ``_keys``."""

    def _heal_torn_tail(self) -> None:
        """Cut a partial last line (from a kill mid-write) so appends start on a fresh line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            f.truncate(cut)

    def _catch_up(self) -> None:
        """Learn the keys of the lines appended since last looked (by anyone)."""
        with open(self.path, "rb") as f:
            f.seek(self._seen)
            data = f.read()
        whole = data[: data.rfind(b"\n") + 1]
        for line in whole.splitlines():
            try:
                self._keys.add(RoundResult.model_validate_json(line).key)
            except ValidationError:
                continue
        self._seen += len(whole)

    def append(self, result: RoundResult) -> None:
        """Record ``result`` durably; :class:`DuplicateRecord` if its round is recorded."""
        with self._lock:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX)
            try:
                self._catch_up()
                if result.key in self._keys:
                    raise DuplicateRecord(
                        f"{self.path}: {_key_text(result.key)} is already recorded"
                    )
                self._write_line(_LINE.encode(json.loads(result.model_dump_json())) + "\n")
                self._keys.add(result.key)
                self._seen = os.fstat(self._fh.fileno()).st_size
            finally:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)

    def _write_line(self, line: str) -> None:
        """Append ``line`` whole and fsync it; if the disk is full (or anything fails) the
        part written is cut off again, so the file keeps only whole records, and the
        OSError names the file."""
        fd = self._fh.fileno()
        before = os.fstat(fd).st_size
        data = memoryview(line.encode())
        try:
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
            named(e, self.path)
            raise

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


@dataclass(frozen=True)
class ResultLine:
    """One non-blank line of a results file, as read."""

    number: int
    text: str
    record: RoundResult | None
    """None: the line is not a readable record."""
    errors: int = 0
    """How many validation errors an unreadable line had."""
    first: int | None = None
    """For a record whose key an earlier line holds: that line's number."""


def scan_results(path: Path) -> list[ResultLine]:
    """Every non-blank line of ``path``, read (none if there is no file)."""
    out: list[ResultLine] = []
    if not path.exists():
        return out
    seen: dict[Key, int] = {}
    with open(path, encoding="utf-8", errors="replace") as f:  # a bad byte: that line only
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = RoundResult.model_validate_json(line)
            except ValidationError as e:
                out.append(ResultLine(n, line.rstrip("\n"), None, e.error_count()))
                continue
            out.append(ResultLine(n, line.rstrip("\n"), rec, first=seen.get(rec.key)))
            seen.setdefault(rec.key, n)
    return out


def read_results(path: Path) -> tuple[list[RoundResult], list[str]]:
    """All complete records, once per key (the first), and a description of each line
    that had to be skipped: unreadable or a duplicate key."""
    records: list[RoundResult] = []
    problems: list[str] = []
    for line in scan_results(path):
        if line.record is None:
            problems.append(f"{path}:{line.number}: {UNREADABLE} ({line.errors} errors)")
        elif line.first is not None:
            problems.append(
                f"{path}:{line.number}: {DUPLICATE} of line {line.first} "
                f"({_key_text(line.record.key)}), counted once"
            )
        else:
            records.append(line.record)
    return records, problems


def problem_summary(problems: list[str]) -> str | None:
    """One line about a results file's skipped lines (None when there are none)."""
    if not problems:
        return None
    where = problems[0].split(": skipped", 1)[0].rsplit(":", 1)[0]
    torn = _lines_of(problems, UNREADABLE)
    dup = _lines_of(problems, DUPLICATE)
    parts = []
    if torn:
        parts.append(
            f"{len(torn)} unreadable line(s) ({_numbers(torn)}) not counted "
            "(evoround run --resume re-runs their rounds)"
        )
    if dup:
        parts.append(f"{len(dup)} duplicate record(s) ({_numbers(dup)}) counted once")
    other = len(problems) - len(torn) - len(dup)
    if other:
        parts.append(f"{other} other problem(s)")
    return f"{where}: " + ", ".join(parts) + " (report --json lists them)"


def _lines_of(problems: list[str], kind: str) -> list[str]:
    return [p.split(f": {kind}", 1)[0].rsplit(":", 1)[-1] for p in problems if f": {kind}" in p]


def _numbers(lines: list[str]) -> str:
    shown = ", ".join(lines[:5])
    return f"line {shown}" + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")
