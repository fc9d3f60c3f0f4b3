"""What an agent is told besides the user turn: system prompt, repo rules, skills, memory.

Agents that have no native loader for these (the built-in agent, mini-swe-agent)
get them in the system message, the way Claude Code and Codex deliver theirs:
the task's system prompt, the repository instructions file (AGENTS.md or
CLAUDE.md) verbatim, an *index* of skills (name, description, path: the agent
must read SKILL.md itself, which is what ``skill_invoked`` checks look for) and a
*pointer* to the memory file (reading it is the agent's job: ``memory_read``).
Round reminders are not here: they travel in the user message (``round_message``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from evoround.sandboxes import Sandbox
from evoround.tasks import Task

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
SKILL_GLOBS = ("skills/*/SKILL.md", ".claude/skills/*/SKILL.md", ".agents/skills/*/SKILL.md")
MEMORY_FILES = (".memory/MEMORY.md", "MEMORY.md", ".claude/MEMORY.md")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str


@dataclass
class WorkspaceContext:
    """The agent-facing files found in the workspace when the session starts."""

    instructions: dict[str, str] = field(default_factory=dict)
    skills: list[Skill] = field(default_factory=list)
    memory: str | None = None

    def render(self, *, include_instructions: bool = True) -> str:
        """The system-message sections for these files (empty when there are none)."""
        parts: list[str] = []
        if include_instructions:
            for name, text in self.instructions.items():
                parts.append(f"# Repository instructions ({name})\n\n{text.strip()}")
        if self.skills:
            lines = [
                f"- {s.name}: {s.description} (read {s.path} before using it)" for s in self.skills
            ]
            parts.append("# Skills\n\nSkills available in this repository:\n" + "\n".join(lines))
        if self.memory:
            parts.append(
                f"# Memory\n\nNotes from earlier sessions with this user are in {self.memory}. "
                "Read them before you start."
            )
        return "\n\n".join(parts)


def _frontmatter(text: str) -> dict[str, str]:
    m = re.match(r"^---\s*\n(.*?)\n---", text, re.S)
    if not m:
        return {}
    out: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip().strip("\"'")
    return out


def scan_workspace(sandbox: Sandbox) -> WorkspaceContext:
    """Find instruction files, skills and memory in the sandbox's workspace (backend-agnostic)."""
    ctx = WorkspaceContext()
    for name in INSTRUCTION_FILES:
        try:
            # instruction files are often links (CLAUDE.md -> AGENTS.md)
            data = sandbox.read_file(name, follow_symlinks=True, limit=1 << 20)
            ctx.instructions[name] = data.decode(errors="replace")
        except (OSError, Exception):  # noqa: B014 - backends raise their own not-found errors
            continue
    globs = " ".join(SKILL_GLOBS)
    res = sandbox.exec(f'for f in {globs}; do [ -f "$f" ] && echo "$f"; done', timeout=30)
    for path in res.stdout.split():
        try:
            meta = _frontmatter(sandbox.read_file(path).decode(errors="replace"))
        except Exception:
            continue
        name = meta.get("name") or path.split("/")[-2]
        ctx.skills.append(Skill(name, meta.get("description", ""), path))
    for path in MEMORY_FILES:
        if sandbox.exec(f"test -f {shlex.quote(path)}", timeout=30).exit_code == 0:
            ctx.memory = path
            break
    return ctx


def system_message(task: Task, ctx: WorkspaceContext, preamble: str) -> str:
    """Preamble (how to work), then the task's system prompt, then the workspace context."""
    parts = [preamble.strip()]
    if task.config.task.system_prompt.strip():
        parts.append(task.config.task.system_prompt.strip())
    rendered = ctx.render()
    if rendered:
        parts.append(rendered)
    return "\n\n".join(parts)
