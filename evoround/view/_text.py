"""Agent text made readable before it is escaped: terminal colour codes, control bytes and
bidirectional overrides.

Agent output is written for a terminal: ``pytest`` and ``ls --color`` colour it with ANSI
escape sequences, progress bars redraw a line with ``\\r``. Escaped as they are, these show
as ``[31m`` noise. Here they become plain text plus colour segments, ``(css class, text)``
pairs the templates render inside ``<span class=...>`` with autoescape on: no text is ever
marked safe, a segment's class comes from a fixed table, never from the input.

Text that could mislead a reader is made visible rather than hidden: bidirectional
override characters (which can make ``evil.py`` display as another name) show as
``⟦U+202E⟧``; in diffs and file names, where the bytes are the point, control characters
show as their Unicode pictures (``␛``).
"""

from __future__ import annotations

import functools
import re

_CSI = re.compile(r"\x1b\[([0-9;:?<=>]*)[ -/]*([@-~])")
"""A control sequence: ``ESC [ params final``; only ``m`` (SGR, colours) is kept."""
_ESCAPE = re.compile(
    r"\x1b\[([0-9;:?<=>]*)[ -/]*([@-~])"  # a control sequence (as _CSI)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # an operating-system command (titles, links)
    r"|\x1b[@-Z\\-_]?"  # any other escape, or a stray ESC
)
"""Every escape sequence; in :func:`parts` only SGR ones (group 2 ``m``) take effect."""
_CONTROL = re.compile(r"[\x00-\x06\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x9f]")
"""Control bytes other than tab, newline, carriage return, ESC and BEL (which ends an
operating-system command: removed once the escapes are parsed)."""
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")

_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
Part = tuple[str, str]
"""(css classes, text): the classes are built from the fixed names here only."""


def _bidi(m: re.Match[str]) -> str:
    return f"⟦U+{ord(m[0]):04X}⟧"


def _redraw(text: str) -> str:
    """``\r\n`` is a newline; a line redrawn with ``\r`` shows what a terminal would: each
    draw overwrites the start of the one before, a longer earlier draw keeps its tail."""
    text = re.sub(r"\r+(?=\n|$)", "", text)
    if "\r" not in text:
        return text
    return "\n".join(_overwrite(line) if "\r" in line else line for line in text.split("\n"))


def _overwrite(line: str) -> str:
    """Columns are counted on the plain text, so a redrawn line loses its colours."""
    shown = ""
    for draw in _CSI.sub("", line).split("\r"):
        shown = draw + shown[len(draw) :]
    return shown


def _prepare(text: str) -> str:
    """Redraws applied, stray control bytes removed, bidi controls made visible (one pass
    each over the whole text; the escapes are left for the caller)."""
    return _BIDI.sub(_bidi, _CONTROL.sub("", _redraw(text)))


def plain(text: str) -> str:
    """The text as a terminal would show it, without colours."""
    return _ESCAPE.sub("", _prepare(text)).replace("\x07", "")


def visible(text: str) -> str:
    """Every control character shown as its picture (``\\x1b`` -> ``␛``), tabs and newlines
    kept, bidi controls named: for file names and diffs, whose bytes matter."""
    text = _BIDI.sub(_bidi, text)
    return re.sub(
        r"[\x00-\x08\x0b-\x1f\x7f]",
        lambda m: "␡" if m[0] == "\x7f" else chr(0x2400 + ord(m[0])),
        text,
    )


@functools.lru_cache(maxsize=256)
def _codes(params: str) -> tuple[int, ...]:
    """An SGR sequence's numbers (a handful of distinct ones recur thousands of times)."""
    return tuple(int(c) if c.isdigit() else 0 for c in re.split(r"[;:]", params or "0"))


def _sgr(params: str, state: dict[str, str]) -> None:
    """Apply one SGR sequence's parameters to ``state`` (fg colour, bold, underline)."""
    if params in ("", "0"):
        state.clear()
        return
    codes = _codes(params)
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.clear()
        elif c == 1:
            state["b"] = "a-b"
        elif c == 4:
            state["u"] = "a-u"
        elif c in (22, 24):
            state.pop("b" if c == 22 else "u", None)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            state["fg"] = f"a-{_COLOURS[c % 10]}"
        elif c == 39:
            state.pop("fg", None)
        elif c in (38, 48):  # 256-colour or RGB: its arguments are skipped, no class
            i += 2 if codes[i + 1 : i + 2] == (5,) else 4
        i += 1


def parts(text: str) -> list[Part]:
    """The text in colour segments (adjacent segments of one style merged)."""
    text = _prepare(text)
    out: list[Part] = []
    state: dict[str, str] = {}
    at = 0
    for m in _ESCAPE.finditer(text):
        _add(out, state, text[at : m.start()])
        if m[2] == "m":
            _sgr(m[1], state)
        at = m.end()
    _add(out, state, text[at:])
    return out


def _add(out: list[Part], state: dict[str, str], text: str) -> None:
    text = text.replace("\x07", "")
    if not text:
        return
    css = " ".join(state[k] for k in ("fg", "b", "u") if k in state)
    if out and out[-1][0] == css:
        out[-1] = (css, out[-1][1] + text)
    else:
        out.append((css, text))


def cap_parts(segments: list[Part], limit: int) -> list[Part]:
    """At most ``limit`` characters of text, head and tail kept (as ``cap`` does)."""
    total = sum(len(t) for _, t in segments)
    if total <= limit:
        return segments
    half = limit // 2
    cut = ("", f"\n[... {total - limit} characters not shown ...]\n")
    return [*_head(segments, half), cut, *_tail(segments, half)]


def _head(segments: list[Part], n: int) -> list[Part]:
    out: list[Part] = []
    for css, t in segments:
        if n <= 0:
            break
        out.append((css, t[:n]))
        n -= len(t)
    return out


def _tail(segments: list[Part], n: int) -> list[Part]:
    out: list[Part] = []
    for css, t in reversed(segments):
        if n <= 0:
            break
        out.append((css, t[-n:]))
        n -= len(t)
    return out[::-1]
