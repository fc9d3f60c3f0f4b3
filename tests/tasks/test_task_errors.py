"""Malformed task folders: each is one TaskFormatError naming the file and the field.

Table-driven: every row breaks one thing in a copy of the counter fixture and says
which file and which words the one-line error must hold. No row may be accepted, and
none may escape as another exception (a traceback in the CLI).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evoround.tasks import TaskFormatError, lint_task, load_task, load_tasks
from tests.helpers import copy_counter


def _toml(old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        p = root / "task.toml"
        text = p.read_text()
        assert old in text, old
        p.write_text(text.replace(old, new, count))

    return edit


def _append(extra: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        p = root / "task.toml"
        p.write_text(p.read_text() + extra)

    return edit


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / rel).write_bytes(data)

    return edit


def _remove(rel: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        p = root / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()

    return edit


def _rename(rel: str, new: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / rel).rename(root / new)

    return edit


def _dir_for(rel: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / rel).unlink()
        (root / rel).mkdir()

    return edit


def _write_at(rel: str, data: bytes) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)

    return edit


def _empty_dir(rel: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        shutil.rmtree(root / rel)
        (root / rel).mkdir()

    return edit


def _no_rounds_tables(root: Path) -> None:
    p = root / "task.toml"
    p.write_text(p.read_text().split("[[rounds]]")[0])


# (id, edit, file the error names, words the one line holds)
CASES: list[tuple[str, Callable[[Path], None], str, list[str]]] = [
    ("typo-in-task", _toml("activity =", "activty ="), "task.toml",
     ["task:", "unknown key `activty`", "did you mean `activity`?"]),
    ("typo-top-table", _toml("[environment]", "[enviroment]"), "task.toml",
     ["unknown key `enviroment`", "did you mean `environment`?"]),
    ("typo-in-round", _toml('title = "Count lines"', 'titel = "Count lines"'), "task.toml",
     ["rounds[2]", "unknown key `titel`", "did you mean `title`?"]),
    ("typo-in-environment", _toml("agent_timeout_sec", "agent_timeout"), "task.toml",
     ["environment", "unknown key `agent_timeout`", "agent_timeout_sec"]),
    ("unknown-key-no-match", _toml("[environment]", "[environment]\nflux_capacitor = 1"),
     "task.toml", ["unknown key `flux_capacitor`", "known keys:"]),
    ("typo-in-check", _append('\n[[checks]]\nid = "x"\ncatgory = "skill"\nkind = "rule"\n'),
     "task.toml", ["checks[1]", "unknown key `catgory`", "did you mean `category`?"]),
    ("typo-in-verifier", _append('\n[verifier]\nknd = "pytest"\n'), "task.toml",
     ["verifier", "unknown key `knd`", "did you mean `kind`?"]),
    ("cpus-string", _toml("[environment]", '[environment]\ncpus = "2"'), "task.toml",
     ["environment.cpus", "'2'"]),
    ("network-string", _toml("[environment]", '[environment]\nnetwork = "no"'), "task.toml",
     ["environment.network", "boolean", "'no'"]),
    ("memory-float", _toml("[environment]", "[environment]\nmemory_mb = 2048.5"), "task.toml",
     ["environment.memory_mb", "integer", "2048.5"]),
    ("memory-bool", _toml("[environment]", "[environment]\nmemory_mb = true"), "task.toml",
     ["environment.memory_mb", "True"]),
    ("timeout-negative", _toml("agent_timeout_sec = 60", "agent_timeout_sec = -1"),
     "task.toml", ["environment.agent_timeout_sec", "greater than 0", "-1"]),
    ("activity-enum-typo", _toml('"spec_evolution"', '"spec_evolutoin"'), "task.toml",
     ["task.activity", "'spec_evolutoin'", "did you mean `spec_evolution`?"]),
    ("change-type-enum", _toml('["extension"]', '["extention"]'), "task.toml",
     ["rounds[1].change_types[1]", "'extention'", "did you mean `extension`?"]),
    ("change-types-string", _toml('["extension"]', '"extension"'), "task.toml",
     ["rounds[1].change_types", "list", "'extension'"]),
    ("verifier-kind-typo", _append('\n[verifier]\nkind = "pytst"\n'), "task.toml",
     ["verifier.kind", "'pytst'", "did you mean `pytest`?"]),
    ("name-pattern", _toml('name = "counter"', 'name = "Counter Task"'), "task.toml",
     ["task.name", "'Counter Task'"]),
    ("schema-version", _toml("schema_version = 1", "schema_version = 2"), "task.toml",
     ["schema_version", "2"]),
    ("schema-version-string", _toml("schema_version = 1", 'schema_version = "1"'), "task.toml",
     ["schema_version", "'1'"]),
    ("workdir-relative", _toml("[environment]", '[environment]\nworkdir = "src"'), "task.toml",
     ["environment.workdir", "absolute"]),
    ("tags-ints", _toml('style = "contractual"', 'style = "contractual"\ntags = [1, 2]'),
     "task.toml", ["task.tags[1]", "string", "1"]),
    ("task-not-table", _toml("[task]", "task = 3\n[tasx]"), "task.toml", ["unknown key `tasx`"]),
    ("rounds-count", _append('\n[[rounds]]\ntitle = "extra"\n'), "task.toml",
     ["rounds", "5 [[rounds]] entries but 4 round directories"]),
    ("retires-unknown", _toml('retires = ["test_lines.py"]', 'retires = ["test_line.py"]'),
     "task.toml", ["rounds[4].retires[1]", "test_line.py"]),
    ("toml-syntax", _toml('name = "counter"', 'name = "counter'), "task.toml", ["invalid TOML"]),
    ("toml-not-utf8", _write("task.toml", b'[task]\nname = "caf\xe9"\n'), "task.toml",
     ["not UTF-8", "0xe9", "line 2"]),
    ("toml-utf16", _write("task.toml", "[task]\n".encode("utf-16")), "task.toml", ["not UTF-8"]),
    ("toml-is-dir", _dir_for("task.toml"), "task.toml", ["directory"]),
    ("instruction-not-utf8", _write("rounds/02/instruction.md", b"Count lines \xff\xfe\n"),
     "rounds/02/instruction.md", ["not UTF-8", "0xff"]),
    ("instruction-empty", _write("rounds/03/instruction.md", b"  \n"),
     "rounds/03/instruction.md", ["empty"]),
    ("instruction-missing", _remove("rounds/01/instruction.md"), "rounds/01/instruction.md",
     ["missing"]),
    ("instruction-is-dir", _dir_for("rounds/01/instruction.md"), "rounds/01/instruction.md",
     ["missing"]),
    ("solution-missing", _remove("rounds/02/solution"), "rounds/02/solution",
     ["reference solution"]),
    ("round-dir-name", _rename("rounds/04", "rounds/4"), "rounds/4", ["01, 02"]),
    ("round-gap", _rename("rounds/04", "rounds/05"), "rounds/05", ["gap", "expected 04"]),
    ("no-rounds", _remove("rounds"), "rounds", ["missing rounds/"]),
    ("round1-no-tests", _remove("rounds/01/tests"), "rounds/01/tests", ["at least one test"]),
    # Task-author mistakes that used to load and be charged to the agent (issue 30).
    ("basename-clash", _write_at("rounds/02/tests/sub/test_words.py", b"def test_x():\n    pass\n"),
     "rounds/02/tests", ["test_words.py", "sub/test_words.py", "import file mismatch"]),
    ("module-skip", _write("rounds/02/tests/test_lines.py",
                           b"import pytest\npytest.skip('wip', allow_module_level=True)\n"),
     "rounds/02/tests/test_lines.py", ["skips itself at module level", "line 2"]),
    ("pytestmark-skip", _write("rounds/02/tests/test_lines.py",
                               b"import pytest\npytestmark = pytest.mark.skip\n"),
     "rounds/02/tests/test_lines.py", ["skips itself at module level"]),
    ("test-syntax-error", _write("rounds/03/tests/test_chars.py", b"def test_x(:\n    pass\n"),
     "rounds/03/tests/test_chars.py", ["Python syntax error on line 1"]),
    ("test-not-utf8", _write("rounds/03/tests/test_chars.py", b"# caf\xe9\n"),
     "rounds/03/tests/test_chars.py", ["not UTF-8", "0xe9"]),
    ("tests-empty", _empty_dir("rounds/03/tests"), "rounds/03/tests", ["is empty"]),
    ("no-rounds-tables", _no_rounds_tables, "task.toml",
     ["rounds", "no [[rounds]] tables", "4 rounds"]),
    ("round-toml-stray", _write("rounds/04/round.toml", b'retires = ["test_lines.py"]\n'),
     "rounds/04/round.toml", ["never reads", "[[rounds]]"]),
    ("workdir-dotdot", _toml("[environment]", '[environment]\nworkdir = "/workspace/../etc"'),
     "task.toml", ["environment.workdir", ".."]),
    ("workdir-root", _toml("[environment]", '[environment]\nworkdir = "/"'), "task.toml",
     ["environment.workdir", "must not be /"]),
    ("workdir-root-slashes", _toml("[environment]", '[environment]\nworkdir = "//./"'),
     "task.toml", ["environment.workdir", "must not be /"]),
    ("workdir-system", _toml("[environment]", '[environment]\nworkdir = "/usr/bin"'),
     "task.toml", ["environment.workdir", "system folder"]),
    ("workdir-in-etc", _toml("[environment]", '[environment]\nworkdir = "/etc/app"'),
     "task.toml", ["environment.workdir", "system folder"]),
    ("solve-crlf", _write_at("rounds/02/solution/solve.sh", b"#!/bin/bash\r\nset -e\r\n"),
     "rounds/02/solution/solve.sh", ["CRLF", "line 1", "set: - : invalid option"]),
    ("round-100", _rename("rounds/04", "rounds/100"), "rounds/100", ["at most 99 rounds"]),
    ("instruction-over-limit", _write("rounds/01/instruction.md", b"x" * 1_000_013),
     "rounds/01/instruction.md", ["1,000,013 bytes", "1,000,000 bytes", "13 over"]),
    ("script-entry-missing", _toml("[environment]", '[verifier]\nkind = "script"\n\n[environment]'),
     "task.toml", ["verifier.script", "'test.sh'", "rounds 01..01"]),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "file", "words"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_malformed_task_is_one_precise_error(
    tmp_path: Path, edit: Callable[[Path], None], file: str, words: list[str]
) -> None:
    root = copy_counter(tmp_path)
    edit(root)
    with pytest.raises(TaskFormatError) as info:
        load_task(root)
    line = str(info.value)
    assert "\n" not in line, line
    assert info.value.file.endswith(file), (info.value.file, line)
    for w in words:
        assert w in line, (w, line)


def test_duplicate_task_names_name_both(tmp_path: Path) -> None:
    a = copy_counter(tmp_path / "a")
    shutil.copytree(a, tmp_path / "a" / "counter2")
    with pytest.raises(TaskFormatError) as info:
        load_tasks([tmp_path / "a"])
    assert "task.name" in str(info.value) and "duplicate" in str(info.value)


def test_paths_that_are_not_task_folders(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    with pytest.raises(TaskFormatError, match="not its task.toml"):
        load_tasks([root / "task.toml"])
    with pytest.raises(TaskFormatError, match="a file, not a directory"):
        load_tasks([root / "rounds" / "01" / "instruction.md"])
    with pytest.raises(TaskFormatError, match="no such task"):
        load_tasks([tmp_path / "nope"])


def test_lint_warns_about_test_files_pytest_never_collects(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    tests = root / "rounds" / "02" / "tests"
    (tests / "check_extra.py").write_text("def test_x():\n    assert True\n")
    found = [f for f in lint_task(load_task(root)) if f.code == "L008"]
    assert len(found) == 1 and found[0].round == 2
    assert "check_extra.py" in found[0].message and "pytest does not collect" in found[0].message
    # support files are not flagged
    (tests / "conftest.py").write_text("")
    assert [f.round for f in lint_task(load_task(root)) if f.code == "L008"] == [2]


def test_a_round_whose_new_tests_pytest_never_collects_does_not_load(tmp_path: Path) -> None:
    """The oracle would "pass" such a round unverified (issue 15, case 7)."""
    root = copy_counter(tmp_path)
    tests = root / "rounds" / "02" / "tests"
    (tests / "test_lines.py").rename(tests / "check_lines.py")
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('"test_lines.py"', '"check_lines.py"'))
    with pytest.raises(TaskFormatError, match=r"rounds/02/tests: pytest collects none .*"
                       r"check_lines\.py.*test_\*\.py"):  # fmt: skip
        load_task(root)
    # a suite that names its own test files (-o python_files=...) is the author's choice
    toml.write_text(toml.read_text().replace(
        "[environment]", '[verifier]\npytest_args = ["-o", "python_files=check_*.py test_*.py"]'
        "\n\n[environment]"))  # fmt: skip
    assert load_task(root).round(2).test_files == ("check_lines.py",)


def test_a_sane_workdir_is_normalised(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    _toml("[environment]", '[environment]\nworkdir = "/app//src/./"')(root)
    assert load_task(root).config.environment.workdir == "/app/src"


def test_test_modules_in_packages_may_share_a_basename(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    for rel in ("rounds/02/tests/a/__init__.py", "rounds/02/tests/b/__init__.py"):
        _write_at(rel, b"")(root)
    _write_at("rounds/02/tests/a/test_x.py", b"def test_x():\n    pass\n")(root)
    _write_at("rounds/02/tests/b/test_x.py", b"def test_x():\n    pass\n")(root)
    assert load_task(root).n_rounds == 4


def test_a_conditional_module_skip_is_the_authors_choice(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    text = (root / "rounds/02/tests/test_lines.py").read_text()
    _write("rounds/02/tests/test_lines.py",
           b"import sys\nimport pytest\nif sys.platform == 'win32':\n"
           b"    pytest.skip('posix', allow_module_level=True)\n"
           b"pytestmark = pytest.mark.skipif(False, reason='x')\n" + text.encode())(root)  # fmt: skip
    assert load_task(root).n_rounds == 4
