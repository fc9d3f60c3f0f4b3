"""Names for failing twins and their helper, drawn from the file they are added to.

Code under test that can read the test files may answer honestly only in tests it takes for
twins: a fixed word list, a random hex tail or a helper named ``_expected_*`` singled them
out as a class, and then every real test could be passed by reading its expected value. So
no name here has a fixed part. A twin's name is a variant of the names of the tests beside
it (the original's prefix and case style, words of that file's test names and of the
functions its tests call, its numbering when its tests are numbered); the helper looks like
a private function of the file, and its parameters and locals are words of the file.

A twin's name is also new to the whole suite and, compared case-insensitively, part of no
text of it (file and folder names, identifiers, string constants such as parameter ids,
comments): the harness selects twins with ``-k <name>``, which pytest matches as a
case-insensitive substring of test, class, module and marker names, so it must select the
twin and nothing else.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import random
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_CAMEL = re.compile(r"\d+|[A-Z]+(?![^\W\d_A-Z])|[A-Z]?[^\W\d_A-Z]+|[^\W\d_]+")
_BUILTINS = frozenset(dir(builtins))
_NOT_DOMAIN = frozenset(
    {"test", "tests", "self", "cls", "pytest", "mark", "param", "parametrize", "fixture"}
)
"""Words of a test file that say nothing about what it tests (never used in a name)."""
_TRIES = 300


def split(name: str) -> tuple[str, list[str], bool]:
    """A name's head (``test_``, ``test``, ``_`` or ""), its words and whether they are
    camelCase: ``test_parse_url_2`` -> ("test_", [parse, url, 2], False), ``testParseURL``
    -> ("test", [Parse, URL], True), ``_make_case`` -> ("_", [make, case], False)."""
    for head in ("test_", "test", "_", ""):
        if name.startswith(head):
            break
    rest = name[len(head) :]
    if "_" not in rest and head != "test_" and (head != "test" or rest[:1].isupper()):
        words = _CAMEL.findall(rest)  # one word stays one word
        return head, words, head == "test" and bool(words)
    return head, [w for w in rest.split("_") if w], False


def join(head: str, words: Iterable[str], camel: bool) -> str:
    """The inverse of :func:`split`."""
    words = [w for w in words if w]
    if camel:
        return head + "".join(w[:1].upper() + w[1:] for w in words)
    low = [w if w.isupper() and len(w) > 1 else w.lower() for w in words]
    if head in ("test_", "_") or not low:
        return head + "_".join(low)
    return head + low[0] + "".join("_" + w for w in low[1:])  # tests_foo: the head is glued


def _numbered(words: list[str]) -> bool:
    return len(words) > 1 and words[-1].isdecimal()


@dataclass
class FileWords:
    """What one test file's text offers for names."""

    tests: list[str] = field(default_factory=list)
    """Top-level test function names."""
    methods: dict[str, list[str]] = field(default_factory=dict)
    """Class name -> its test method names."""
    vocabulary: list[str] = field(default_factory=list)
    """Words of its test names (as often as they occur) and of the functions its tests call."""
    helpers: list[str] = field(default_factory=list)
    """Its private top-level function names."""
    plain: list[str] = field(default_factory=list)
    """Lower-case words of all its identifiers: parameter and local names for a helper."""


def file_words(tree: ast.Module) -> FileWords:
    """The names and words of a parsed test file."""
    out = FileWords()
    bodies = _collect_names(tree, out)
    for name in [*out.tests, *(m for ms in out.methods.values() for m in ms)]:
        out.vocabulary += [w for w in split(name)[1] if not w.isdecimal()]
    for name in sorted(_called(bodies)):
        if not name.startswith(("assert", "fail", "__")) and name not in _BUILTINS:
            out.vocabulary += [w for w in split(name)[1] if _domain(w)]
    out.plain = _plain_words(tree)
    return out


def _collect_names(tree: ast.Module, out: FileWords) -> list[ast.AST]:
    """Fill ``out``'s tests, methods and helpers from the file's top level; the test
    functions and methods found (whose calls give words too)."""
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    bodies: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, funcs) and node.name.startswith("test"):
            out.tests.append(node.name)
            bodies.append(node)
        elif isinstance(node, funcs) and node.name[:1] == "_" and node.name[1:2] != "_":
            out.helpers.append(node.name)
        elif isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, funcs) and n.name.startswith("test")]
            out.methods[node.name] = [m.name for m in methods]
            bodies += methods
    return bodies


def _called(bodies: list[ast.AST]) -> set[str]:
    """The names of the functions and methods the tests call ("" for other callees)."""
    called: set[str] = set()
    for body in bodies:
        for n in ast.walk(body):
            if isinstance(n, ast.Call):
                called.add(getattr(n.func, "id", None) or getattr(n.func, "attr", None) or "")
    return called


def _plain_words(tree: ast.Module) -> list[str]:
    """The lower-case domain words of every identifier of the file, sorted."""
    seen: set[str] = set()
    for n in ast.walk(tree):
        for attr in ("id", "name", "attr", "arg"):
            v = getattr(n, attr, None)
            if isinstance(v, str):
                seen.update(w.lower() for w in split(v)[1])
    return sorted(w for w in seen if _domain(w) and w.isidentifier() and w.isascii())


