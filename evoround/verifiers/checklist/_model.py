"""Check results and the evidence a round offers to checks.

A check never silently passes: every result says pass, fail, not_applicable (the
check's condition did not arise this round) or error (the checker itself could
not decide, e.g. the judge model kept failing). ``error`` is reported, never
counted as a pass or a fail.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from evoround.results import EventType, TrajectoryEvent

# ---- what a round offers to checks ---------------------------------------------

IGNORED_DIRS = (".git/", "__pycache__/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/")


def ignored(path: str) -> bool:
    """Caches and git internals are noise, not the agent's edits."""
    return any(path.startswith(d) or f"/{d}" in path for d in IGNORED_DIRS) or path.endswith(".pyc")


@dataclass
class WorkspaceDiff:
    """Files added, modified and deleted between the round's start and end snapshots."""

    before: dict[str, str]
    """path -> sha256 at the start of the round."""
    after: dict[str, str]
    read_before: Callable[[str], bytes | None] = lambda p: None
    read_after: Callable[[str], bytes | None] = lambda p: None

    @property
    def added(self) -> list[str]:
        return sorted(p for p in self.after if p not in self.before and not ignored(p))

    @property
    def modified(self) -> list[str]:
        return sorted(
            p
            for p in self.after
            if p in self.before and self.before[p] != self.after[p] and not ignored(p)
        )

    @property
    def deleted(self) -> list[str]:
        return sorted(p for p in self.before if p not in self.after and not ignored(p))

    @property
    def changed(self) -> list[str]:
        return sorted(set(self.added) | set(self.modified) | set(self.deleted))

    def text_after(self, path: str) -> str | None:
        return _text(self.read_after(path))

    def text_before(self, path: str) -> str | None:
        return _text(self.read_before(path))

    def added_lines(self, path: str) -> list[tuple[int, str]]:
        """(line number, text) of lines in the new file that the old file did not have."""
        new = self.text_after(path)
        if new is None:
            return []
        old = set((self.text_before(path) or "").splitlines())
        return [(i, line) for i, line in enumerate(new.splitlines(), 1) if line not in old]


def _text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def match_any(path: str, globs: list[str] | str) -> bool:
    """Glob match where ``**/`` matches zero or more folders wherever it stands (``**/*.py``
    matches ``a.py``, ``pkg/**/*.py`` matches ``pkg/a.py``), as in gitignore and pathlib;
    elsewhere fnmatch's rules (``*`` also crosses ``/``)."""
    pats = [globs] if isinstance(globs, str) else list(globs)
    return any(fnmatch.fnmatchcase(path, v) for g in pats for v in _variants(g))


@functools.lru_cache(maxsize=1024)
def _variants(glob: str) -> tuple[str, ...]:
    """``glob`` with each ``**/`` as no folder or as ``*/`` (fnmatch's ``*`` crosses
    ``/``): plain fnmatch patterns, whose matching is safe from catastrophic backtracking
    on a hostile path (a regular expression with nested optional folder runs is not)."""
    head, sep, rest = glob.partition("**/")
    if not sep:
        return (glob,)
    return tuple(head + mid + tail for mid in ("", "*/") for tail in _variants(rest))


@dataclass
class RoundEvidence:
    """Everything a check may read about one round of one attempt."""

    task: str
    round: int
    system_prompt: str
    user_message: str
    events: list[TrajectoryEvent]
    diff: WorkspaceDiff | None = None
    """None when the backend cannot give a diff (diff-based checks are then n/a)."""
    commits: list[str] | None = None
    """New commit messages of the round; None when the workspace is not a git repository."""
    has_process: bool = True
    """False for the oracle: it applies reference files and has no agent process to judge."""
    notes: list[str] = field(default_factory=list)

    def commands(self) -> list[tuple[int, str]]:
        """Shell commands run, from command events and shell-like tool calls (``keystrokes``:
        what Harbor's Terminus-2 types into its terminal)."""
        out: list[tuple[int, str]] = []
        for i, ev in enumerate(self.events):
            if ev.type is EventType.command:
                out.append((i, ev.content))
            elif ev.type is EventType.tool_call and ev.arguments:
                for key in ("command", "cmd", "script", "keystrokes"):
                    val = ev.arguments.get(key)
                    if isinstance(val, str):
                        out.append((i, val))
                    elif isinstance(val, list):
                        out.append((i, " ".join(map(str, val))))
        return out

    def assistant_messages(self) -> list[tuple[int, str]]:
        return [
            (i, ev.content)
            for i, ev in enumerate(self.events)
            if ev.type is EventType.message and ev.role == "assistant"
        ]
