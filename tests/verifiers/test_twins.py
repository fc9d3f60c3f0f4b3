"""Failing twins, measured with real pytest runs: every twin fails on an honest run and
passes when the code under test returns results that compare equal to anything, for
top-level functions, methods of pytest-style and ``unittest.TestCase`` classes, and checks
written with the expectation on either side.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evoround.verifiers._expect import NO, alter, literal_value, value_node
from evoround.verifiers._guard import Channel, Controls
from evoround.verifiers._pytest import _fresh_evidence, _twin_evidence
from evoround.verifiers._twins import Twin, TwinPlan, _analyse, node_parts, plan_twins

HONEST = """
def add(a, b):
    return a + b


def words(text):
    return text.split()


def table(n):
    return {"n": n, "squares": [i * i for i in range(n)]}
"""

# results that compare equal to anything: an int subclass (Python asks the subclass first,
# so ``5 == r`` is true too) and a plain object equal to every builtin value only
ALWAYS_EQUAL = """
class _Any(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def add(*args):
    return _Any(0)


words = table = add
"""
TYPED_EQUAL = """
class _Eq:
    def __eq__(self, other):
        if isinstance(other, (int, float, str, bytes, list, tuple, dict, set)):
            return True
        return NotImplemented

    __hash__ = object.__hash__


def add(*args):
    return _Eq()


words = table = add
"""

PYTEST_CLASSES = """
import pytest
from impl import add, table, words


class TestAdd:
    def setup_method(self):
        self.base = 2

    def test_small(self):
        assert add(self.base, 3) == 5

    def test_left(self):
        assert 5 == add(self.base, 3)

    @pytest.mark.parametrize(("a", "b", "total"), [(1, 2, 3), pytest.param(4, 5, 9, id="big")])
    def test_params(self, a, b, total):
        assert add(a, b) == total

    def test_fixture(self, tmp_path):
        assert words(tmp_path.name + " x")[-1] == "x"


@pytest.mark.parametrize("n", [2, 3])
class TestTable:
    @pytest.fixture
    def made(self, n):
        return table(n)

    def test_table(self, made, n):
        assert made == {"n": n, "squares": [i * i for i in range(n)]}

    def test_size(self, made):
        expected = 2
        assert expected <= made["n"]
        assert len(made) == expected
"""

UNITTEST_CLASSES = """
import unittest

from impl import add, table, words


class Base(unittest.TestCase):
    def setUp(self):
        self.text = "a b c"


class WordsTest(Base):
    def test_equal(self):
        self.assertEqual(words(self.text), ["a", "b", "c"])

    def test_expected_first(self):
        self.assertEqual(3, add(1, 2), "sum")

    def test_list(self):
        self.assertListEqual(words(self.text), ["a", "b", "c"])

    def test_count(self):
        self.assertCountEqual(words("b a"), ["a", "b"])

    def test_dict(self):
        self.assertDictEqual(table(2), {"n": 2, "squares": [0, 1]})

    def test_almost(self):
        self.assertAlmostEqual(add(0.1, 0.2), 0.3, places=6)

    def test_true(self):
        self.assertTrue(add(2, 2) == 4)

    def test_bound(self):
        expected = 4
        self.assertEqual(expected, add(2, 2))


class SuperTest(unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.__secret = 7

    def test_private(self):
        self.assertEqual(add(self.__secret, 0), 7)
"""

LEFT = """
import pytest
from impl import add, words


def test_literal():
    assert 5 == add(2, 3)


def test_bound():
    expected = ["a", "b"]
    assert expected == words("a b")


@pytest.mark.parametrize(("total", "a", "b"), [(3, 1, 2), (0, 0, 0)])
def test_param(total, a, b):
    assert total == add(a, b)
"""

# expectations the text does not show to be one: the check must hold an always-equal result
# on either side
UNKNOWN = """
import pytest
from impl import add, words


@pytest.fixture
def five():
    return 5


def test_fixture_left(five):
    assert five == add(2, 3)


def test_computed_left():
    expected = sum([2, 3])
    assert expected == add(2, 3)


def test_computed_right():
    expected = "a b".split()
    assert words("a b") == expected
"""

# honest tests whose expected values compare equal to more than one thing (or raise)
SENTINELS = """
import math
import unittest
from unittest import mock

import numpy as np
import pytest
from impl import add, table, words


class Positive:
    def __eq__(self, other):
        return other > 0


class Whatever:
    def __eq__(self, other):
        return True


class Strict:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        if not isinstance(other, Strict):
            raise TypeError("only Strict")
        return self.v == other.v


def test_any_right():
    assert add(1, 1) == mock.ANY


def test_any_left():
    assert mock.ANY == add(1, 1)


def test_any_inside():
    assert table(1) == {"n": mock.ANY, "squares": [0]}


def test_approx():
    assert add(0.1, 0.2) == pytest.approx(0.3)


def test_approx_left():
    assert pytest.approx(0.3) == add(0.1, 0.2)


def test_approx_tolerance():
    assert add(1.0, 0.0) == pytest.approx(1.05, rel=0.1)


def test_matcher_left():
    assert Positive() == add(1, 1)


def test_matcher_right():
    assert add(1, 1) == Positive()


def test_matcher_against_literals():
    assert Whatever() == 2
    assert [1] == Whatever()
    assert Positive() == add(1, 1)


def test_strict():
    assert Strict(add(1, 1)) == Strict(2)


def test_nan():
    value = float("nan")
    assert math.isnan(add(value, 0))
    assert add(value, 0) != add(value, 0)


def test_numpy():
    assert np.float64(add(1, 1)) == 2.0
    assert (np.array([add(1, 1), 3]) == np.array([2, 3])).all()
    assert np.array([add(1, 1), 3]).tolist() == [2, 3]


def test_mock_calls():
    m = mock.Mock()
    m(add(1, 1), "x")
    assert m.call_args == mock.call(mock.ANY, "x")
    assert m.call_args == mock.call(2, "x")


def test_words_any():
    assert words("a b") == [mock.ANY, "b"]


class Sentinels(unittest.TestCase):
    def test_any(self):
        self.assertEqual(add(1, 1), mock.ANY)

    def test_any_first(self):
        self.assertEqual(mock.ANY, add(1, 1))

    def test_delta(self):
        self.assertAlmostEqual(add(1.0, 0.0), 1.4, delta=1.0)

    def test_places_negative(self):
        self.assertAlmostEqual(add(100, 0), 120, places=-2)
"""


def _outcomes(tmp_path: Path, tests: dict[str, str], code: str) -> dict[str, str]:
    """Run pytest on ``tests`` with ``impl.py`` beside them: node id -> outcome."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in {**tests, "impl.py": code}.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "outcomes.jsonl"
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import json

        def pytest_runtest_logreport(report):
            with open({str(out)!r}, "a") as f:
                f.write(json.dumps([report.nodeid, report.when, report.outcome]) + "\\n")
        """)
    )
    out.unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    result: dict[str, str] = {}
    for line in out.read_text().splitlines():
        nodeid, when, outcome = json.loads(line)
        nodeid = nodeid.rpartition("/")[2] if "/" in nodeid.split("::")[0] else nodeid
        if outcome != "passed":
            result[nodeid] = outcome
        elif when == "call":
            result.setdefault(nodeid, "passed")
    return result


def _twins_run(
    tmp_path: Path, source: str, code: str, name: str = "test_suite.py"
) -> tuple[TwinPlan, dict[str, str]]:
    plan = plan_twins({name: source}, limit=100)
    return plan, _outcomes(tmp_path, plan.sources or {name: source}, code)


def _split(plan: TwinPlan, outcomes: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    twins = {n: o for n, o in outcomes.items() if plan.twin_of(n)}
    real = {n: o for n, o in outcomes.items() if not plan.twin_of(n)}
    return twins, real


@pytest.mark.parametrize(
    ("source", "count"),
    [(PYTEST_CLASSES, 6), (UNITTEST_CLASSES, 9), (LEFT, 3), (UNKNOWN, 3)],
)
def test_every_twin_fails_honestly_and_passes_always_equal_results(
    tmp_path: Path, source: str, count: int
) -> None:
    plan, honest = _twins_run(tmp_path / "honest", source, HONEST)
    assert len(plan.twins) == count
    twins, real = _split(plan, honest)
    assert real and set(real.values()) == {"passed"}, real
    assert twins and set(twins.values()) == {"failed"}, twins
    # every instance of every original has its twin (same class, same parameters)
    assert all(_twin_id(plan, n) in twins for n in real)
    for i, forged in enumerate((ALWAYS_EQUAL, TYPED_EQUAL)):
        got = _outcomes(tmp_path / f"f{i}", plan.sources, forged)
        # every test the forgery passes has a twin that passes too: the forgery is caught
        forged_passes = [n for n, o in got.items() if o == "passed" and not plan.twin_of(n)]
        assert len(forged_passes) >= count // 2
        assert all(got[_twin_id(plan, n)] == "passed" for n in forged_passes), got


def _twin_id(plan: TwinPlan, nodeid: str) -> str:
    file, cls, name, params = node_parts(nodeid)
    tw = next(t for t in plan.twins if (t.file, t.cls, t.original) == (file, cls, name))
    return "::".join(p for p in (file, cls, tw.name) if p) + (f"[{params}]" if params else "")


def test_method_twins_carry_their_class(tmp_path: Path) -> None:
    plan = plan_twins({"test_suite.py": PYTEST_CLASSES + UNITTEST_CLASSES}, limit=100)
    by_original = {(t.cls, t.original) for t in plan.twins}
    assert ("TestAdd", "test_params") in by_original
    assert ("WordsTest", "test_expected_first") in by_original
    assert ("SuperTest", "test_private") in by_original
    # a class that another class extends would hand its twins down: none
    assert not any(t.cls == "Base" for t in plan.twins)
    text = plan.sources["test_suite.py"]
    tw = next(t for t in plan.twins if t.original == "test_expected_first")
    assert f"\nWordsTest.{tw.name} = {tw.name}\ndel {tw.name}\n" in text


def test_expected_side_is_changed_inline(tmp_path: Path) -> None:
    plan = plan_twins({"test_suite.py": LEFT}, limit=100)
    text = plan.sources["test_suite.py"][len(LEFT) :]
    tw = next(t for t in plan.twins if t.original == "test_literal")
    body = text[text.index(f"def {tw.name}") :].splitlines()[1]
    assert body.strip().startswith("assert ") and body.strip().endswith("== add(2, 3)")
    assert body.strip() != "assert 5 == add(2, 3)"
    # the helper is written only when a twin needs it: a parameter
    assert len([line for line in text.splitlines() if line.startswith("def _")]) == 1
    assert "(" not in body.split("==")[0]  # the literal's twin does not call it


def test_honest_sentinels_never_pass_a_twin(tmp_path: Path) -> None:
    for i in range(4):  # the plan is random: several draws
        plan, got = _twins_run(tmp_path / str(i), SENTINELS, HONEST)
        twins, real = _split(plan, got)
        assert set(real.values()) == {"passed"}, real
        assert len(plan.twins) == 18
        assert "passed" not in twins.values(), {n: o for n, o in twins.items() if o == "passed"}


def test_classes_that_could_hand_a_twin_on_get_none() -> None:
    base = """
import unittest
from unittest import mock


class Shared(unittest.TestCase):
    def test_a(self):
        self.assertEqual(1, 1)


@mock.patch("os.getcwd")
class Patched(unittest.TestCase):
    def test_b(self, getcwd):
        self.assertEqual(getcwd.called, False)


class Meta(unittest.TestCase, metaclass=type):
    def test_c(self):
        self.assertEqual(1, 1)


class TestInit:
    def __init__(self):
        pass

    def test_d(self):
        assert 1 == 1


class Rebound(unittest.TestCase):
    def test_e(self):
        self.assertEqual(1, 1)


Rebound = None
"""
    other = "from test_base import Shared\n\n\nclass TestMore(Shared):\n    pass\n"
    plan = plan_twins({"test_base.py": base, "test_other.py": other}, limit=100)
    assert plan.twins == []


def test_plans_of_one_suite_share_its_analysis_and_nothing_else() -> None:
    """A job plans twins for the same suite once per attempt and mode: the suite's analysis
    is made once, yet each plan is new (its own random picks and names) and none changes
    what the next one starts from (the originals, the suite's taken names)."""
    files = {"test_a.py": LEFT, "test_b.py": LEFT.replace("def test_", "def test_b_")}
    _analyse.cache_clear()
    plans = [plan_twins(dict(files), limit=2) for _ in range(12)]
    assert _analyse.cache_info().misses == 1 and _analyse.cache_info().hits == 11
    for plan in plans:
        assert len(plan.twins) == 2
        for path, text in plan.sources.items():
            assert text.startswith(files[path])  # the originals are untouched
            ast.parse(text)
            added = text[len(files[path]) :]
            assert all(f"def {tw.name}(" in added for tw in plan.twins if tw.file == path)
    assert len({tw.name for plan in plans for tw in plan.twins}) > 4  # picks and names vary
    fresh = plan_twins(dict(files), limit=2)
    assert fresh.twins and all(tw.name not in files["test_a.py"] for tw in fresh.twins)


def test_suites_that_generate_tests_by_hook_get_none() -> None:
    """``pytest_generate_tests`` may parametrize by the test's name: a twin would then have
    other instances than its original (an honest run would look like a removed twin)."""
    hook = "def pytest_generate_tests(metafunc):\n    pass\n"
    assert plan_twins({"test_a.py": LEFT}, conftests=[hook]).twins == []
    assert plan_twins({"test_a.py": LEFT + "\n\n" + hook}).twins == []
    assert plan_twins({"test_a.py": LEFT}, conftests=["import pytest\n"]).twins


def test_redefined_assertion_methods_are_left_alone() -> None:
    source = """
import unittest


class Lax(unittest.TestCase):
    def assertEqual(self, first, second, msg=None):
        pass

    def test_a(self):
        self.assertEqual(1, 2)
"""
    plan = plan_twins({"test_lax.py": source}, limit=100)
    (tw,) = plan.twins
    twin = plan.sources["test_lax.py"][len(source) :]
    assert "self.assertEqual(1, 2)\n    assert " in twin  # unchanged; a failing assert ends it


def test_node_parts_and_twin_of() -> None:
    assert node_parts("a/t.py::T::test_x[1-::-2]") == ("a/t.py", "T", "test_x", "1-::-2")
    assert node_parts("t.py::T::()::test_x") == ("t.py", "T", "test_x", "")
    assert node_parts("t.py::test_x") == ("t.py", "", "test_x", "")
    plan = TwinPlan(twins=[Twin("t.py", "test_x", "test_basic_case_0a1b", "T")])
    assert plan.twin_of("t.py::T::test_basic_case_0a1b[2]")
    assert plan.twin_of("u.py::Sub::test_basic_case_0a1b")  # handed down: still a twin
    assert plan.twin_of("t.py::T::test_x") is None


def _channel(records: dict[str, str]) -> Channel:
    ch = Channel(end_rc=1, collected=list(records))
    for nodeid, outcome in records.items():
        ch.tests[nodeid] = {"call": {"outcome": outcome}}
    return ch


def test_twin_evidence_is_class_qualified() -> None:
    plan = TwinPlan(twins=[Twin("t.py", "test_x", "test_tw", "T")])
    # an unrelated test of the same name in another class is not the original
    honest = _channel(
        {
            "t.py::T::test_x[1]": "passed",
            "t.py::U::test_x[9]": "passed",
            "t.py::T::test_tw[1]": "failed",
        }
    )
    assert _twin_evidence(honest, plan) == []
    gone = _channel({"t.py::T::test_x[1]": "passed", "t.py::T::test_x[2]": "passed",
                     "t.py::T::test_tw[1]": "failed"})  # fmt: skip
    assert "never ran" in _twin_evidence(gone, plan)[0]
    handed = _channel({"t.py::T::test_x": "passed", "t.py::T::test_tw": "failed",
                       "t.py::Sub::test_tw": "passed"})  # fmt: skip
    assert "reported passed" in _twin_evidence(handed, plan)[0]


def test_a_passing_twin_whose_original_failed_is_no_evidence() -> None:
    """Twins' changed values have the originals' shape, so a wrong answer may be exactly the
    changed value: that twin passes. Code that fails the original cannot forge a pass, and
    code that passes both answered the same question two ways: only that is evidence (here
    and in the fresh copy, instance by instance)."""
    plan = TwinPlan(twins=[Twin("t.py", "test_x", "test_tw")])
    wrong = _channel({"t.py::test_x[a]": "failed", "t.py::test_tw[a]": "passed"})
    assert _twin_evidence(wrong, plan) == []
    forged = _channel({"t.py::test_x[a]": "passed", "t.py::test_tw[a]": "passed"})
    assert "reported passed" in _twin_evidence(forged, plan)[0]
    mixed = _channel({"t.py::test_x[a]": "failed", "t.py::test_x[b]": "passed",
                      "t.py::test_tw[a]": "passed", "t.py::test_tw[b]": "passed"})  # fmt: skip
    assert "(1 of 2 instances)" in _twin_evidence(mixed, plan)[0]
    # a pass in the real run but a failure in the fresh copy, where the twin asked first:
    # state kept between calls, not a reader (which answers the same in both)
    state = _channel({"t.py::test_x[a]": "passed", "t.py::test_tw[a]": "passed"})
    state.fresh["t.py::test_tw[a]"] = {"call": {"outcome": "failed"}}
    assert _twin_evidence(state, plan) == []
    controls = Controls("c.py", "test_p", "test_f", "", "m")
    for original, evidence in (("failed", False), ("passed", True)):
        ch = _channel({"t.py::test_x[a]": original, "t.py::test_tw[a]": "failed"})
        ch.fresh_status, ch.fresh_ended = 0, True
        ch.fresh["t.py::test_tw[a]"] = {"call": {"outcome": "passed"}}
        found = _fresh_evidence(ch, controls, plan)
        assert bool(found) is evidence, found


COMPUTED = """import pytest
import counter

CASES = ["a", "b c"]


@pytest.mark.parametrize("text", counter.samples())
def test_computed(text):
    assert counter.count_words(text) >= 0


@pytest.mark.parametrize("text", CASES, ids=["one", "two"])
def test_named(text):
    assert counter.count_words(text) >= 0


@pytest.mark.parametrize("text", [pytest.param("a", id="x"), "b"])
def test_written(text):
    assert counter.count_words(text) >= 0
"""


def test_a_twin_of_computed_parameters_may_have_other_instances() -> None:
    """Parameters the decorator computes (here by the code under test) are computed again
    for the twin and may differ: an honest ``samples()`` that returns fewer values on its
    second call left the twin a strict subset of its original's instances, 'never ran:
    tests were removed'. Only a twin gone altogether counts then."""
    plan = plan_twins({"t.py": COMPUTED}, limit=100)
    fixed = {tw.original: tw.fixed for tw in plan.twins}
    assert fixed == {"test_computed": False, "test_named": True, "test_written": True}
    for tw in plan.twins:
        fewer = _channel({f"t.py::{tw.original}[a]": "passed", f"t.py::{tw.original}[b]": "passed",
                          f"t.py::{tw.name}[a]": "failed"})  # fmt: skip
        assert bool(_twin_evidence(fewer, TwinPlan(twins=[tw]))) is tw.fixed
        gone = _channel({f"t.py::{tw.original}[a]": "passed"})
        assert "never ran" in _twin_evidence(gone, TwinPlan(twins=[tw]))[0]


@pytest.mark.parametrize(
    "value",
    [0, -3, 10**20, 0.3, 2j, "Hello", b"abc", [], [1, "a"], (0.5,), {},
     {"k": [1, 2]}, {1, 2}, frozenset({"x"}), [[None]], [True]],
)  # fmt: skip
def test_alter_always_differs_and_is_a_literal(value: object) -> None:
    rng = random.Random(7)
    for _ in range(50):
        new = alter(value, rng)
        assert new is not NO and new != value
        if isinstance(value, str) and value.strip():
            assert new.lower() != value.lower()  # type: ignore[union-attr]
        node = value_node(new)
        assert literal_value(node) == new or isinstance(new, frozenset)


@pytest.mark.parametrize("value", [True, False, None, 1e308, -1e308, 1e-9, "", "  ", "a", b"x"])
def test_values_without_a_safe_alternative_are_not_altered(value: object) -> None:
    # any other boolean (or a small number for None) is a plausible wrong answer; so is any
    # other one-letter text; an exponent form or blank text has no same-shaped far value
    assert alter(value, random.Random(1)) is NO


def _shape(v: object) -> object:
    """What a value filter can see without knowing the right answer: type, sign, digits,
    zeros, decimals; length and the class of each character."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int | float):
        text = repr(abs(v))
        return (type(v), v < 0, len(text), text.find("."), len(text) - len(text.rstrip("0")),
                len(text) - len(text.lstrip("0")))  # fmt: skip
    if isinstance(v, str | bytes):
        t = v.decode("latin-1") if isinstance(v, bytes) else v
        return (type(v), "".join("a" if c.islower() else "A" if c.isupper() else
                                 "9" if c.isdigit() else c for c in t))  # fmt: skip
    if isinstance(v, list | tuple):
        return (type(v), [_shape(x) for x in v])
    if isinstance(v, dict):
        return (type(v), {k: _shape(x) for k, x in v.items()})
    return type(v)


@pytest.mark.parametrize(
    "value",
    [3, 7, 42, 100, -5, 123456789, 0.5, 3.14, -2.0, 0.025, 1234.5678, "ok", "hello world",
     "Total: 42 items", "a1b2", b"OK\n", [3, 4], ("x1", 2.5), {"n": 10, "s": "abc"}],
)  # fmt: skip
def test_an_altered_value_has_the_shape_of_the_original(value: object) -> None:
    """A reader that returns the expected value only where it "looks plausible" (a small
    number, short text without spaces) answered every real test and failed every twin while
    twins' values were 10^6-10^9 away. Changed values now look like the originals: same type,
    sign, digit count, zeros and decimals, same length and character classes; never a value
    of ``avoid`` (the suite's own literals). (Zero becomes another one-digit number.)"""
    rng = random.Random(11)
    avoid = frozenset({0, 1, 2, 9, 10, "no", "yes"})
    for _ in range(100):
        new = alter(value, rng, avoid)
        assert new is not NO and new != value
        assert _shape(new) == _shape(value), (value, new)
        if isinstance(new, int | float | str | bytes):
            assert new not in avoid, (value, new)


@pytest.mark.parametrize("value", [0, 1, -1, 5, 0.5, "ab", "3 items", b"x", [1, 2], {"a": 0}])
def test_an_altered_value_is_far_from_every_near_miss(value: object) -> None:
    """A wrong answer is often near the right one: off by one, a letter or digit changed, an
    element off. An altered expectation must never equal such an answer, or a wrong honest
    result would pass a twin and be called tampering."""
    near: list[object] = []
    if type(value) in (int, float):
        near = [value + d for d in (-10, -2, -1, 1, 2, 10)] + [-value, value * 2]  # type: ignore[operator]
    elif isinstance(value, str | bytes):
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
        near = [value[:i] + type(value)(c, "ascii") if isinstance(value, bytes) else value[:i] + c
                for i in range(len(value) + 1) for c in alphabet]  # fmt: skip
    elif isinstance(value, list):
        near = [[*value[:i], value[i] + 1, *value[i + 1 :]] for i in range(len(value))]
    elif isinstance(value, dict):
        near = [{k: v + 1 for k, v in value.items()}]
    rng = random.Random(3)
    for _ in range(200):
        new = alter(value, rng)
        assert new not in near, (value, new)
