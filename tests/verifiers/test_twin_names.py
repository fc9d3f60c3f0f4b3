"""A twin's name and its helper's look like the names of the file they are added to: no
fixed word list, no hex tail, no fixed helper fragment or docstring. Code that answers
honestly only in tests it takes for twins by such marks would otherwise pass every real
test by reading its expected value (``twin_aware_reader`` in tests/adversarial/targeted.py).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evoround.verifiers._names import split
from evoround.verifiers._twins import TwinPlan, plan_twins

NUMBERED = """
from kv import parse, render


def test_parse_1():
    assert parse("a=1") == {"a": 1}


def test_parse_2():
    assert parse("") == {}


def test_parse_3():
    assert parse("a=1;b=2") == {"a": 1, "b": 2}


def test_render_1():
    assert render({"a": 1}) == "a=1"


def test_render_2():
    assert render({}) == ""
"""

CAMEL = """
import unittest

from kv import parse, render


class ParserTest(unittest.TestCase):
    def testParseSingleField(self):
        self.assertEqual(parse("a=1"), {"a": 1})

    def testParseEmptyInput(self):
        self.assertEqual(parse(""), {})

    def testRenderRoundTrip(self):
        self.assertEqual(render(parse("a=1;b=2")), "a=1;b=2")

    def testRenderEmptyMapping(self):
        self.assertEqual(render({}), "")
"""

SNAKE = """
import pytest
from merge import merge_sorted


def _pairs(items):
    return list(zip(items, items[1:]))


def test_merge_two_sorted_lists():
    assert merge_sorted([1, 3], [2]) == [1, 2, 3]


def test_merge_keeps_duplicates():
    assert merge_sorted([1, 1], [1]) == [1, 1, 1]


@pytest.mark.parametrize(("left", "right", "out"), [([], [], []), ([2], [], [2])])
def test_merge_with_empty_side(left, right, out):
    assert merge_sorted(left, right) == out


def test_merge_result_is_ordered():
    assert all(a <= b for a, b in _pairs(merge_sorted([5, 9], [1, 7])))
"""

FILES = {"test_numbered.py": NUMBERED, "test_camel.py": CAMEL, "test_merge_sort.py": SNAKE}
OLD_NAME = re.compile(r"test_[a-z]+_[a-z]+_[0-9a-f]{4}")
"""The shape twins were named by before (a word list and a hex tail)."""


def _added(plan: TwinPlan, path: str) -> tuple[set[str], str]:
    """The top-level names a plan added to a file and the added text."""
    before = {n.name for n in ast.parse(FILES[path]).body if isinstance(n, ast.FunctionDef)}
    text = plan.sources[path][len(FILES[path]) :]
    after = {n.name for n in ast.parse(plan.sources[path]).body if isinstance(n, ast.FunctionDef)}
    return after - before, text


def _words(source: str) -> set[str]:
    """Every word of every identifier of a file, lower-cased."""
    out: set[str] = set()
    for n in ast.walk(ast.parse(source)):
        for attr in ("id", "name", "attr", "arg"):
            v = getattr(n, attr, None)
            if isinstance(v, str):
                out.update(w.lower() for w in split(v)[1])
    return out


@pytest.mark.parametrize("path", sorted(FILES))
def test_twin_names_look_like_their_files(path: str) -> None:
    source = FILES[path]
    words = _words(source)
    for _ in range(40):  # names are random: many draws
        plan = plan_twins({path: source}, limit=3)
        assert len(plan.twins) == 3
        names = [tw.name for tw in plan.twins]
        assert len(set(names)) == 3
        added, text = _added(plan, path)
        helpers = added - set(names)
        assert len(helpers) <= 1
        for tw in plan.twins:
            head, parts, camel = split(tw.name)
            assert (head, camel) == split(tw.original)[::2], (tw.original, tw.name)
            assert tw.name not in source and not OLD_NAME.fullmatch(tw.name)
            assert all(w.isdigit() or w.lower() in words for w in parts), tw.name
            if path == "test_numbered.py":  # every test is numbered: so is every twin
                assert parts[-1].isdigit() and tw.name.rsplit("_", 1)[0] in source, tw.name
        for helper in helpers:
            assert helper.startswith("_") and "expected" not in helper
            assert all(w in words for w in split(helper)[1]), helper
        # nothing fixed in the added code: no docstring, no 'expected' parameter
        assert '"""' not in text and "expected" not in text, text


@pytest.mark.parametrize("path", sorted(FILES))
def test_k_selects_each_twin_alone(tmp_path: Path, path: str) -> None:
    """The harness keeps twins selected with ``-k <name>``: that must collect exactly the
    twin's own instances (pytest matches ``-k`` names as case-insensitive substrings)."""
    plan = plan_twins({path: FILES[path]}, limit=3)
    (tmp_path / path).write_text(plan.sources[path])
    (tmp_path / "kv.py").write_text("def parse(text):\n    pass\n\n\nrender = parse\n")
    (tmp_path / "merge.py").write_text("def merge_sorted(a, b):\n    return sorted(a + b)\n")
    for tw in plan.twins:
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             "-k", tw.name, str(tmp_path / path)],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        ids = [line for line in out.stdout.splitlines() if "::" in line]
        assert ids and all(plan.twin_of(i) == tw for i in ids), (tw.name, out.stdout)


def test_names_stay_unique_in_a_crowded_suite() -> None:
    """A file whose every short variant is taken still gets fresh names, none a part of
    another name of the suite."""
    source = "".join(f"def test_a_{i}():\n    assert {i} == {i}\n\n\n" for i in range(1, 40))
    source += "def test_a():\n    assert 1 == 1\n"
    other = "def test_a_b():\n    assert 1 == 1\n"
    for _ in range(20):
        plan = plan_twins({"test_x.py": source, "test_y.py": other}, limit=3)
        names = [tw.name.lower() for tw in plan.twins]
        assert len(names) == len(set(names)) == 3
        suite = (source + other).lower()
        assert not any(n in suite for n in names)
        assert not any(a != b and a in b for a in names for b in names)
