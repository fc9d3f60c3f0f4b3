"""Harbor's fixed paths, rewritten so an imported task runs in any evoround sandbox.

Harbor runs every task in a container with fixed absolute paths (``/app`` the workspace,
``/tests`` the suite, ``/solution``, ``/logs/verifier/reward.txt``). An evoround sandbox
may be a local folder and the verifier's log folder is a fresh one per verification, so
the paths become the environment variables the engine sets (``EVOROUND_WORKDIR``, ...).

Why a lexer and not a plain search and replace: a variable expands only where the shell
expands. Inside single quotes the path becomes ``'"${VAR}"'`` (close, expand, reopen);
a quoted heredoc (``<<'EOF'``, whose body is literal) that names a Harbor path is turned
into an unquoted one with its body escaped (``\\``, ``$``, ````` ` `````), so the body
stays the same text except for the paths, which now expand. Python files get the path
from the environment inside their string literals (an f-string replacement, so implicit
concatenation and every quote style keep working), with Harbor's path as the default.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

from evoround.pyast import parse as parse_ast

# Longest first: /logs/verifier must win over /logs.
HARBOR_PATHS: tuple[tuple[str, str], ...] = (
    ("/logs/verifier", "EVOROUND_VERIFIER_DIR"),
    ("/logs", "EVOROUND_LOGS_DIR"),
    ("/tests", "EVOROUND_TESTS_DIR"),
    ("/solution", "SOLUTION_DIR"),
    ("/app", "EVOROUND_WORKDIR"),
)
"""(Harbor's path, the variable that stands for it)."""


def harbor_path_pattern(harbor: str) -> str:
    """A pattern for ``harbor`` as a whole path (not part of a longer word or path)."""
    return rf"(?<![\w./$-]){re.escape(harbor)}(?=[/\s\"'`;)|:&>}}]|$)"


_ANY = re.compile("|".join(harbor_path_pattern(h) for h, _ in HARBOR_PATHS), re.M)


def has_harbor_path(text: str) -> bool:
    return _ANY.search(text) is not None


def substitute(text: str, replacement: Callable[[str, str], str]) -> str:
    """Every Harbor path in ``text`` replaced by ``replacement(variable, harbor_path)``, in
    one pass (a replacement that names a Harbor path as its default is not rewritten)."""
    variables = dict(HARBOR_PATHS)
    return _ANY.sub(lambda m: replacement(variables[m.group(0)], m.group(0)), text)


def _expanding(var: str, _harbor: str) -> str:
    return "${" + var + "}"


def _in_single_quotes(var: str, _harbor: str) -> str:
    return "'\"${" + var + "}\"'"


def _expanding_or_harbor(var: str, harbor: str) -> str:
    return "${" + var + ":-" + harbor + "}"


def _single_or_harbor(var: str, harbor: str) -> str:
    return "'\"${" + var + ":-" + harbor + "}\"'"


def _escaped_or_harbor(var: str, harbor: str) -> str:
    return "\\${" + var + ":-" + harbor + "}"


# --- bash --------------------------------------------------------------------------------

_HEREDOC = re.compile(r"<<(-?)[ \t]*((?:'[^'\n]*'|\"[^\"\n]*\"|\\.|[^\s;&|<>()'\"\\])+)")
_QUOTING = re.compile(r"'([^']*)'|\"([^\"]*)\"|\\(.)")


def _unquote(word: str) -> str:
    """A heredoc delimiter word without its quoting (what ends the body)."""
    return _QUOTING.sub(lambda m: next(g for g in m.groups() if g is not None), word)


@dataclass
class _Piece:
    kind: str
    """``code`` (the shell expands here), ``single`` (inside '...'), ``body`` (a quoted
    heredoc's literal body) or ``delim`` (a quoted heredoc's delimiter word)."""
    text: str
    delim: int = -1
    """For a heredoc's body: the index of its ``delim`` piece."""
    line: str = ""
    """For a heredoc's body: the command line that opened it (where the body goes)."""
    heredoc: bool = False


@dataclass(frozen=True)
class _Pending:
    """A heredoc whose body starts after the current line."""

    index: int
    word: str
    strip_tabs: bool
    quoted: bool
    line_start: int


class _Lexer:
    """Splits a bash script into pieces by quoting context (enough of bash for paths)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.pieces: list[_Piece] = []
        self.code: list[str] = []
        self.pending: list[_Pending] = []

    def run(self) -> list[_Piece]:
        while self.i < len(self.text):
            self._step()
        self._flush()
        return self.pieces

    def _flush(self) -> None:
        if self.code:
            self.pieces.append(_Piece("code", "".join(self.code)))
            self.code = []

    def _take(self, s: str) -> None:
        self.code.append(s)
        self.i += len(s)

    def _step(self) -> None:
        t, i = self.text, self.i
        c = t[i]
        if c == "\\":
            self._take(t[i : i + 2])
        elif c == "'":
            self._single()
        elif t.startswith("$'", i):
            self._ansi_c()
        elif c == '"':
            self._double()
        elif not self._special(t, i):
            self._take(c)
            if c == "\n" and self.pending:
                self._bodies()

    def _special(self, t: str, i: int) -> bool:
        """Arithmetic, a comment or a heredoc operator at ``i`` (taken), else False."""
        if t.startswith("((", i) or t.startswith("$((", i):
            end = t.find("))", i)  # arithmetic: its << is a shift, not a heredoc
            self._take(t[i : len(t) if end < 0 else end + 2])
        elif t[i] == "#" and (i == 0 or t[i - 1] in " \t\n;&|()"):
            end = t.find("\n", i)
            self._take(t[i : len(t) if end < 0 else end])
        elif t.startswith("<<", i) and not t.startswith("<<<", i) and t[i - 1 : i] != "<":
            m = _HEREDOC.match(t, i)
            if m:
                self._heredoc(m)
            else:
                self._take("<<")
        else:
            return False
        return True

    def _single(self) -> None:
        t = self.text
        end = t.find("'", self.i + 1)
        end = len(t) if end < 0 else end
        self._take("'")
        self._flush()
        self.pieces.append(_Piece("single", t[self.i : end]))
        self.i = end
        if end < len(t):
            self._take("'")

    def _ansi_c(self) -> None:
        """``$'...'`` (backslash escapes inside): a literal like '...'."""
        t = self.text
        k = self.i + 2
        while k < len(t) and t[k] != "'":
            k += 2 if t[k] == "\\" else 1
        self._take("$'")
        self._flush()
        self.pieces.append(_Piece("single", t[self.i : k]))
        self.i = k
        if k < len(t):
            self._take("'")

    def _double(self) -> None:
        t = self.text
        k = self.i + 1
        while k < len(t) and t[k] != '"':
            k += 2 if t[k] == "\\" else 1
        self._take(t[self.i : k + 1])

    def _heredoc(self, m: re.Match[str]) -> None:
        self._take(self.text[self.i : m.start(2)])
        self._flush()
        word = m.group(2)
        quoted = any(q in word for q in "'\"\\")
        line_start = self.text.rfind("\n", 0, m.start()) + 1
        self.pending.append(
            _Pending(len(self.pieces), _unquote(word), m.group(1) == "-", quoted, line_start)
        )
        self.pieces.append(_Piece("delim", word))
        self.i = m.end()

    def _bodies(self) -> None:
        """The bodies of the heredocs opened on the line just ended, in order."""
        t = self.text
        opener = t[self.pending[0].line_start : self.i] if self.pending else ""
        for h in self.pending:
            start = self.i
            terminator = ""
            while self.i < len(t):
                end = t.find("\n", self.i)
                end = len(t) if end < 0 else end + 1
                line = t[self.i : end].rstrip("\n")
                if (line.lstrip("\t") if h.strip_tabs else line) == h.word:
                    terminator = t[self.i : end]
                    break
                self.i = end
            self._flush()
            kind = "body" if h.quoted else "code"
            self.pieces.append(_Piece(kind, t[start : self.i], h.index, opener, heredoc=True))
            self._take(terminator)
            self._flush()
        self.pending = []


def _escape_body(text: str) -> str:
    """A literal heredoc body as the body of an unquoted heredoc that prints the same."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


_TARGET = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?([^\s\"';&|)]+)")


def _body_language(line: str, body: str) -> str:
    """What a heredoc's body is (``py``, ``sh`` or ``""``: data, or not known), from its
    shebang, the file it is written to, or the interpreter it is fed to."""
    first = body.lstrip("\n").split("\n", 1)[0]
    if first.startswith("#!"):
        return "py" if "python" in first else "sh" if "sh" in first else ""
    m = _TARGET.search(line)
    target = m.group(1) if m else ""
    if target.endswith(".py") or re.search(r"\bpython[\d.]*\b", line):
        return "py"
    if target.endswith((".sh", ".bash")) or re.search(r"(^|[\s;|&])(ba)?sh(\s+-s)?\s*<<", line):
        return "sh"
    return ""


def _rewrite_body(p: _Piece, pieces: list[_Piece]) -> None:
    """A heredoc body that names a Harbor path: a file written for later must find the path
    when IT runs (the workspace of a verification is a clone at another path), so a Python
    or shell body reads it from the environment itself, Harbor's path the default; any
    other body gets the path when the heredoc is written (a quoted one is unquoted, its
    body escaped)."""
    language = _body_language(p.line, p.text)
    if language == "py":
        new = rewrite_python(p.text)
        if new is not None:
            p.text = new
            return
    if language == "sh":
        if p.kind == "body":
            p.text = rewrite_shell(p.text, defaults=True)
        else:
            p.text = substitute(p.text, _escaped_or_harbor)
        return
    if p.kind == "body":
        p.text = substitute(_escape_body(p.text), _expanding)
        pieces[p.delim].text = _unquote(pieces[p.delim].text)
    else:
        p.text = substitute(p.text, _expanding)


def rewrite_shell(text: str, *, defaults: bool = False) -> str:
    """Harbor's paths in a bash script, each rewritten for its quoting context.

    ``defaults``: each variable with Harbor's path as its default (a script written by
    another, run where the engine may not set the variables)."""
    expanding = _expanding_or_harbor if defaults else _expanding
    single = _single_or_harbor if defaults else _in_single_quotes
    pieces = _Lexer(text).run()
    for p in pieces:
        if p.heredoc and has_harbor_path(p.text):
            _rewrite_body(p, pieces)
        elif p.kind == "code":
            p.text = substitute(p.text, expanding)
        elif p.kind == "single":
            p.text = substitute(p.text, single)
    return "".join(p.text for p in pieces)


# --- Python ------------------------------------------------------------------------------

_LITERAL = re.compile(r"([A-Za-z]*)('''|\"\"\"|'|\")", re.S)


def _as_fstring(literal: str) -> str | None:
    """``literal`` (one string token) with its Harbor paths read from the environment;
    None for bytes, which cannot hold a str."""
    m = _LITERAL.match(literal)
    if m is None or "b" in m.group(1).lower():
        return None
    prefix, quote = m.group(1), m.group(2)
    body = literal[m.end() : len(literal) - len(quote)]
    is_f = "f" in prefix.lower()
    if not is_f:
        body = body.replace("{", "{{").replace("}", "}}")
    q = "'" if quote[0] == '"' else '"'

    def lookup(var: str, harbor: str) -> str:
        return f"{{__import__({q}os{q}).environ.get({q}{var}{q}, {q}{harbor}{q})}}"

    new_prefix = prefix.replace("u", "").replace("U", "") + ("" if is_f else "f")
    return new_prefix + quote + substitute(body, lookup) + quote


def rewrite_python(source: str) -> str | None:
    """Harbor's paths in the string literals of a Python file, read from the environment
    (Harbor's path the default). None when the file cannot be rewritten safely (it does
    not parse, or the result would not): the caller leaves it as is and says so."""
    try:
        parse_ast(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, ValueError, tokenize.TokenError):
        return None
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    for tok in tokens:
        if tok.type == tokenize.STRING and has_harbor_path(tok.string):
            new = _as_fstring(tok.string)
            if new is not None:
                a = starts[tok.start[0] - 1] + tok.start[1]
                b = starts[tok.end[0] - 1] + tok.end[1]
                edits.append((a, b, new))
    out = source
    for a, b, new in reversed(edits):
        out = out[:a] + new + out[b:]
    try:
        parse_ast(out)
    except SyntaxError:
        return None
    return out
