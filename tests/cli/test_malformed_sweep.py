"""A sweep of malformed and hostile inputs, one parametrised case each (in-process CLI).

The class, not examples: ``task.toml`` (types, unknown keys at every level, missing keys,
numbers out of range, enums, round layout, paths leaving the task, symlinks, encodings,
empty/binary/huge files), instructions, tests that collect nothing, checklists, scripted
agent and replay-server YAML, the importers' formats, bad option values of every command,
``EVOROUND_*`` variables and corrupt job folders. Every case must end with exit 2, exactly
one line on stderr naming the file and the field (or the option and its value), no
traceback, and nothing written anywhere under the case's folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import COUNTER, FIXTURES, CliResult, evoround_cli

HARBOR = FIXTURES / "harbor"


@dataclass
class Case:
    """Where a case works: ``tmp`` (cwd), a counter copy ``task``, and the files it made."""

    tmp: Path
    task: Path

    @property
    def toml(self) -> Path:
        return self.task / "task.toml"

    def sub(self, old: str, new: str) -> None:
        text = self.toml.read_text()
        assert old in text, old
        self.toml.write_text(text.replace(old, new, 1))

    def add(self, text: str) -> None:
        self.toml.write_text(self.toml.read_text() + "\n" + text + "\n")

    def file(self, rel: str, data: str | bytes) -> Path:
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)
        return p

    def harbor(self, name: str) -> Path:
        dest = self.tmp / "src" / name
        shutil.copytree(HARBOR / name, dest)
        return dest


Prep = Callable[[Case], list[str]]


def run_task(extra: tuple[str, ...] = ()) -> list[str]:
    # nop, MT only: a wrongly accepted task finishes fast (and fails the case by exit 0)
    return ["run", "{task}", "--agent", "nop", "--mode", "mt", "--out", "{tmp}/runs", *extra]


def toml_sub(old: str, new: str) -> Prep:
    def prep(c: Case) -> list[str]:
        c.sub(old, new)
        return run_task()

    return prep


def toml_add(text: str) -> Prep:
    def prep(c: Case) -> list[str]:
        c.add(text)
        return run_task()

    return prep


def toml_bytes(data: bytes) -> Prep:
    def prep(c: Case) -> list[str]:
        c.toml.write_bytes(data)
        return run_task()

    return prep


def task_do(action: Callable[[Case], object], argv: list[str] | None = None) -> Prep:
    def prep(c: Case) -> list[str]:
        action(c)
        return argv or run_task()

    return prep


def argv(*args: str) -> Prep:
    return lambda c: list(args)


def run_opts(*args: str) -> Prep:
    return lambda c: run_task(args)


def _rm(p: Path) -> None:
    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def script(text: str | bytes, *extra: str) -> Prep:
    def prep(c: Case) -> list[str]:
        p = c.file("s.yaml", text)
        return ["run", "{task}", "--agent", "scripted", "--script", str(p), "--mode", "mt",
                "--out", "{tmp}/runs", *extra]  # fmt: skip

    return prep


def replay(text: str | bytes, *extra: str) -> Prep:
    def prep(c: Case) -> list[str]:
        p = c.file("r.yaml", text)
        port = [] if "--port" in extra else ["--port", "0"]
        return ["replay-server", str(p), *port, *extra]

    return prep


def harbor_import(name: str, action: Callable[[Path], object], *extra: str) -> Prep:
    def prep(c: Case) -> list[str]:
        src = c.harbor(name)
        action(src)
        return ["tasks", "import", str(src), "{tmp}/out", *extra]

    return prep


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def job(action: Callable[[Path], object], *cmd: str) -> Prep:
    """A copy of a finished job, spoilt by ``action``, given to ``cmd`` (report by default)."""

    def prep(c: Case) -> list[str]:
        dest = c.tmp / "job"
        shutil.copytree(_finished_job(), dest)
        action(dest)
        return [*(cmd or ("report", "--no-html")), str(dest)]

    return prep


_JOB: list[Path] = []


def _finished_job() -> Path:
    """One real nop job on the counter task, made once per session."""
    if not _JOB:
        import atexit
        import tempfile

        out = Path(tempfile.mkdtemp(prefix="evoround-sweep-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        res = evoround("run", str(COUNTER), "--agent", "nop", "--mode", "mt", "--out",
                       str(out), "--job", "j")  # fmt: skip
        assert res.returncode == 0, res.stderr
        _JOB.append(out / "j")
    return _JOB[0]


BIG = b"# padding\n" * 300_000  # 3 MB

# (id, prepare, words the one stderr line must hold; {task} and {tmp} are filled in)
CASES: list[tuple[str, Prep, list[str]]] = [
    # ---- task.toml: types ----
    ("toml-schema-version-str", toml_sub("schema_version = 1", 'schema_version = "1"'),
     ["task.toml", "schema_version"]),
    ("toml-schema-version-2", toml_sub("schema_version = 1", "schema_version = 2"),
     ["task.toml", "schema_version", "2"]),
    ("toml-name-int", toml_sub('name = "counter"', "name = 5"), ["task.toml", "task.name"]),
    ("toml-name-spaces", toml_sub('name = "counter"', 'name = "Bad Name"'),
     ["task.toml", "task.name", "'Bad Name'"]),
    ("toml-tags-str", toml_sub('style = "contractual"', 'style = "contractual"\ntags = "x"'),
     ["task.toml", "task.tags"]),
    ("toml-cpus-str", toml_sub("agent_timeout_sec = 60", 'agent_timeout_sec = 60\ncpus = "2"'),
     ["task.toml", "environment.cpus", "'2'"]),
    ("toml-network-str", toml_sub("agent_timeout_sec = 60",
                                  'agent_timeout_sec = 60\nnetwork = "no"'),
     ["task.toml", "environment.network", "'no'"]),
    ("toml-timeout-str", toml_sub("agent_timeout_sec = 60", 'agent_timeout_sec = "60"'),
     ["task.toml", "environment.agent_timeout_sec", "'60'"]),
    ("toml-env-not-table", toml_sub("agent_timeout_sec = 60", 'agent_timeout_sec = 60\nenv = 3'),
     ["task.toml", "environment.env"]),
    ("toml-rounds-not-array", toml_add("rounds = 3"), ["task.toml"]),
    ("toml-change-types-str", toml_sub('change_types = ["extension"]',
                                       'change_types = "extension"'),
     ["task.toml", "rounds[1].change_types"]),
    ("toml-retires-int", toml_sub('retires = ["test_lines.py"]', "retires = [2]"),
     ["task.toml", "rounds[4].retires"]),
    ("toml-min-reward-str", toml_add('[verifier]\nmin_reward = "high"'),
     ["task.toml", "verifier.min_reward"]),
    ("toml-pytest-args-str", toml_add('[verifier]\npytest_args = "-x"'),
     ["task.toml", "verifier.pytest_args"]),
    # ---- unknown and misspelt keys at every level ----
    ("key-top", toml_add("[verifer]\nkind = 'pytest'"),
     ["task.toml", "unknown key `verifer`", "did you mean `verifier`?"]),
    ("key-task", toml_sub("activity =", "activty ="),
     ["task.toml", "task", "unknown key `activty`", "did you mean `activity`?"]),
    ("key-environment", toml_sub("agent_timeout_sec = 60", "agent_timeout_secs = 60"),
     ["task.toml", "environment", "`agent_timeout_secs`", "`agent_timeout_sec`"]),
    ("key-verifier", toml_add("[verifier]\nkidn = 'pytest'"),
     ["task.toml", "verifier", "`kidn`", "`kind`"]),
    ("key-round", toml_sub('title = "Count lines"', 'titel = "Count lines"'),
     ["task.toml", "rounds[2]", "`titel`", "`title`"]),
    ("key-check", toml_add('[[checks]]\nid = "a"\ncategory = "system_prompt"\nkind = "judge"\n'
                           'descripton = "x"'),
     ["task.toml", "checks[1]", "`descripton`", "`description`"]),
    ("key-healthcheck", toml_sub('system_reminder = "Do not add dependencies."',
                                 'system_reminder = "Do not add dependencies."\n'
                                 '[rounds.healthcheck]\ncommand = "true"\nretry = 2'),
     ["task.toml", "rounds[4].healthcheck", "`retry`", "`retries`"]),
    ("key-solution", toml_add("[solution]\nenvs = {}"), ["task.toml", "solution", "`envs`"]),
    # ---- missing required keys ----
    ("missing-task-table", toml_bytes(b"schema_version = 1\n"), ["task.toml", "task"]),
    ("missing-activity", toml_sub('activity = "spec_evolution"\n', ""),
     ["task.toml", "task.activity", "missing"]),
    ("missing-name", toml_sub('name = "counter"\n', ""), ["task.toml", "task.name", "missing"]),
    ("missing-check-kind", toml_add('[[checks]]\nid = "a"\ncategory = "system_prompt"'),
     ["task.toml", "checks[1].kind", "missing"]),
    ("missing-healthcheck-command", toml_add("[[rounds]]\n[rounds.healthcheck]\nretries = 2"),
     ["task.toml"]),
    # ---- numbers out of range ----
    ("cpus-negative", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 60\ncpus = -1.0"),
     ["task.toml", "environment.cpus", "-1"]),
    ("cpus-zero", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 60\ncpus = 0.0"),
     ["task.toml", "environment.cpus", "0"]),
    ("cpus-inf", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 60\ncpus = inf"),
     ["task.toml", "environment.cpus"]),
    ("timeout-nan", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = nan"),
     ["task.toml", "environment.agent_timeout_sec"]),
    ("timeout-zero", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 0"),
     ["task.toml", "environment.agent_timeout_sec", "0"]),
    ("timeout-huge", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 1e300"),
     ["task.toml", "environment.agent_timeout_sec"]),
    ("memory-huge", toml_sub("agent_timeout_sec = 60",
                             "agent_timeout_sec = 60\nmemory_mb = 99999999999999999"),
     ["task.toml", "environment.memory_mb"]),
    ("memory-float", toml_sub("agent_timeout_sec = 60",
                              "agent_timeout_sec = 60\nmemory_mb = 1.5"),
     ["task.toml", "environment.memory_mb"]),
    ("pids-negative", toml_sub("agent_timeout_sec = 60", "agent_timeout_sec = 60\npids = -3"),
     ["task.toml", "environment.pids", "-3"]),
    ("round-timeout-negative", toml_sub('title = "Count words"',
                                        'title = "Count words"\nagent_timeout_sec = -1'),
     ["task.toml", "rounds[1].agent_timeout_sec"]),
    ("healthcheck-retries-zero", toml_sub('title = "Count characters"\nchange_types = ["extension"]',
                                          'title = "Count characters"\nchange_types = ["extension"]'
                                          '\n[rounds.healthcheck]\ncommand = "true"\nretries = 0'),
     ["task.toml", "rounds[3].healthcheck.retries"]),
    # ---- enums ----
    ("enum-activity", toml_sub('activity = "spec_evolution"', 'activity = "refactoring"'),
     ["task.toml", "task.activity", "'refactoring'", "spec_evolution"]),
    ("enum-style", toml_sub('style = "contractual"', 'style = "Contractual"'),
     ["task.toml", "task.style", "'Contractual'", "did you mean `contractual`?"]),
    ("enum-change-type", toml_sub('change_types = ["extension"]', 'change_types = ["feature"]'),
     ["task.toml", "rounds[1].change_types[1]", "'feature'"]),
    ("enum-verifier-kind", toml_add('[verifier]\nkind = "junit"'),
     ["task.toml", "verifier.kind", "'junit'", "pytest"]),
    ("enum-nonzero-exit", toml_add('[verifier]\nnonzero_exit = "explode"'),
     ["task.toml", "verifier.nonzero_exit", "'explode'"]),
    ("enum-check-category", toml_add('[[checks]]\nid = "a"\ncategory = "prompt"\nkind = "judge"'),
     ["task.toml", "checks[1].category", "'prompt'"]),
    ("enum-check-scope", toml_add('[[checks]]\nid = "a"\ncategory = "skill"\nkind = "judge"\n'
                                  'scope = "job"'), ["task.toml", "checks[1].scope", "'job'"]),
    # ---- rounds layout ----
    ("rounds-too-many-entries", toml_add('[[rounds]]\ntitle = "extra"'),
     ["task.toml", "rounds", "5 [[rounds]] entries but 4 round directories"]),
    ("rounds-gap", task_do(lambda c: (c.task / "rounds" / "04").rename(c.task / "rounds" / "05")),
     ["rounds/05", "expected 04"]),
    ("rounds-zero", task_do(lambda c: shutil.copytree(c.task / "rounds" / "01",
                                                     c.task / "rounds" / "00")),
     ["rounds/00"]),
    ("rounds-one-digit", task_do(lambda c: (c.task / "rounds" / "04").rename(
        c.task / "rounds" / "4")), ["rounds/4", "01, 02"]),
    ("rounds-duplicate", task_do(lambda c: shutil.copytree(c.task / "rounds" / "04",
                                                          c.task / "rounds" / "004")),
     ["rounds/004"]),
    ("rounds-none", task_do(lambda c: [shutil.rmtree(p) for p in (c.task / "rounds").iterdir()]),
     ["rounds", "at least one round"]),
    ("rounds-dir-missing", task_do(lambda c: shutil.rmtree(c.task / "rounds")),
     ["rounds", "missing rounds/"]),
    ("retires-unknown", toml_sub('retires = ["test_lines.py"]', 'retires = ["test_nope.py"]'),
     ["task.toml", "rounds[4].retires[1]", "'test_nope.py'"]),
    # ---- paths leaving the task folder, symlinks ----
    ("dockerfile-escapes", toml_sub("agent_timeout_sec = 60",
                                    'agent_timeout_sec = 60\ndockerfile = "../../Dockerfile"'),
     ["task.toml", "environment.dockerfile", "'../../Dockerfile'"]),
    ("dockerfile-absolute", toml_sub("agent_timeout_sec = 60",
                                     'agent_timeout_sec = 60\ndockerfile = "/etc/passwd"'),
     ["task.toml", "environment.dockerfile", "'/etc/passwd'"]),
    ("verifier-script-escapes", toml_add('[verifier]\nkind = "script"\nscript = "../../x.sh"'),
     ["task.toml", "verifier.script", "'../../x.sh'"]),
    ("artifacts-escape", toml_sub("schema_version = 1",
                                  'schema_version = 1\nartifacts = ["../../etc/passwd"]'),
     ["task.toml", "artifacts", "'../../etc/passwd'"]),
    ("round-artifacts-escape", toml_sub('title = "Count words"',
                                        'title = "Count words"\nartifacts = ["a/../../x"]'),
     ["task.toml", "rounds[1].artifacts", "'a/../../x'"]),
    ("name-too-long", toml_sub('name = "counter"', f'name = "{"c" * 300}"'),
     ["task.toml", "task.name"]),
    ("symlink-test-outside", task_do(lambda c: (c.task / "rounds/01/tests/test_x.py").symlink_to(
        "/etc/hostname")), ["rounds/01/tests/test_x.py", "symlink"]),
    ("symlink-instruction-outside", task_do(lambda c: (
        _rm(c.task / "rounds/02/instruction.md"),
        (c.task / "rounds/02/instruction.md").symlink_to("/etc/hostname"))),
     ["rounds/02/instruction.md", "symlink"]),
    ("symlink-dangling", task_do(lambda c: (c.task / "workspace" / "gone").symlink_to(
        c.task / "nowhere")), ["workspace/gone", "symlink"]),
    ("symlink-dir-outside", task_do(lambda c: (c.task / "workspace" / "etc").symlink_to("/etc")),
     ["workspace/etc", "symlink"]),
    # ---- encodings, empty, binary, BOM, huge ----
    ("toml-latin1", toml_bytes(COUNTER.joinpath("task.toml").read_bytes().replace(
        b"Tiny", b"Tin\xff")), ["task.toml", "not UTF-8", "0xff"]),
    ("toml-empty", toml_bytes(b""), ["task.toml", "task", "missing"]),
    ("toml-binary", toml_bytes(bytes(range(256)) * 4), ["task.toml"]),
    ("toml-nul", toml_bytes(b"schema_version = 1\x00\x00\n"), ["task.toml"]),
    ("toml-bom", toml_bytes(b"\xef\xbb\xbf" + COUNTER.joinpath("task.toml").read_bytes()),
     ["task.toml", "BOM"]),
    ("toml-utf16", toml_bytes(COUNTER.joinpath("task.toml").read_text().encode("utf-16")),
     ["task.toml", "UTF-8"]),
    ("toml-huge", toml_bytes(COUNTER.joinpath("task.toml").read_bytes() + BIG),
     ["task.toml", "bytes", "at most 1,000,000 bytes"]),
    ("toml-invalid", toml_add("[task"), ["task.toml", "invalid TOML", "line"]),
    ("toml-duplicate-key", toml_sub('style = "contractual"',
                                    'style = "contractual"\nstyle = "explorative"'),
     ["task.toml", "invalid TOML"]),
    ("toml-is-dir", task_do(lambda c: (c.toml.unlink(), c.toml.mkdir())),
     ["counter"]),
    # ---- instructions ----
    ("instruction-missing", task_do(lambda c: (c.task / "rounds/02/instruction.md").unlink()),
     ["rounds/02/instruction.md", "missing"]),
    ("instruction-empty", task_do(lambda c: (c.task / "rounds/02/instruction.md").write_text(
        " \n\n")), ["rounds/02/instruction.md", "empty"]),
    ("instruction-latin1", task_do(lambda c: (c.task / "rounds/03/instruction.md").write_bytes(
        b"Caf\xe9\n")), ["rounds/03/instruction.md", "not UTF-8", "0xe9"]),
    ("instruction-binary", task_do(lambda c: (c.task / "rounds/03/instruction.md").write_bytes(
        b"\x00\x01\x02ELF" * 10)), ["rounds/03/instruction.md"]),
    ("instruction-bom", task_do(lambda c: (c.task / "rounds/03/instruction.md").write_bytes(
        b"\xef\xbb\xbfCount things.\n")), ["rounds/03/instruction.md", "BOM"]),
    ("instruction-huge", task_do(lambda c: (c.task / "rounds/03/instruction.md").write_bytes(
        b"Count.\n" * 400_000)), ["rounds/03/instruction.md", "2,800,000 bytes", "at most 1,000,000 bytes"]),
    ("instruction-is-dir", task_do(lambda c: (
        (c.task / "rounds/03/instruction.md").unlink(),
        (c.task / "rounds/03/instruction.md").mkdir())), ["rounds/03/instruction.md"]),
    # ---- tests that pytest does not collect ----
    ("tests-none-round1", task_do(lambda c: shutil.rmtree(c.task / "rounds/01/tests")),
     ["rounds/01/tests", "at least one test"]),
    ("tests-misnamed-round1", task_do(lambda c: (c.task / "rounds/01/tests/test_words.py").rename(
        c.task / "rounds/01/tests/words_check.py")),
     ["rounds/01/tests", "words_check.py", "test_*.py"]),
    ("tests-misnamed-round3", task_do(lambda c: (c.task / "rounds/03/tests/test_chars.py").rename(
        c.task / "rounds/03/tests/chars.py")), ["rounds/03/tests", "chars.py", "test_*.py"]),
    ("tests-is-a-file", task_do(lambda c: (shutil.rmtree(c.task / "rounds/03/tests"),
                                           (c.task / "rounds/03/tests").write_text("x"))),
     ["rounds/03/tests", "is a file"]),
    ("tests-only-conftest", task_do(lambda c: (c.task / "rounds/01/tests/test_words.py").rename(
        c.task / "rounds/01/tests/conftest.py")), ["rounds/01/tests"]),
    ("tests-only-data-round1", task_do(lambda c: (c.task / "rounds/01/tests/test_words.py").rename(
        c.task / "rounds/01/tests/test_words.txt")), ["rounds/01/tests", "test_words.txt"]),
    # ---- checklists ----
    ("check-rule-unknown", toml_add('[[checks]]\nid = "e"\ncategory = "system_prompt"\n'
                                    'kind = "rule"\nrule = "no_emojj"'),
     ["task.toml", "checks[1].rule", "'no_emojj'", "did you mean `no_emoji`?"]),
    ("check-rule-missing", toml_add('[[checks]]\nid = "e"\ncategory = "system_prompt"\n'
                                    'kind = "rule"'), ["task.toml", "checks[1]", "rule"]),
    ("check-id-empty", toml_add('[[checks]]\nid = ""\ncategory = "skill"\nkind = "judge"'),
     ["task.toml", "checks[1].id"]),
    ("check-id-duplicate", toml_add('[[checks]]\nid = "a"\ncategory = "skill"\nkind = "judge"\n'
                                    '[[checks]]\nid = "a"\ncategory = "memory"\nkind = "judge"'),
     ["task.toml", "checks[2].id", "'a'", "duplicate"]),
    ("check-kind-enum", toml_add('[[checks]]\nid = "a"\ncategory = "skill"\nkind = "llm"'),
     ["task.toml", "checks[1].kind", "'llm'"]),
    ("check-wins-over-enum", toml_add('[[checks]]\nid = "a"\ncategory = "skill"\nkind = "judge"\n'
                                      'wins_over = "everything"'),
     ["task.toml", "checks[1].wins_over", "'everything'"]),
    ("check-params-not-table", toml_add('[[checks]]\nid = "a"\ncategory = "skill"\n'
                                        'kind = "judge"\nparams = 3'),
     ["task.toml", "checks[1].params"]),
    # ---- scripted agent YAML ----
    ("script-empty-steps-key", script("tasks: {counter: {'1': [{run: ls, say: hi}]}}\n"),
     ["s.yaml", "one of"]),
    ("script-write-keys", script("default: {'*': [{write: {path: a}}]}\n"),
     ["s.yaml", "write", "content"]),
    ("script-step-int", script("default: {'*': [5]}\n"), ["s.yaml", "default"]),
    ("script-rounds-list", script("default: [oracle]\n"), ["s.yaml", "default"]),
    ("script-binary", script(bytes(range(256))), ["s.yaml"]),
    ("script-name-bad", script("name: 'a b'\ndefault: {'*': [oracle]}\n"), ["s.yaml", "name"]),
    ("script-timeout-negative", script("default: {'*': [{run: ls, timeout: -1}]}\n"),
     ["s.yaml", "timeout"]),
    ("script-round-key", script("default: {round1: [oracle]}\n"), ["s.yaml", "round1"]),
    ("script-write-not-table", script("default: {'*': [{write: a.txt}]}\n"),
     ["s.yaml", "write"]),
    ("script-huge", script(b"# x\n" * 6_000_000), ["--script", "s.yaml", "MB"]),
    ("script-tabs", script("default:\n\t'*': [oracle]\n"), ["s.yaml", "invalid YAML"]),
    # ---- replay-server scripts ----
    ("replay-huge", replay(b"# x\n" * 6_000_000), ["r.yaml", "MB"]),
    ("replay-list", replay("- a\n"), ["r.yaml", "mapping"]),
    ("replay-times-zero", replay("faults: [{status: 500, times: 0}]\n"),
     ["r.yaml", "faults", "times"]),
    ("replay-status-str", replay("faults: [{status: boom}]\n"), ["r.yaml", "faults", "status"]),
    ("replay-delay-negative", replay("rounds: [[{text: hi, delay_sec: -1}]]\n"),
     ["r.yaml", "delay_sec"]),
    ("replay-typo", replay("round: []\n"), ["r.yaml", "`round`", "`rounds`"]),
    ("replay-tool-no-name", replay("rounds: [[{tool_calls: [{arguments: {}}]}]]\n"),
     ["r.yaml", "name"]),
    ("replay-port-negative", replay("default: hi\n", "--port", "-1"),
     ["--port", "'-1'"]),
    ("replay-port-huge", replay("default: hi\n", "--port", "70000"), ["--port", "70000"]),
    ("replay-log-dir", replay("default: hi\n", "--log", "/"), ["--log", "'/'"]),
    ("replay-empty", replay(""), ["r.yaml"]),
    ("replay-answers-not-list", replay("answers: {content: hi}\n"), ["r.yaml", "answers"]),
    # ---- importers: Harbor multi-step / EvoCode-Bench current [[steps]] ----
    ("steps-not-array", harbor_import("steps-greeter", lambda s: (s / "task.toml").write_text(
        'steps = "step-1-greet"\n')), ["task.toml", "steps"]),
    ("steps-entry-int", harbor_import("steps-greeter", lambda s: (s / "task.toml").write_text(
        "steps = [1, 2]\n")), ["task.toml", "steps[1]"]),
    ("steps-name-escapes", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", 'name = "round-3"', 'name = "../../round-3"')),
     ["task.toml", "steps[3]", "'../../round-3'"]),
    ("steps-duplicate-name", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", 'name = "round-3"', 'name = "round-2"')),
     ["task.toml", "steps[3]", "'round-2'", "duplicate"]),
    ("steps-missing-dir", harbor_import("theme_d0_w0_word_tally", lambda s: shutil.rmtree(
        s / "steps" / "round-2")), ["task.toml", "steps[2]", "steps/round-2"]),
    ("steps-instruction-latin1", harbor_import("theme_d0_w0_word_tally", lambda s: (
        s / "steps/round-2/instruction.md").write_bytes(b"caf\xe9\n")),
     ["round-2/instruction.md", "UTF-8"]),
    ("steps-chain-num", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", "num_steps = 3", "num_steps = 4")),
     ["task.toml", "num_steps", "4"]),
    ("steps-chain-type", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", 'change_types = ["conflict"]', 'change_types = ["rewrite"]')),
     ["task.toml", "requirement_chain.steps[3]", "'rewrite'"]),
    ("steps-toml-invalid", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", "[[steps]]", "[[steps]")), ["task.toml", "invalid TOML"]),
    ("steps-no-test", harbor_import("steps-greeter", lambda s: (
        s / "steps/step-2-shout/tests/test.sh").unlink()), ["step-2-shout", "test.sh"]),
    ("steps-timeout-str", harbor_import("theme_d0_w0_word_tally", lambda s: _edit(
        s / "task.toml", "timeout_sec = 120.0", 'timeout_sec = "long"')),
     ["task.toml", "agent.timeout_sec", "'long'"]),
    ("steps-format-bad", harbor_import("steps-greeter", lambda s: None, "--format", "harbour"),
     ["--format", "'harbour'", "harbor-steps"]),
    # ---- importers: legacy round_N/ (harbor_multiturn) ----
    ("legacy-gap", harbor_import("word-tally-legacy", lambda s: (s / "round_3").rename(
        s / "round_4")), ["round_", "round_1..round_3"]),
    ("legacy-num-rounds-str", harbor_import("word-tally-legacy", lambda s: _edit(
        s / "task.toml", "num_rounds = 3", 'num_rounds = "3"')),
     ["task.toml", "num_rounds"]),
    ("legacy-round-duplicate", harbor_import("word-tally-legacy", lambda s: _edit(
        s / "task.toml", "round = 3", "round = 2")), ["task.toml", "multiround.rounds"]),
    ("legacy-change-type", harbor_import("word-tally-legacy", lambda s: _edit(
        s / "task.toml", 'change_type = "conflict"', 'change_type = "swap"')),
     ["task.toml", "rounds[3]", "'swap'"]),
    ("legacy-multiround-str", harbor_import("word-tally-legacy", lambda s: (
        s / "task.toml").write_text('[metadata]\nmultiround = "three"\n')),
     ["task.toml", "metadata.multiround"]),
    ("legacy-instruction-latin1", harbor_import("word-tally-legacy", lambda s: (
        s / "round_2/instruction.md").write_bytes(b"\xff\xfe")),
     ["round_2/instruction.md", "UTF-8"]),
    ("legacy-no-test", harbor_import("word-tally-legacy", lambda s: (
        s / "round_2/tests/test.sh").unlink()), ["round_2/tests/test.sh", "missing"]),
    ("import-out-nonempty", harbor_import("steps-greeter", lambda s: (
        s.parent.parent / "out").mkdir() or (s.parent.parent / "out" / "x").write_text("x")),
     ["out", "not empty"]),
    # ---- options of run ----
    ("run-k-negative", run_opts("-k", "-1"), ["--attempts", "'-1'"]),
    ("run-concurrency-zero", run_opts("-j", "0"), ["--concurrency", "'0'"]),
    ("run-max-steps-zero", run_opts("--max-steps", "0"), ["--max-steps", "'0'"]),
    ("run-judge-votes-zero", run_opts("--judge-votes", "0"), ["--judge-votes", "'0'"]),
    ("run-error-rate-2", run_opts("--max-error-rate", "2"), ["--max-error-rate", "'2'"]),
    ("run-retry-negative", run_opts("--retry-on-error", "-2"), ["--retry-on-error", "'-2'"]),
    ("run-glob-bracket", run_opts("-t", "count[er"), ["--task", "'count[er'"]),
    ("run-limit-negative", run_opts("--limit", "-3"), ["--limit", "'-3'"]),
    ("run-rounds-reversed", run_opts("--rounds", "3-1"), ["--rounds", "'3-1'"]),
    ("run-rounds-zero", run_opts("--rounds", "0-2"), ["--rounds", "'0-2'"]),
    ("run-rounds-word", run_opts("--rounds", "first"), ["--rounds", "'first'"]),
    ("run-rounds-past-end", run_opts("--rounds", "7-9"), ["--rounds", "7-9", "counter", "4"]),
    ("run-image-map-bad", run_opts("--base-image-map", "ubuntu"),
     ["--base-image-map", "'ubuntu'", "FROM=LOCAL"]),
    ("run-image-map-empty-to", run_opts("--base-image-map", "ubuntu="),
     ["--base-image-map", "'ubuntu='"]),
    ("run-on-fail", run_opts("--on-fail", "retry"), ["--on-fail", "'retry'"]),
    ("run-job-slash", run_opts("--job", "a/../b"), ["--job", "'a/../b'"]),
    ("run-job-backslash", run_opts("--job", "a\\b"), ["--job", "'a\\\\b'"]),
    ("run-job-dotdot", run_opts("--job", "../x"), ["--job", "'../x'"]),
    ("run-out-unwritable", lambda c: ["run", "{task}", "--agent", "nop", "--out",
                                      "/proc/evoround-runs"],
     ["--out", "/proc/evoround-runs"]),
    ("run-agent-unknown", run_opts("--agent", "harbor"), ["--agent", "harbor"]),
    ("run-agent-empty", run_opts("--agent", ""), ["--agent", "''"]),
    ("run-resume-file", lambda c: ["run", "--resume", str(c.file("afile", "x"))],
     ["afile", "job.json"]),
    ("run-task-and-exclude-same", run_opts("-t", "counter", "--exclude", "counter"),
     ["leave no task"]),
    ("run-max-containers-zero", run_opts("--max-containers", "0"), ["--max-containers", "'0'"]),
    ("run-grace-word", run_opts("--grace", "soon"), ["--grace", "'soon'"]),
    # ---- report / compare / export / tasks / images / config ----
    ("report-resamples-negative", job(lambda j: None, "report", "--resamples", "-1"),
     ["--resamples", "'-1'"]),
    ("report-table-bad", job(lambda j: None, "report", "--table", "html"), ["--table", "'html'"]),
    ("report-seed-word", job(lambda j: None, "report", "--seed", "abc"), ["--seed", "'abc'"]),
    ("report-html-under-file", job(lambda j: (j / "afile").write_text("x"), "report", "--html",
                                   "{tmp}/job/afile/r.html"), ["--html", "afile"]),
    ("report-figures-is-file", job(lambda j: (j / "figs").write_text("x"), "report", "--figures",
                                   "{tmp}/job/figs"), ["--figures", "figs"]),
    ("report-garbage-job-json", job(lambda j: (j / "job.json").write_bytes(b"\x00\xff garbage")),
     ["job/job.json"]),
    ("report-job-json-list", job(lambda j: (j / "job.json").write_text("[1, 2]")),
     ["job/job.json"]),
    ("report-results-garbage", job(lambda j: (j / "results.jsonl").write_bytes(
        b"\x00garbage\n{not json}\n")), ["job/results.jsonl"]),
    ("report-results-dir", job(lambda j: ((j / "results.jsonl").unlink(),
                                          (j / "results.jsonl").mkdir())),
     ["job/results.jsonl"]),
    ("compare-corrupt-results", job(lambda j: (j / "results.jsonl").write_text("x\ny\n"),
                                    "compare", "{tmp}/job"), ["job/results.jsonl"]),
    ("resume-garbage-job-json", job(lambda j: (j / "job.json").write_text("{"), "run",
                                    "--resume"), ["job/job.json"]),
    ("report-missing-folder", argv("report", "{tmp}/gone"), ["gone", "no job.json"]),
    ("report-a-file", lambda c: ["report", str(c.file("afile", "x"))], ["afile"]),
    ("compare-k-zero", job(lambda j: None, "compare", "--k", "0", "{tmp}/job"),
     ["--k", "'0'"]),
    ("compare-same-job-missing", argv("compare", "{tmp}/gone", "{tmp}/gone"), ["gone"]),
    ("export-format-bad", job(lambda j: None, "export", "--format", "csv", "{tmp}/dest"),
     ["--format", "'csv'"]),
    ("export-missing-job", argv("export", "{tmp}/gone", "{tmp}/dest"), ["gone"]),
    ("validate-repeat-zero", argv("tasks", "validate", "{task}", "--repeat", "0"),
     ["--repeat", "'0'"]),
    ("validate-image-map-bad", argv("tasks", "validate", "{task}", "--base-image-map", "x"),
     ["--base-image-map", "'x'"]),
    ("lint-bad-task", task_do(lambda c: c.sub("activity =", "activty ="),
                              ["tasks", "lint", "{task}"]), ["task.toml", "activty"]),
    ("list-bad-task", task_do(lambda c: c.sub("agent_timeout_sec = 60", "agent_timeout_sec = -1"),
                              ["tasks", "list", "{task}"]),
     ["task.toml", "environment.agent_timeout_sec"]),
    ("lint-no-tasks", lambda c: ["tasks", "lint", "--strict", str(c.file("e/README", "x").parent)],
     ["no tasks found", "/e"]),
    ("list-no-tasks", lambda c: ["tasks", "list", str(c.file("e/README", "x").parent)],
     ["no tasks found", "/e"]),
    ("new-existing", argv("tasks", "new", "{task}"), ["counter"]),
    ("schema-into-dir", argv("tasks", "schema", "--out", "{tmp}"), ["--out"]),
    ("bootstrap-tar-missing", argv("images", "bootstrap", "--rootfs-tar", "{tmp}/nope.tar"),
     ["--rootfs-tar", "nope.tar"]),
    ("bootstrap-tag-bad", argv("images", "bootstrap", "--tag", "Bad Tag!"),
     ["--tag", "'Bad Tag!'"]),
    ("config-unknown-option", argv("config", "--verbose-ish"), ["--verbose-ish"]),
    ("cleanup-job-slash", argv("cleanup", "--job", "../x", "--dry-run"), ["--job", "'../x'"]),
    # ---- EVOROUND_* variables ----
    ("env-home-is-file", lambda c: [f"ENV:EVOROUND_HOME={c.file('afile', 'x')}", *run_task()],
     ["EVOROUND_HOME", "afile"]),
    ("env-image-map-bad", lambda c: ["ENV:EVOROUND_BASE_IMAGE_MAP=ubuntu", *run_task()],
     ["EVOROUND_BASE_IMAGE_MAP", "'ubuntu'"]),
    ("env-backoff-negative", lambda c: ["ENV:EVOROUND_INFRA_BACKOFF_MAX=-3", *run_task()],
     ["EVOROUND_INFRA_BACKOFF_MAX", "'-3'"]),
    ("env-home-empty", lambda c: ["ENV:EVOROUND_HOME=", *run_task()], ["EVOROUND_HOME", "''"]),
    ("env-backoff-inf", lambda c: ["ENV:EVOROUND_INFRA_BACKOFF_MAX=inf", *run_task()],
     ["EVOROUND_INFRA_BACKOFF_MAX", "'inf'"]),
    ("env-retries-huge", lambda c: ["ENV:EVOROUND_INFRA_RETRIES=99999999", *run_task()],
     ["EVOROUND_INFRA_RETRIES", "'99999999'"]),
    ("env-debug-word", lambda c: ["ENV:EVOROUND_DEBUG=maybe", *run_task()],
     ["EVOROUND_DEBUG", "'maybe'"]),
    ("env-agent-kwargs-bad", lambda c: ["ENV:EVOROUND_HARBOR_AGENT_KWARGS={oops",
                                        "run", "{task}", "--agent", "harbor:terminus-2",
                                        "--model", "openai/x", "--sandbox", "local",
                                        "--out", "{tmp}/runs"],
     ["EVOROUND_HARBOR_AGENT_KWARGS"]),
]  # fmt: skip


def evoround(*args: str, env: dict | None = None, cwd: Path | None = None) -> CliResult:
    """The command in-process (tests/helpers.py): the sweep is about what the entry point
    does with bad input, not about starting an interpreter 300 times."""
    return evoround_cli(*args, env=env, cwd=cwd)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (what "nothing written" compares)."""
    out = {}
    for p in root.rglob("*"):
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize(("prep", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_input_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, prep: Prep, words: list[str]
) -> None:
    task = tmp_path / "counter"
    shutil.copytree(COUNTER, task)
    case = Case(tmp=tmp_path, task=task)
    args = prep(case)
    env = {"EVOROUND_HOME": str(tmp_path.parent / f"{tmp_path.name}-home")}
    while args and args[0].startswith("ENV:"):
        key, _, value = args.pop(0)[4:].partition("=")
        env[key] = value
    names = {"task": str(task), "tmp": str(tmp_path)}
    args = [a.format(**names) for a in args]
    before = _tree(tmp_path)
    res = evoround(*args, env=env, cwd=tmp_path)  # wrongly accepted: exit 0, not 2
    assert "Traceback" not in res.stderr + res.stdout, res.stderr[-3000:]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    for w in words:
        assert w.format(**names) in lines[0], (w, lines[0])
    assert _tree(tmp_path) == before, "a refused command wrote or changed files"


def test_a_torn_last_line_is_a_warning_not_an_error(tmp_path: Path) -> None:
    """What a crash mid-write leaves (one torn last line) is reported around, with a warning;
    a results.jsonl of garbage is the error case above (report-results-garbage)."""
    job_dir = tmp_path / "job"
    shutil.copytree(_finished_job(), job_dir)
    results = job_dir / "results.jsonl"
    results.write_bytes(results.read_bytes()[:-40])
    res = evoround("report", "--no-html", str(job_dir))
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert f"warning: {results}: 1 unreadable line(s) (line 1) not counted" in out
