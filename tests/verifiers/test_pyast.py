"""Syntax trees are built one at a time in the engine (CPython 3.11's shared conversion
depth counter, python/cpython#106905: two threads parsing at once lost a whole job)."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

import evoround
from evoround.pyast import _LOCK, parse

PACKAGE = Path(evoround.__file__).parent


def test_every_parse_in_the_engine_goes_through_the_lock() -> None:
    direct = [
        f"{p.relative_to(PACKAGE)}:{n}"
        for p in PACKAGE.rglob("*.py")
        if p.name != "pyast.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bast\.parse\(", line)
    ]
    assert direct == []


def test_a_parse_waits_for_the_one_in_progress() -> None:
    got: list[ast.Module] = []
    with _LOCK:
        t = threading.Thread(target=lambda: got.append(parse("x = 1\n")))
        t.start()
        t.join(0.2)
        assert not got, "parsed while another parse held the lock"
    t.join(5)
    assert ast.dump(got[0]) == ast.dump(ast.parse("x = 1\n"))
    assert isinstance(parse("1 + 2", mode="eval"), ast.Expression)
