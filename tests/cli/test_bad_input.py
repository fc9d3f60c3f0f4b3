"""Bad input to ``evoround`` as a user types it (the entry point, in-process).

Table-driven: every row is one malformed or hostile command line. Each must end with
exit 2, exactly one line on stderr that names the option (or file) and the value, no
traceback, and nothing written: no job folder, no job.json, nothing outside ``--out``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers import COUNTER, CliResult, copy_counter, evoround_cli


def evoround(*args: str, cwd: Path | None = None, env: dict | None = None) -> CliResult:
    """The command in-process (tests/helpers.py), through the entry point's own error handling."""
    return evoround_cli(*args, env=env, cwd=cwd)


def _setup(tmp: Path) -> dict[str, str]:
    """Files the rows refer to as {name}."""
    root = copy_counter(tmp / "tasks")
    (tmp / "empty").mkdir()
    (tmp / "afile").write_text("x")
    (tmp / "latin1.yaml").write_bytes(b"rounds: {1: [{message: caf\xe9}]}\n")
    (tmp / "bad.yaml").write_text("rounds: [unclosed\n")
    (tmp / "keys.yaml").write_text('defualt: {"*": [oracle]}\n')
    (tmp / "list.yaml").write_text("- oracle\n")
    (tmp / "step.yaml").write_text('tasks: {counter: {"1": [{runn: ls}]}}\n')
    (tmp / "notjob").mkdir()
    (tmp / "corrupt").mkdir()
    (tmp / "corrupt" / "job.json").write_text("{not json")
    (tmp / "wrongjob").mkdir()
    (tmp / "wrongjob" / "job.json").write_text(json.dumps({"job": "x", "attempts": "many"}))
    return {"task": str(root), "tmp": str(tmp), "toml": str(root / "task.toml")}


