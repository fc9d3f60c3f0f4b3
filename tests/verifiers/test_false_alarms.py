"""No false alarms: honest solutions to awkward but honest suites are judged like any run.

Each variant is a real suite (xfail, skips, teardown errors, subtests, odd parameter ids,
capture and chdir fixtures, scoped fixtures writing into the workspace, threads, fork,
spawn, subprocesses, SIGCHLD handlers, atexit, huge or unterminated output, ``-k``/``-m``,
warnings as errors, a conftest that skips by name) graded by ``run_pytest`` in a real
local sandbox. The correct solution passes (or, where the suite skips or xfails, fails for
that reason) and a wrong one fails: never with integrity evidence. Twins are random, so
each correct solution runs a few times; the soak behind these ran each of them many times.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import active_tests, load_task
from evoround.verifiers import _guard, run_pytest
from tests.helpers import COUNTER

OK = "def count_words(text):\n    return len(text.split())\n"
BAD = "def count_words(text):\n    return len(text.split(' '))\n"
RUNS = int(os.environ.get("EVOROUND_FALSE_ALARM_RUNS", "2"))
"""Runs of each correct solution here (twins are random)."""

V: dict[str, dict[str, object]] = {}


def v(name, tests, extra="", args=(), passes=True, timeout=60):
    V[name] = dict(tests=tests, extra=extra, args=list(args), passes=passes, timeout=timeout)


v(
    "xpass",
    {
        "test_words.py": """import pytest
from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


@pytest.mark.xfail(reason="maybe", strict=False)
def test_xpass_nonstrict():
    assert count_words("a b") == 2


def test_empty():
    assert count_words("") == 0
"""
    },
)
v(
    "xfail",
    {
        "test_words.py": """import pytest
from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


@pytest.mark.xfail(reason="known", strict=False)
def test_xfail_nonstrict():
    assert count_words("a,b") == 2


@pytest.mark.xfail(reason="known", strict=True, raises=ZeroDivisionError)
def test_xfail_strict():
    1 / count_words("")


