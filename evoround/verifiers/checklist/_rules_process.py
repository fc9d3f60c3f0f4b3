"""Rules over the agent's process: the commands it ran, the files and skills it read, what it
said. They need the agent's own trajectory (the oracle has none: ``not_applicable``)."""

from __future__ import annotations

import json
import re
from typing import Any

from evoround.results import EventType, Evidence
from evoround.verifiers.checklist._model import RoundEvidence, match_any
from evoround.verifiers.checklist._registry import (
    FAIL,
    NA,
    PASS,
    RULES,
    Rule,
    RuleParamError,
    Verdict,
    cut,
    param,
    param_globs,
    param_regex,
    rule,
)


@rule("command_never_run", "process")
def command_never_run(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """No shell command matches ``pattern`` (regex), e.g. ``rm\\s+-rf``."""
    rx = param_regex(p, "pattern")
    hits = [
        Evidence(kind="command", index=i, excerpt=cut(c)) for i, c in ev.commands() if rx.search(c)
    ]
    if hits:
        return Verdict(FAIL, f"forbidden command run {len(hits)} time(s)", hits)
    return Verdict(PASS, f"{len(ev.commands())} command(s), none matches")


@rule("command_run", "process")
def command_run(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """At least one command matches ``pattern`` (e.g. the tests were run)."""
    rx = param_regex(p, "pattern")
    for i, c in ev.commands():
        if rx.search(c):
            return Verdict(
                PASS, "required command run", [Evidence(kind="command", index=i, excerpt=cut(c))]
            )
    return Verdict(FAIL, f"no command matches {rx.pattern!r}")


@rule("command_before", "process")
def command_before(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Every command matching ``then`` comes after some command matching ``first``."""
    first, then = param_regex(p, "first"), param_regex(p, "then")
    seen_first = False
    triggered = False
    for i, c in ev.commands():
        if then.search(c):
            triggered = True
            if not seen_first:
                return Verdict(
                    FAIL,
                    f"{then.pattern!r} before any {first.pattern!r}",
                    [Evidence(kind="command", index=i, excerpt=cut(c))],
                )
        if first.search(c):
            seen_first = True
    if not triggered:
        return Verdict(NA, f"no command matches {then.pattern!r}")
    return Verdict(PASS, "ordering respected")


# ---- reading instruction sources -------------------------------------------------


def _reads(ev: RoundEvidence, path: str, tool_names: tuple[str, ...] = ()) -> Evidence | None:
    """The first event that reads ``path``: a command naming it or a tool call about it."""
    for i, e in enumerate(ev.events):
        if e.type is EventType.command and path in e.content:
            return Evidence(kind="command", index=i, path=path, excerpt=cut(e.content))
        if e.type is EventType.tool_call:
            args = json.dumps(e.arguments or {})
            if path in args or (e.name in tool_names and tool_names):
                return Evidence(
                    kind="tool_call", index=i, path=path, excerpt=cut(f"{e.name} {args}")
                )
    return None


def _when(p: dict[str, Any], ev: RoundEvidence) -> Verdict | None:
    """Optional trigger: the rule applies only if files matching ``when`` changed."""
    if "when" not in p:
        return None
    if ev.diff is None:
        return Verdict(NA, "no workspace diff for the 'when' condition")
    if not any(match_any(f, param_globs(p, "when")) for f in ev.diff.changed):
        return Verdict(NA, f"no changed file matches {p['when']!r}")
    return None


@rule("skill_invoked", "process")
def skill_invoked(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """The skill's SKILL.md (``skill``: its path) was read, or a Skill tool named it.

    With ``when`` (globs) it applies only in rounds that change matching files.
    """
    path = param(p, "skill", kind=str)
    if (v := _when(p, ev)) is not None:
        return v
    name = path.rstrip("/").removesuffix("/SKILL.md").rsplit("/", 1)[-1]
    found = _reads(ev, path)
    if found is None:
        for i, e in enumerate(ev.events):
            if (
                e.type is EventType.tool_call
                and e.name == "Skill"
                and name in json.dumps(e.arguments or {})
            ):
                found = Evidence(kind="tool_call", index=i, excerpt=f"Skill {name}")
                break
    if found:
        return Verdict(PASS, f"skill {name} used", [found])
    return Verdict(FAIL, f"{path} never read")


@rule("file_read", "process")
def file_read(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """A file (``path``, e.g. a memory file) was read during the round."""
    path = param(p, "path", kind=str)
    if (v := _when(p, ev)) is not None:
        return v
    found = _reads(ev, path)
    return Verdict(PASS, f"{path} read", [found]) if found else Verdict(FAIL, f"{path} never read")


RULES["memory_read"] = Rule(
    "memory_read", file_read, frozenset({"process"}), "Alias of file_read for memory files."
)


# ---- messages ----------------------------------------------------------------------

EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U0001f1e6-\U0001f1ff\U00002b50\U00002b55"
    "\U0000fe0f\U0000200d\U00002705\U0000274c]"
)


@rule("no_emoji")
def no_emoji(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """No emoji in assistant messages and/or added lines (``where``: messages|files|both)."""
    where = param(p, "where", "both", str)
    if where not in ("messages", "files", "both"):
        raise RuleParamError("where must be messages, files or both")
    hits: list[Evidence] = []
    looked = False
    if where in ("messages", "both") and ev.has_process:
        looked = True
        hits += [
            Evidence(kind="message", index=i, excerpt=cut(m))
            for i, m in ev.assistant_messages()
            if EMOJI.search(m)
        ]
    if where in ("files", "both") and ev.diff is not None:
        looked = True
        globs = param_globs(p, "glob", "**")
        for f in ev.diff.changed:
            if match_any(f, globs):
                hits += [
                    Evidence(kind="file", path=f"{f}:{n}", excerpt=cut(line))
                    for n, line in ev.diff.added_lines(f)
                    if EMOJI.search(line)
                ]
    if not looked:
        return Verdict(NA, "neither agent messages nor a diff to look at")
    return (
        Verdict(FAIL, f"{len(hits)} emoji occurrence(s)", hits)
        if hits
        else Verdict(PASS, "no emoji")
    )


@rule("no_system_prompt_leak", "process")
def no_system_prompt_leak(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """No assistant message repeats ``words`` (default 8) consecutive words of the system prompt."""
    n = int(param(p, "words", 8))
    words = re.findall(r"\w+", ev.system_prompt.lower())
    if len(words) < n:
        return Verdict(NA, "system prompt shorter than the leak window")
    shingles = {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}
    for i, m in ev.assistant_messages():
        mw = re.findall(r"\w+", m.lower())
        for j in range(len(mw) - n + 1):
            if " ".join(mw[j : j + n]) in shingles:
                return Verdict(
                    FAIL,
                    "system prompt text repeated",
                    [Evidence(kind="message", index=i, excerpt=" ".join(mw[j : j + n]))],
                )
    return Verdict(PASS, "no leak")


_STOP = {
    "en": {
        "the",
        "and",
        "is",
        "to",
        "of",
        "a",
        "in",
        "it",
        "that",
        "for",
        "with",
        "this",
        "are",
        "i",
    },
    "de": {"der", "die", "das", "und", "ist", "nicht", "ich", "mit", "zu", "ein", "eine", "auf"},
    "fr": {"le", "la", "les", "et", "est", "des", "une", "un", "pour", "pas", "que", "dans"},
    "es": {"el", "la", "los", "las", "y", "es", "que", "de", "una", "para", "con", "por"},
}
_SCRIPTS = {
    "zh": re.compile("[\u4e00-\u9fff]"),
    "ja": re.compile("[\u3040-\u30ff]"),
    "ru": re.compile("[\u0400-\u04ff]"),
    "ko": re.compile("[\uac00-\ud7af]"),
}


def detect_language(text: str) -> str | None:
    """A deterministic, dependency-free guess: script for CJK/Cyrillic, stop words for Latin."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    for lang, rx in _SCRIPTS.items():
        if len(rx.findall(text)) / len(letters) > 0.3:
            return lang
    words = re.findall(r"[a-zäöüßàâçéèêëîïôûùñ']+", text.lower())
    scores = {lang: sum(w in stop for w in words) for lang, stop in _STOP.items()}
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] else None


@rule("response_language", "process")
def response_language(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """Assistant messages are in ``language`` (en, de, fr, es, zh, ja, ko, ru)."""
    want = param(p, "language", kind=str)
    min_chars = int(param(p, "min_chars", 20))
    judged = 0
    for i, m in ev.assistant_messages():
        prose = re.sub(r"```.*?```|`[^`]*`", " ", m, flags=re.S)
        if len(prose.strip()) < min_chars:
            continue
        got = detect_language(prose)
        if got is None:
            continue
        judged += 1
        if got != want:
            return Verdict(
                FAIL,
                f"message in {got}, expected {want}",
                [Evidence(kind="message", index=i, excerpt=cut(m))],
            )
    if not judged:
        return Verdict(NA, "no assistant prose long enough to judge")
    return Verdict(PASS, f"{judged} message(s) in {want}")


@rule("message_matches", "process")
def message_matches(p: dict[str, Any], ev: RoundEvidence) -> Verdict:
    """The final assistant message matches ``pattern`` (e.g. a required summary format)."""
    rx = param_regex(p, "pattern")
    msgs = ev.assistant_messages()
    if not msgs:
        return Verdict(FAIL, "no assistant message")
    i, m = msgs[-1]
    if rx.search(m):
        return Verdict(PASS, "final message matches")
    return Verdict(
        FAIL,
        f"final message does not match {rx.pattern!r}",
        [Evidence(kind="message", index=i, excerpt=cut(m))],
    )


# ---- the workspace diff ----------------------------------------------------------------