# (id, arguments, words the one stderr line holds)
ROWS: list[tuple[str, list[str], list[str]]] = [
    ("sandbox-choice", ["--sandbox", "vm"], ["--sandbox", "'vm'", "local", "docker"]),
    ("executor-choice", ["--executor", "threads"], ["--executor", "'threads'", "ray"]),
    ("mode-choice", ["--mode", "both-ways"], ["--mode", "'both-ways'"]),
    ("job-escapes", ["--job", "../../escaped"], ["--job", "../../escaped", "not a path"]),
    ("job-nested", ["--job", "a/b"], ["--job", "'a/b'"]),
    ("job-dot", ["--job", ".."], ["--job", "'..'"]),
    ("job-hidden", ["--job", ".judge-cache"], ["--job", "'.judge-cache'"]),
    ("job-absolute", ["--job", "/tmp/elsewhere"], ["--job", "/tmp/elsewhere"]),
    ("attempts-zero", ["-k", "0"], ["--attempts", "0"]),
    ("attempts-word", ["-k", "two"], ["--attempts", "'two'"]),
    ("grace-negative", ["--grace", "-5"], ["--grace", "'-5'"]),
    ("unknown-option", ["--atempts", "2"], ["--atempts", "--attempts"]),
    ("unknown-agent", ["--agent", "gpt"], ["unknown agent 'gpt'", "oracle"]),
    ("unknown-bundled", ["--agent", "scripted:nosuch"], ["no bundled script 'nosuch'"]),
    ("scripted-no-script", ["--agent", "scripted"], ["--agent scripted needs --script"]),
    ("script-missing", ["--agent", "scripted", "--script", "{tmp}/nope.yaml"],
     ["--script", "nope.yaml", "no such file"]),
    ("script-dir", ["--agent", "scripted", "--script", "{tmp}/empty"],
     ["--script", "empty", "not a file"]),
    ("script-not-utf8", ["--agent", "scripted", "--script", "{tmp}/latin1.yaml"],
     ["--script", "latin1.yaml", "UTF-8"]),
    ("script-bad-yaml", ["--agent", "scripted", "--script", "{tmp}/bad.yaml"],
     ["bad.yaml", "invalid YAML", "line 2"]),
    ("script-unknown-key", ["--agent", "scripted", "--script", "{tmp}/keys.yaml"],
     ["keys.yaml", "unknown key `defualt`", "did you mean `default`?"]),
    ("script-without-scripted", ["--script", "{tmp}/bad.yaml"],
     ["--script", "--agent scripted", "oracle"]),
    ("model-for-oracle", ["--model", "openai/gpt-4o"], ["--model", "--agent oracle"]),
    ("api-base-for-nop", ["--agent", "nop", "--api-base", "http://127.0.0.1:9"],
     ["--api-base", "--agent nop"]),
    ("max-tokens-claude", ["--agent", "claude-code", "--max-tokens", "10"],
     ["--max-tokens", "evoround-agent"]),
    ("model-agent-no-model", ["--agent", "evoround-agent"], ["--model"]),
    ("temperature-for-oracle", ["--temperature", "0.2"], ["--temperature", "--agent oracle"]),
    ("temperature-range", ["--agent", "evoround-agent", "--model", "openai/x", "--temperature",
                           "7"], ["--temperature", "'7'"]),
    ("effort-choice", ["--agent", "evoround-agent", "--model", "openai/x",
                       "--reasoning-effort", "max"], ["--reasoning-effort", "'max'"]),
    ("model-arg-no-eq", ["--agent", "evoround-agent", "--model", "openai/x", "--model-arg",
                         "top_p"], ["--model-arg", "'top_p'", "KEY=VALUE"]),
    ("model-arg-reserved", ["--agent", "evoround-agent", "--model", "openai/x", "--model-arg",
                            "api_base=http://x"], ["--model-arg", "api_base"]),
    ("model-arg-twice", ["--agent", "evoround-agent", "--model", "openai/x", "--temperature",
                         "0.1", "--model-arg", "temperature=0.2"], ["temperature", "already"]),
    ("claude-temperature", ["--agent", "claude-code", "--temperature", "0.1"],
     ["claude-code", "--temperature"]),
    ("model-no-provider", ["--agent", "evoround-agent", "--model", "gpt4"],
     ["--model", "'gpt4'", "PROVIDER/NAME"]),
    ("judge-no-provider", ["--judge-model", "mini-judge"], ["--judge-model", "'mini-judge'"]),
    ("job-empty", ["--job", ""], ["--job", "''"]),
    ("job-too-long", ["--job", "x" * 300], ["--job", "at most 200"]),
    ("script-a-list", ["--agent", "scripted", "--script", "{tmp}/list.yaml"],
     ["list.yaml", "mapping"]),
    ("script-step-typo", ["--agent", "scripted", "--script", "{tmp}/step.yaml"],
     ["step.yaml", "unknown key `runn`", "did you mean `run`?"]),
    ("api-base-not-url", ["--agent", "evoround-agent", "--model", "openai/x", "--api-base",
                          "localhost:8000"], ["--api-base", "'localhost:8000'", "http"]),
    ("api-base-bad-port", ["--agent", "evoround-agent", "--model", "openai/x", "--api-base",
                           "http://127.0.0.1:99999/v1"], ["--api-base", "99999"]),
    ("api-base-unreachable", ["--agent", "evoround-agent", "--model", "openai/x", "--api-base",
                              "http://127.0.0.1:9/v1"],
     ["--api-base", "http://127.0.0.1:9/v1", "unreachable"]),
    ("judge-base-unreachable", ["--judge-model", "openai/j", "--judge-api-base",
                                "http://127.0.0.1:9/v1"], ["--judge-api-base", "unreachable"]),
    ("judge-votes-no-judge", ["--judge-votes", "3"], ["--judge-votes", "--judge-model"]),
    ("judge-base-no-judge", ["--judge-api-base", "http://127.0.0.1:9"],
     ["--judge-api-base", "--judge-model"]),
    ("ray-address-local", ["--ray-address", "127.0.0.1:6379"], ["--ray-address", "ray"]),
    ("proxy-no-model", ["--proxy"], ["--proxy", "--model"]),
    ("proxy-ray", ["--agent", "evoround-agent", "--model", "openai/x", "--proxy",
                   "--executor", "ray"], ["--proxy", "--executor local"]),
    ("keep-snapshots-local", ["--keep-snapshots"], ["--keep-snapshots", "docker"]),
    ("resume-missing", ["--resume", "{tmp}/nope"], ["nope", "no job.json"]),
    ("resume-not-job", ["--resume", "{tmp}/notjob"], ["notjob", "no job.json"]),
    ("resume-corrupt", ["--resume", "{tmp}/corrupt"], ["corrupt/job.json", "JSON"]),
    ("resume-wrong-types", ["--resume", "{tmp}/wrongjob"], ["wrongjob/job.json", "agent"]),
    ("resume-and-retry", ["--resume", "{tmp}/notjob", "--retry-failed", "{tmp}/notjob"],
     ["--resume", "--retry-failed"]),
    ("resume-and-job", ["--resume", "{tmp}/notjob", "--job", "x"], ["--job", "--resume"]),
    ("task-no-match", ["-t", "countr"], ["--task", "'countr'", "did you mean `counter`?"]),
    ("exclude-no-match", ["--exclude", "nope*"], ["--exclude", "'nope*'", "counter"]),
    ("exclude-all", ["--exclude", "*"], ["leave no task"]),
    ("limit-zero", ["--limit", "0"], ["--limit", "'0'"]),
    ("out-is-file", ["--out", "{tmp}/afile"], ["--out", "afile", "is a file"]),
    ("out-under-file", ["--out", "{tmp}/afile/runs"], ["--out", "afile", "is a file"]),
]  # fmt: skip