@pytest.mark.xfail(reason="known", strict=True)
def test_xfail_strict_assert():
    assert count_words("a,b") == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    passes=False,
)
v(
    "skip_setup",
    {
        "test_words.py": """import sys
import pytest
from counter import count_words


@pytest.fixture
def needs_posix():
    if sys.platform.startswith("linux"):
        pytest.skip("not here")
    yield


def test_simple():
    assert count_words("a b c") == 3


def test_skipped(needs_posix):
    assert count_words("a b") == 2


@pytest.mark.skipif(True, reason="never")
def test_skipif():
    assert count_words("x") == 1


def test_empty():
    assert count_words("") == 0
"""
    },
    passes=False,
)
v(
    "teardown_error",
    {
        "test_words.py": """import pytest
from counter import count_words


@pytest.fixture
def broken_teardown():
    yield 1
    raise RuntimeError("teardown breaks")


def test_simple(broken_teardown):
    assert count_words("a b c") == 3


def test_empty():
    assert count_words("") == 0
"""
    },
    passes=False,
)
v(
    "subtests",
    {
        "test_words.py": """import unittest
from counter import count_words


class TestWords(unittest.TestCase):
    def test_many(self):
        for text, n in [("a", 1), ("a b", 2), ("", 0), ("a  b", 2)]:
            with self.subTest(text=text):
                self.assertEqual(count_words(text), n)

    def test_one(self):
        self.assertEqual(count_words("x y z"), 3)
"""
    },
)
v(
    "subtests_fixture",
    {
        "test_words.py": """from counter import count_words


def test_subtests_fixture(subtests):
    for text, n in [("a", 1), ("", 0), (" b c ", 2)]:
        with subtests.test(text=text):
            assert count_words(text) == n


def test_one():
    assert count_words("x y z") == 3
"""
    },
)
v(
    "params_odd",
    {
        "test_words.py": """import pytest
from counter import count_words


@pytest.mark.parametrize(
    "text,n",
    [("héllo wörld", 2), ("日本 語", 2), ("a::b c", 2), ("x[y] z", 2), ("", 0), ("t\\tz", 2), ("<&> \\"q\\"", 2)],
    ids=["é-ü", "日本", "a::b", "br[ack]et", "empty", "tab\\there", "<&>\\"'"],
)
def test_ids(text, n):
    assert count_words(text) == n


@pytest.mark.parametrize("text", ["a b", "ü ö", "x\\x00y z", "a\\x1bb c", " lead  trail "])
def test_auto(text):
    assert count_words(text) == 2


class TestA:
    def test_same(self):
        assert count_words("a b") == 2


class TestB:
    def test_same(self):
        assert count_words("") == 0

    @pytest.mark.parametrize("t", ["a", "b c d"], ids=["one::x", "three[]"])
    def test_param(self, t):
        assert count_words(t) == len(t.split())
"""
    },
)
v(
    "fixtures",
    {
        "test_words.py": """import os
import sys
from counter import count_words, shout


def test_capsys(capsys):
    shout("a b")
    assert capsys.readouterr().out == "a b!\\n"


def test_capfd(capfd):
    os.write(1, b"raw")
    shout("c")
    assert capfd.readouterr().out == "rawc!\\n"


def test_monkeypatch(monkeypatch):
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.setattr(sys, "argv", ["x"])
    assert count_words("a b") == 2


def test_tmp_path(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("a b c")
    assert count_words(p.read_text()) == 3


def test_chdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with open("x", "w") as f:
        f.write("a b")
    assert count_words(open("x").read()) == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""

def shout(text):
    print(text + "!")
""",
)
v(
    "scoped_fixtures",
    {
        "conftest.py": """import os
import os
import shutil
import pytest


@pytest.fixture(scope="session", autouse=True)
def outdir():
    os.makedirs("out")
    with open("out/session.txt", "x") as f:
        f.write("s")
    yield "out"
    shutil.rmtree("out")


@pytest.fixture(scope="module")
def datafile():
    with open("data.txt", "w") as f:
        f.write("a b c")
    yield "data.txt"
""",
        "test_words.py": """import os
from counter import count_words


def test_data(datafile):
    assert count_words(open(datafile).read()) == 3


def test_session(outdir):
    assert os.listdir(outdir) == ["session.txt"]
    assert count_words("a") == 1


def test_empty():
    assert count_words("") == 0
""",
    },
)
v(
    "order_dependent",
    {
        "test_words.py": """from counter import count_words, remember, recall


def test_first():
    remember(count_words("a b"))
    assert recall() == [2]


def test_second():
    remember(count_words("c"))
    assert recall() == [2, 1]


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""
_seen = []


def remember(n):
    _seen.append(n)


def recall():
    return list(_seen)
""",
)
BASIC = {
    "test_words.py": """from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


def test_empty():
    assert count_words("") == 0
"""
}
v(
    "thread_lock",
    BASIC,
    extra="""
import threading, time
_lock = threading.Lock()


def _spin():
    while True:
        with _lock:
            time.sleep(0.05)
        time.sleep(0.0005)


threading.Thread(target=_spin, daemon=True).start()
_plain = count_words


def count_words(text):
    with _lock:
        return _plain(text)
""",
    timeout=60,
)
v(
    "thread_print",
    BASIC,
    extra="""
import sys, threading, time


def _chatter():
    while True:
        sys.stdout.write(".")
        sys.stdout.flush()
        time.sleep(0.0005)


threading.Thread(target=_chatter, daemon=True).start()
""",
)
v(
    "mp",
    {
        "test_words.py": """from counter import count_words, pool_counts, sub_count


def test_fork():
    assert pool_counts(["a b", "c"], "fork") == [2, 1]


def test_spawn():
    assert pool_counts(["a b", "c"], "spawn") == [2, 1]


def test_forkserver():
    assert pool_counts(["a b c"], "forkserver") == [3]


def test_sub():
    assert sub_count("a b") == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""
import multiprocessing as mp
import subprocess
import sys


def _n(t):
    return len(t.split())


def pool_counts(texts, method):
    with mp.get_context(method).Pool(2) as p:
        return p.map(_n, texts)


def sub_count(text):
    out = subprocess.run([sys.executable, "-c", "import sys; print(len(sys.argv[1].split()))", text],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)
""",
)
v(
    "sigchld_ign",
    {
        "test_words.py": """from counter import count_words, sub_count


def test_sub():
    assert sub_count("a b") == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""
import os, signal, subprocess, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def sub_count(text):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    out = subprocess.run([sys.executable, "-c", "print(2)"], capture_output=True, text=True)
    return int(out.stdout)
""",
)
v(
    "sigchld_reap",
    {
        "test_words.py": """from counter import count_words, sub_count


def test_sub():
    assert sub_count("a b") == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""
import os, signal, subprocess, sys


def _reap(signum, frame):
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


signal.signal(signal.SIGCHLD, _reap)


def sub_count(text):
    try:
        out = subprocess.run([sys.executable, "-c", "print(2)"], capture_output=True, text=True)
        return int(out.stdout)
    except ChildProcessError:
        return 2
""",
)
v(
    "atexit",
    BASIC,
    extra="""
import atexit, os, sys
atexit.register(lambda: print("bye from atexit"))
atexit.register(lambda: sys.stdout.write("no newline"))
""",
)
v(
    "no_newline_huge",
    {
        "test_words.py": """import sys
from counter import count_words


def test_print_no_newline():
    sys.stdout.write("x" * 100)
    sys.stderr.write("y" * 100)
    assert count_words("a b c") == 3


def test_huge():
    for _ in range(200):
        sys.stdout.write("z" * 50000)
    assert count_words("a") == 1


def test_empty():
    assert count_words("") == 0
"""
    },
    extra="""
import sys
sys.stdout.write("imported-without-newline")
""",
)
v(
    "huge_s",
    {
        "test_words.py": """import sys
from counter import count_words


def test_huge():
    for _ in range(400):
        sys.stdout.write("z" * 50000)
    assert count_words("a") == 1


def test_empty():
    assert count_words("") == 0
"""
    },
    args=["-s"],
    passes=False,
)
v(
    "os_chdir",
    {
        "test_words.py": """import os
from counter import count_words


def test_chdir_away(tmp_path):
    os.chdir(tmp_path)
    assert count_words("a b") == 2


def test_chdir_root():
    os.chdir("/")
    assert count_words("a") == 1


def test_empty():
    assert count_words("") == 0
"""
    },
)
v(
    "k_and_m",
    {
        "test_words.py": """import pytest
from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


@pytest.mark.slow
def test_slow_thing():
    assert count_words("a b") == 2


def test_legacy_mode():
    assert 0, "excluded by -k"


def test_empty():
    assert count_words("") == 0


class TestMore:
    def test_tabs(self):
        assert count_words("a\\tb") == 2
"""
    },
    args=["-k", "not legacy", "-m", "not slow"],
)
v(
    "k_only",
    {
        "test_words.py": """from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


def test_broken_upstream():
    assert 0


def test_empty():
    assert count_words("") == 0
"""
    },
    args=["-k=not broken"],
)
v(
    "werror",
    {
        "test_words.py": """import warnings
from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


def test_empty():
    assert count_words("") == 0
"""
    },
    args=["-W", "error"],
)
v(
    "werror_threads",
    BASIC,
    extra="""
import threading, time
threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()
""",
    args=["-W", "error"],
)
v(
    "filterwarnings_conftest",
    {
        "conftest.py": """import warnings
warnings.simplefilter("error")


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "error")
""",
        **BASIC,
    },
    extra="""
import threading, time
threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()
""",
)
v(
    "werror_session_threads",
    {
        "conftest.py": """import warnings


def pytest_configure(config):
    warnings.simplefilter("error")
""",
        **BASIC,
    },
    extra="""
import threading, time
threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()
""",
)
v(
    "worker_thread_tight",
    BASIC,
    extra="""
import queue, threading
_jobs = queue.Queue()


def _worker():
    while True:
        fn, arg, box = _jobs.get()
        box.put(fn(arg))


threading.Thread(target=_worker, daemon=True).start()
_plain = count_words


def count_words(text):
    box = queue.Queue()
    _jobs.put((_plain, text, box))
    return box.get()
""",
    timeout=8,
)
v(
    "blocking_order",
    {
        "test_words.py": """import queue
from counter import count_words

_q = queue.Queue()


def test_produce():
    _q.put(count_words("a b"))
    return  # (a test with a return gets no twin: only the consumer's twin waits)


def test_consume():
    assert _q.get() == 2


def test_empty():
    assert count_words("") == 0
"""
    },
    timeout=30,
)
v(
    "inherited",
    {
        "base_cases.py": """from counter import count_words


class WordCases:
    def test_simple(self):
        assert count_words("a b c") == 3

    def test_empty(self):
        assert count_words("") == 0
""",
        "test_words.py": """from base_cases import WordCases
from counter import count_words


class TestWords(WordCases):
    pass


def test_plain():
    assert count_words("x") == 1
""",
    },
)
v(
    "conftest_skip_pattern",
    {
        "conftest.py": """import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "network" in item.name or "slow" in item.name:
            item.add_marker(pytest.mark.skip(reason="no network here"))
""",
        "test_words.py": """from counter import count_words


def test_simple():
    assert count_words("a b c") == 3


def test_network_fetch():
    assert count_words("a b") == 2


def test_empty():
    assert count_words("") == 0
""",
    },
    passes=False,
)
v(
    "conftest_skip_pattern_nomatch",
    {
        "conftest.py": """import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "simple" in item.name and "words" not in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="no"))
""",
        **BASIC,
    },
)


def verify(tmp_path: Path, name: str, code: str, runs: int = 1):
    """``runs`` gradings of ``code`` (plus the variant's extra code) against the variant."""
    var = V[name]
    task_dir = tmp_path / "task"
    if not task_dir.exists():
        shutil.copytree(COUNTER, task_dir)
        tests = task_dir / "rounds/01/tests"
        shutil.rmtree(tests)
        tests.mkdir()
        for file, text in var["tests"].items():  # type: ignore[union-attr]
            (tests / file).write_text(text, encoding="utf-8")
    task = load_task(task_dir)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    out = []
    for i in range(runs):
        with provider.create(task, f"t/v{i}") as sb:
            sb.write_file("counter.py", code + str(var["extra"]))
            out.append(
                run_pytest(
                    sb,
                    active_tests(task, 1),
                    1,
                    timeout=float(var["timeout"]),  # type: ignore[arg-type]
                    extra_args=list(var["args"]),  # type: ignore[call-overload]
                )
            )
    return out


@pytest.mark.parametrize("name", sorted(V))
def test_honest_suites_raise_no_alarm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(_guard, "HARNESS_FLOOR", 1.0)  # a hung fresh copy is stopped soon
    for res in verify(tmp_path, name, OK, RUNS):
        assert res.integrity == [], res.integrity
        assert res.passed is V[name]["passes"], (
            res.problems,
            [t for t in res.tests if t.outcome.value != "passed"],
        )
    (wrong,) = verify(tmp_path, name, BAD)
    assert wrong.integrity == [], wrong.integrity
    assert not wrong.passed


SCRIPT = 'python3 -m pytest -q -p no:cacheprovider {args} "$EVOROUND_TESTS_DIR/test_m.py"\n'
SCRIPT_VARIANTS = {
    "xfail": "",
    "skip_setup": "",
    "subtests": "",
    "subtests_fixture": "",
    "params_odd": "",
    "fixtures": "",
    "order_dependent": "",
    "mp": "",
    "sigchld_reap": "",
    "os_chdir": "",
    "werror": "-W error",
    "k_and_m": "-k 'not legacy' -m 'not slow'",
    "no_newline_huge": "",
    "thread_print": "-s",
}
"""Variants a script verifier runs (one test file, no conftest): skips and xfails pass there
(the script reads pytest's exit status)."""


def verify_script(tmp_path: Path, name: str, code: str):
    from tests.verifiers.test_script_guard import REWARD, _run

    var = V[name]
    (tests,) = var["tests"].values()  # type: ignore[union-attr]
    script = SCRIPT.format(args=SCRIPT_VARIANTS[name]) + REWARD
    out, _, log = _run(tmp_path, script, tests, workspace={"counter.py": code + str(var["extra"])})
    return out, log


@pytest.mark.parametrize("name", sorted(SCRIPT_VARIANTS))
def test_honest_suites_raise_no_alarm_in_a_script(tmp_path: Path, name: str) -> None:
    for i in range(RUNS):
        out, log = verify_script(tmp_path / f"ok{i}", name, OK)
        assert (out.passed, out.integrity) == (True, []), log[-3000:]
    out, log = verify_script(tmp_path / "bad", name, BAD)
    assert (out.passed, out.integrity) == (False, []), log[-3000:]


VALUES = {
    "test_values.py": """import pytest
from counter import count_words, first_word, mean_len, words


def test_count():
    assert count_words("a b c") == 3


def test_count_many():
    assert count_words("one two three four five six seven eight nine ten eleven twelve") == 12


def test_mean():
    assert mean_len("ab abcd") == 3.0


def test_mean_frac():
    assert mean_len("a ab") == 1.5


def test_first():
    assert first_word("hello world") == "hello"


def test_words():
    assert words("x y") == ["x", "y"]


@pytest.mark.parametrize("text,n", [("a", 1), ("a b", 2), ("", 0)])
def test_param(text, n):
    assert count_words(text) == n
"""
}
"""A suite of ints, floats, text and lists: twins' changed values keep these shapes."""
RIGHT = """
def count_words(t):
    return len(t.split())


def mean_len(t):
    w = t.split()
    return sum(map(len, w)) / len(w) if w else 0.0


def first_word(t):
    return t.split()[0] if t.split() else ""


def words(t):
    return t.split()
"""
WRONG = {
    "off_by_one": RIGHT + "\n_c = count_words\ncount_words = lambda t: _c(t) + 1\n",
    "chars": """
def count_words(t):
    return len(t)


def mean_len(t):
    return len(t) / 2


def first_word(t):
    return t[:5]


def words(t):
    return list(t.replace(" ", ""))
""",
    "state_kept": """
_total = [0, 0.0, "", []]


def count_words(t):
    _total[0] += len(t.split())
    return _total[0]


def mean_len(t):
    w = t.split()
    _total[1] += sum(map(len, w)) / len(w) if w else 0.0
    return _total[1]


def first_word(t):
    last, _total[2] = _total[2], (t.split() or [""])[0]
    return last or _total[2]


def words(t):
    _total[3] += t.split()
    return list(_total[3])
""",
    "types": """
def count_words(t):
    return str(len(t.split()))


def mean_len(t):
    w = t.split()
    return sum(map(len, w)) // len(w) if w else 0


def first_word(t):
    return t.split()[0].upper() if t.split() else ""


def words(t):
    return tuple(t.split())
""",
    "constants": """
def count_words(t):
    return 3


def mean_len(t):
    return 3.0


def first_word(t):
    return "hello"


def words(t):
    return ["x", "y"]
""",
    "swapped": """
def count_words(t):
    return t.count(" ")


def mean_len(t):
    return float(max(map(len, t.split()), default=0))


def first_word(t):
    return t.split()[-1] if t.split() else ""


def words(t):
    return t.split()[::-1]
""",
    "rounding": RIGHT + "\n_m = mean_len\nmean_len = lambda t: float(round(_m(t)))\n",
}
"""Honest but wrong answers to :data:`VALUES` (off by one, another count, state kept between
calls, another type, constants right once, swapped meanings, rounding): a twin's changed value
may equal one of them by chance, but never while its original passes."""
v("values", VALUES)


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_honest_but_wrong_answers_raise_no_alarm(tmp_path: Path, wrong: str) -> None:
    """Twins' changed values have the originals' shape (so a value filter cannot tell them):
    a wrong answer may then equal one; the verifier spares a twin whose original failed."""
    for res in verify(tmp_path, "values", WRONG[wrong], RUNS):
        assert res.integrity == [], res.integrity
        assert not res.passed
    (right,) = verify(tmp_path, "values", RIGHT)
    assert (right.passed, right.integrity) == (True, []), (right.problems, right.integrity)