def _domain(word: str) -> bool:
    w = word.lower()
    return (
        len(w) > 1
        and not w.isdecimal()
        and w not in _NOT_DOMAIN
        and w not in _BUILTINS
        and not keyword.iskeyword(w)
    )


@dataclass
class Namer:
    """Hands out the names of one run's twins and helpers.

    ``text``: every text of the suite (file paths, test files, conftests), of which a
    twin's name must be no part; ``taken``: the suite's identifiers."""

    rng: random.Random
    taken: set[str]
    text: str
    claimed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.text = self.text.lower()

    def _free(self, name: str) -> bool:
        return _valid(name) and name not in self.taken and name not in _BUILTINS

    def _twin_ok(self, name: str) -> bool:
        """New, and ``-k <name>`` selects this name alone."""
        low = name.lower()
        return (
            self._free(name)
            and low not in self.text
            and not any(low in c or c in low for c in self.claimed)
        )

    def _claim(self, name: str, test: bool = True) -> str:
        self.taken.add(name)
        if test:
            self.claimed.append(name.lower())
        return name

    def twin(self, original: str, scope: list[str], words: FileWords) -> str:
        """A name like the tests of ``scope`` (the original's neighbours: its class's
        methods, or the file's functions), in the original's own head and style."""
        head, own, camel = split(original)
        same = [w for h, w, c in map(split, scope) if (h, c) == (head, camel)] or [own]
        mine = [x for ws in same for x in ws if not x.isdecimal()]
        vocabulary = [*mine, *mine, *words.vocabulary] or own
        numbered = [w for w in same if _numbered(w)]
        rng = self.rng
        for _ in range(_TRIES):
            if numbered and rng.random() < len(numbered) / len(same):
                new = _next_number(numbered, rng)
            else:
                new = _edited(list(rng.choice(same)), vocabulary, rng)
            name = join(head, new, camel)
            if _distinct(new) and self._twin_ok(name):
                return self._claim(name)
        return self._claim(_numbered_after(head, own, camel, self._twin_ok))

    def helper(self, words: FileWords) -> str:
        """A name like the file's private helpers (``_`` and one or two of its words when
        it has none)."""
        shapes = [w for _, w, _ in map(split, words.helpers) if w]
        vocabulary = [w for w in words.vocabulary if _domain(w)] or words.plain or ["value"]
        rng = self.rng
        for _ in range(_TRIES):
            if shapes and rng.random() < 0.5:
                new = list(rng.choice(shapes))
                new[rng.randrange(len(new))] = rng.choice(vocabulary)
            else:
                k = len(rng.choice(shapes)) if shapes else rng.choice((1, 2, 2))
                new = [rng.choice(vocabulary) for _ in range(k)]
            name = join("_", new, False)
            if self._free(name) and _distinct(new):
                return self._claim(name, test=False)
        name = _numbered_after("_", [rng.choice(vocabulary)], False, self._free)
        return self._claim(name, test=False)

    def locals_(self, count: int, words: FileWords, avoid: Iterable[str]) -> list[str]:
        """``count`` distinct plain words of the file for a helper's parameters and locals:
        never a keyword, a builtin (the helper calls some) or ``avoid``."""
        avoid = set(avoid)
        pool = [w for w in words.plain if w not in avoid]
        self.rng.shuffle(pool)
        out = pool[:count]
        stem = out[0] if out else "value"
        n = 1
        while len(out) < count:
            n += 1
            if f"{stem}{n}" not in avoid:
                out.append(f"{stem}{n}")
        return out


def _distinct(words: list[str]) -> bool:
    """No word repeated (case-insensitively): ``test_parse_parse`` reads like no real name."""
    return len({w.lower() for w in words}) == len(words)


def _next_number(numbered: list[list[str]], rng: random.Random) -> list[str]:
    """A numbered neighbour's words with a number one or two past the highest of its
    series (so numbered tests get a plausible next number)."""
    base = rng.choice(numbered)[:-1]
    top = max(int(w[-1]) for w in numbered if w[:-1] == base)
    return [*base, str(top + rng.randint(1, 2))]


def _edited(new: list[str], vocabulary: list[str], rng: random.Random) -> list[str]:
    """A neighbour's words (its number dropped) with one random edit: a word of the file
    inserted, a word dropped (never the last: no mere prefix) or a word replaced."""
    if _numbered(new):
        new = new[:-1]
    word = rng.choice(vocabulary) if vocabulary else ""
    op = rng.random()
    if word and (not new or op < 0.25):
        new.insert(rng.randint(0, len(new)), word)
    elif len(new) > 2 and op < 0.35:
        del new[rng.randrange(len(new) - 1)]  # never the last: no mere prefix
    elif word:
        new[rng.randrange(len(new))] = word
    return new


def _valid(name: str) -> bool:
    """An identifier that stays itself in source (Python normalises identifiers to NFKC)."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and unicodedata.normalize("NFKC", name) == name
    )


def _numbered_after(head: str, words: list[str], camel: bool, ok: Callable[[str], bool]) -> str:
    """The first acceptable ``<name>_2``, ``<name>_3`` ... (``<name>2`` in camelCase; the
    head alone when the words make no identifier)."""
    base = words[:-1] if _numbered(words) else words
    if not _valid(join(head, [*base, "2"], camel)):
        base = []
    n = 2
    while True:
        name = join(head, [*base, str(n)], camel)
        if ok(name):
            return name
        n += 1