# Rows whose task argument is not the counter copy (the task path is the bad input).
TASK_ROWS: list[tuple[str, list[str], list[str]]] = [
    ("task-missing", ["{tmp}/nope"], ["nope", "no such task"]),
    ("task-is-file", ["{tmp}/afile"], ["afile", "not a directory"]),
    ("task-is-toml", ["{toml}"], ["task.toml", "task's folder"]),
    ("task-folder-empty", ["{tmp}/empty"], ["empty", "no tasks found"]),
]


def _check_one_line(res: CliResult, words: list[str]) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize(("args", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_run_option_is_one_line_and_writes_nothing(
    tmp_path: Path, args: list[str], words: list[str]
) -> None:
    names = _setup(tmp_path)
    out = tmp_path / "runs"
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["run", names["task"], *[a.format(**names) for a in args]]
    if "--out" not in args and "--resume" not in args:
        argv += ["--out", str(out)]
    t0 = time.monotonic()
    res = evoround(*argv, cwd=tmp_path, env={"EVOROUND_HOME": str(tmp_path / "home")})
    _check_one_line(res, [w.format(**names) for w in words])
    assert time.monotonic() - t0 < 60  # a refused endpoint is not retried for minutes
    assert not out.exists(), "a refused run wrote its --out folder"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == before
    assert not (tmp_path.parent / "escaped").exists()


@pytest.mark.parametrize(("args", "words"), [r[1:] for r in TASK_ROWS],
                         ids=[r[0] for r in TASK_ROWS])  # fmt: skip
def test_bad_task_path_is_one_line(tmp_path: Path, args: list[str], words: list[str]) -> None:
    names = _setup(tmp_path)
    out = tmp_path / "runs"
    res = evoround("run", *[a.format(**names) for a in args], "--out", str(out))
    _check_one_line(res, words)
    assert not out.exists()


def test_square_brackets_in_errors_survive(tmp_path: Path) -> None:
    """Rich markup must not eat ``[[rounds]]`` (or any user text) in an error line."""
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text() + '\n[[rounds]]\ntitle = "[bold]5[/]"\n')
    res = evoround("run", str(root), "--out", str(tmp_path / "runs"))
    _check_one_line(res, ["5 [[rounds]] entries but 4 round directories"])


def test_non_utf8_instruction_in_run_lint_list(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    (root / "rounds" / "02" / "instruction.md").write_bytes(b"Count lines \xff\n")
    for cmd in (["run", str(root), "--out", str(tmp_path / "runs")], ["tasks", "lint", str(root)],
                ["tasks", "list", str(root)]):  # fmt: skip
        res = evoround(*cmd)
        _check_one_line(res, ["rounds/02/instruction.md", "not UTF-8", "0xff"])


def test_typo_key_in_cli(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace("activity =", "activty ="))
    res = evoround("tasks", "lint", str(root))
    _check_one_line(res, ["task.toml", "task:", "unknown key `activty`",
                          "(did you mean `activity`?)"])  # fmt: skip


def test_help_shows_choices_and_no_bool_types() -> None:
    res = evoround("run", "--help")
    assert res.returncode == 0
    assert "<bool>" not in res.stdout
    assert "<local|docker>" in res.stdout and "<local|ray>" in res.stdout
    assert "Exit codes" in res.stdout
    top = evoround("--help")
    assert "Exit codes" in top.stdout and "130" in top.stdout
    for cmd in (["tasks", "list"], ["tasks", "lint"], ["report"], ["compare"]):
        h = evoround(*cmd, "--help")
        if "--json" in h.stdout:
            line = next(ln for ln in h.stdout.splitlines() if "--json" in ln)
            assert line.split("--json", 1)[1].strip(" │"), f"{cmd}: --json without help"


def test_resume_of_a_scripted_job_needs_and_names_its_script(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text('default: {"*": [oracle]}\n')
    out = tmp_path / "runs"
    res = evoround("run", str(COUNTER), "--agent", "scripted", "--script", str(script),
                   "--out", str(out), "--job", "j", "--mode", "mt")  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    again = evoround("run", "--resume", str(out / "j"))
    _check_one_line(again, ["--script", "job.json"])


# Other commands: (id, argv, words). Files come from _setup (tmp is the cwd).
OTHER_ROWS: list[tuple[str, list[str], list[str]]] = [
    ("report-missing", ["report", "{tmp}/nope"], ["nope", "no job.json"]),
    ("report-corrupt-lock", ["report", "{tmp}/corrupt"], ["corrupt/job.json", "not valid JSON"]),
    ("report-wrong-lock", ["report", "{tmp}/wrongjob"], ["wrongjob/job.json", "agent"]),
    ("regrade-corrupt-lock", ["regrade", "{tmp}/corrupt"], ["corrupt/job.json"]),
    ("compare-missing", ["compare", "{tmp}/nope", "{tmp}/corrupt"], ["nope", "no job.json"]),
    ("validate-sandbox", ["tasks", "validate", "{task}", "--sandbox", "vm"],
     ["--sandbox", "'vm'"]),
    ("validate-missing", ["tasks", "validate", "{tmp}/nope"], ["nope", "no such task"]),
    ("lint-file", ["tasks", "lint", "{tmp}/afile"], ["afile", "not a directory"]),
    ("list-missing", ["tasks", "list", "{tmp}/nope"], ["nope"]),
    ("new-on-file", ["tasks", "new", "{tmp}/afile"], ["afile"]),
    ("new-bad-name", ["tasks", "new", "{tmp}/Bad Name"], ["'Bad Name'"]),
    ("import-missing", ["tasks", "import", "{tmp}/nope", "{tmp}/out"], ["nope"]),
    ("import-format", ["tasks", "import", "{task}", "{tmp}/out", "--format", "nope"],
     ["'nope'", "harbor-steps"]),
    ("octobench-missing", ["tasks", "import-octobench", "{tmp}/nope.jsonl", "{tmp}/out"],
     ["nope.jsonl"]),
    ("replay-missing", ["replay-server", "{tmp}/nope.yaml"], ["nope.yaml", "No such file"]),
    ("replay-bad-yaml", ["replay-server", "{tmp}/bad.yaml"], ["bad.yaml", "invalid YAML", "line"]),
    ("replay-not-utf8", ["replay-server", "{tmp}/latin1.yaml"], ["latin1.yaml", "UTF-8"]),
    ("replay-unknown-key", ["replay-server", "{tmp}/keys.yaml"], ["keys.yaml", "defualt"]),
    ("demo-sandbox", ["demo", "--sandbox", "vm"], ["--sandbox", "'vm'"]),
    ("demo-out-file", ["demo", "--out", "{tmp}/afile"], ["--out", "afile", "is a file"]),
    ("no-such-command", ["runn"], ["No such command", "runn"]),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "words"), [r[1:] for r in OTHER_ROWS],
                         ids=[r[0] for r in OTHER_ROWS])  # fmt: skip
def test_bad_input_to_other_commands_is_one_line(
    tmp_path: Path, argv: list[str], words: list[str]
) -> None:
    names = _setup(tmp_path)
    res = evoround(*[a.format(**names) for a in argv], cwd=tmp_path)
    _check_one_line(res, [w.format(**names) for w in words])
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


def test_task_selection_by_name_glob_exclude_and_limit(tmp_path: Path) -> None:
    from evoround.tasks import library_path

    out = tmp_path / "runs"
    res = evoround("run", str(library_path()), "-t", "*i*", "--exclude", "pricing",
                   "--limit", "1", "--agent", "nop", "--mode", "mt", "--out", str(out),
                   "--job", "j")  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    lock = json.loads((out / "j" / "job.json").read_text())
    assert list(lock["tasks"]) == ["configmigrate"]  # *i* = configmigrate, pricing; -pricing


def test_unknown_rule_name_is_refused_before_running(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace(
        'system_reminder = "Do not add dependencies."',
        'system_reminder = "Do not add dependencies."\n[[rounds.checks]]\nid = "e"\n'
        'category = "system_prompt"\nkind = "rule"\nrule = "no_emojj"',
    ))  # fmt: skip
    out = tmp_path / "runs"
    for cmd in (["run", str(root), "--out", str(out)], ["tasks", "lint", str(root)]):
        res = evoround(*cmd)
        _check_one_line(res, ["task.toml", "rounds[4].checks[1].rule", "'no_emojj'",
                              "did you mean `no_emoji`?"])  # fmt: skip
    assert not out.exists()


ENV_ROWS = [
    ({"EVOROUND_INFRA_RETRIES": "abc"}, ["EVOROUND_INFRA_RETRIES", "'abc'", "integer"]),
    ({"EVOROUND_INFRA_RETRIES": "-1"}, ["EVOROUND_INFRA_RETRIES", "'-1'"]),
    ({"EVOROUND_INFRA_BACKOFF_MAX": "soon"}, ["EVOROUND_INFRA_BACKOFF_MAX", "'soon'"]),
    ({"EVOROUND_DOCKER_SNAPSHOT": "full"}, ["EVOROUND_DOCKER_SNAPSHOT", "'full'", "commit"]),
]


def test_malformed_settings_are_one_line_naming_the_variable(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    for env, words in ENV_ROWS:
        for cmd in (["run", str(COUNTER), "--out", str(out)], ["config"]):
            _check_one_line(evoround(*cmd, env=env), words)
    assert not out.exists()


def test_config_lists_every_setting_with_its_source() -> None:
    res = evoround("config", "--json", env={"EVOROUND_INFRA_RETRIES": "5",
                                            "EVOROUND_JUDGE_API_KEY": "sk-secret"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = {r["variable"]: r for r in json.loads(res.stdout)}
    assert rows["EVOROUND_INFRA_RETRIES"] == {**rows["EVOROUND_INFRA_RETRIES"], "value": "5",
                                              "source": "environment"}  # fmt: skip
    assert rows["EVOROUND_JUDGE_API_KEY"]["value"] == "***"  # never printed
    assert rows["EVOROUND_HOME"]["source"] in ("default", "environment")
    assert all(r["description"] for r in rows.values())


def test_a_changed_task_or_a_corrupt_lock_is_one_line_on_rerun(tmp_path: Path) -> None:
    root = copy_counter(tmp_path)
    out = tmp_path / "runs"
    args = ["run", str(root), "--out", str(out), "--job", "j", "--mode", "mt", "--agent", "nop"]
    assert evoround(*args).returncode == 0
    (root / "rounds" / "01" / "instruction.md").write_text("Count words, differently.\n")
    res = evoround(*args)
    _check_one_line(res, ["job.json", "refusing to mix", "tasks.counter.digest"])
    assert len(res.stderr) < 400  # the changed digest, not two copies of the task table
    (out / "j" / "job.json").write_text("{oops")
    _check_one_line(evoround(*args), ["job.json", "not a readable job lock"])
