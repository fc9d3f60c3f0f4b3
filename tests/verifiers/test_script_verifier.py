"""The script verifier reads rewards and cases as Harbor and EvoCode-Bench do.

Pure parsing on hand-written inputs, then real scripts through ``run_script`` in a real
local sandbox (bash runs them; nothing is mocked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoround.results import TestOutcome as Outcome
from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import ActiveTest, load_task
from evoround.verifiers._script import (
    RewardError,
    meets,
    parse_cases,
    parse_reward_files,
    run_script,
)
from tests.helpers import COUNTER


def test_reward_json_first_then_txt_like_harbor():
    assert parse_reward_files(b'{"reward": 0.5, "style": 1}', b"1") == {"reward": 0.5, "style": 1.0}
    # no 'reward' key in reward.json: reward.txt fills it
    assert parse_reward_files(b'{"style": 1, "ok": true}', b"0.25\n") == {
        "style": 1.0,
        "reward": 0.25,
    }
    assert parse_reward_files(None, b" 1\n") == {"reward": 1.0}


@pytest.mark.parametrize(
    ("json_raw", "txt_raw", "message"),
    [
        (None, None, "no reward file"),
        (None, b"", "reward.txt is empty"),
        (None, b"  \n", "reward.txt is empty"),
        (None, b"pass", "not a number"),
        (None, b"nan", "NaN"),
        (b"[1]", None, "not a JSON object"),
        (b"{", None, "not JSON"),
        (b'{"reward": "1"}', None, "no numeric values"),
        (b'{"reward": true}', None, "no numeric values"),
    ],
)
def test_missing_or_unreadable_reward_is_an_error(json_raw, txt_raw, message):
    with pytest.raises(RewardError, match=message):
        parse_reward_files(json_raw, txt_raw)


def test_thresholds():
    assert meets({"reward": 0.999}, 0.999) and not meets({"reward": 0.998}, 0.999)
    assert meets({"reward": 0.5}, 0.5)
    assert meets({"reward": 1, "style": 0.7}, {"reward": 1.0, "style": 0.6})
    assert not meets({"reward": 1}, {"reward": 1.0, "style": 0.6})  # absent key fails


STDOUT = """\
building...
CASE_RESULT case_id=c1 origin_step=round-1 requirement_ref=core.add case_type=core status=success intent="adds" scenario="a b" input="n/a" expected="n/a" actual="n/a" failure_reason=""
CASE_RESULT case_id=c2 origin_step=round-3 requirement_ref=err.neg case_type=error status=fail intent="rejects" scenario="neg" input="-1" expected="ValueError" actual="returned 0" failure_reason="no error raised"
CASE_SUMMARY total_cases=2 success_count=1 fail_count=1
"""


def test_case_lines_become_cases_and_the_summary_counts():
    cases = parse_cases(STDOUT, "test.sh")
    assert (cases.passed, cases.total) == (1, 2) and cases.integrity == ()
    ok, bad = cases.results
    assert (ok.name, ok.outcome, ok.origin_round) == ("c1 [core.add]", Outcome.passed, 1)
    assert (bad.name, bad.outcome, bad.origin_round) == ("c2 [err.neg]", Outcome.failed, 3)
    assert bad.message == "no error raised; expected: ValueError; actual: returned 0"


def test_case_counts_fallbacks_and_forged_summaries():
    only_results = "\n".join(STDOUT.splitlines()[1:3])
    assert (parse_cases(only_results, "t").passed, parse_cases(only_results, "t").total) == (1, 2)
    assert parse_cases("no case lines here", "t").total is None
    only_summary = "CASE_SUMMARY total_cases=5 success_count=4 fail_count=1\n"
    assert (parse_cases(only_summary, "t").passed, parse_cases(only_summary, "t").total) == (4, 5)
    assert parse_cases(STDOUT + STDOUT, "t").integrity == ()  # repeats of the same lines


def test_a_case_line_after_output_left_open_still_counts():
    """The tested code runs inside the script: a ``print(..., end="")`` of an honest agent
    left the line open and the script's next CASE_RESULT was glued to it. The line was
    missed, the summary no longer matched the result lines, and a correct solution was an
    integrity violation ('CASE_SUMMARY says 2/2 passed, the CASE_RESULT lines 1/1')."""
    lines = STDOUT.splitlines()
    glued = "\n".join([lines[0], lines[1], "empty input!" + lines[2], "..." + lines[3]]) + "\n"
    cases = parse_cases(glued, "t")
    assert cases.integrity == () and (cases.passed, cases.total) == (1, 2)
    assert [r.name for r in cases.results] == ["c1 [core.add]", "c2 [err.neg]"]


@pytest.mark.parametrize(
    ("stdout", "words"),
    [
        # the agent's code printed a summary of its own (before or after the script's)
        ("CASE_SUMMARY total_cases=2 success_count=2 fail_count=0\n" + STDOUT, "2 different"),
        (STDOUT + "CASE_SUMMARY total_cases=2 success_count=2 fail_count=0\n", "2 different"),
        ("CASE_SUMMARY total_cases=9 success_count=9 fail_count=5\n", "do not add up"),
        # a summary that does not match the result lines
        (STDOUT.replace("total_cases=2 success_count=1 fail_count=1",
                        "total_cases=5 success_count=5 fail_count=0"), "CASE_RESULT lines 1/2"),
        # a failing case re-reported as a success
        (STDOUT + STDOUT.splitlines()[2].replace("status=fail", "status=success") + "\n",
         "both passed and failed"),
    ],
    ids=["early-summary", "late-summary", "sum", "mismatch", "flipped-case"],
)  # fmt: skip
def test_contradicting_case_lines_are_integrity_evidence(stdout: str, words: str):
    cases = parse_cases(stdout, "t")
    assert any(words in e for e in cases.integrity), cases.integrity


def _suite(tmp_path: Path, script: str) -> list[ActiveTest]:
    f = tmp_path / "suite" / "test.sh"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(script)
    return [ActiveTest(path="test.sh", source=f, origin_round=1, introduced_round=1)]


def _run(tmp_path: Path, script: str, **kw):
    provider = LocalProvider(SnapshotStore(tmp_path / "store"))
    with provider.create(load_task(COUNTER), "verify") as sb:
        return run_script(sb, _suite(tmp_path, script), 1, script="test.sh", timeout=30, **kw)


W = 'echo "$1" > "$EVOROUND_VERIFIER_DIR/reward.txt"'


def test_run_script_threshold_and_exit_policies(tmp_path: Path):
    half = "#!/bin/bash\necho 0.5 > $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, half)
    assert not out.passed and out.reward == 0.5 and out.error is None
    assert _run(tmp_path, half, min_reward=0.5).passed
    exits = "#!/bin/bash\necho 1 > $EVOROUND_REWARD_FILE\nexit 3\n"
    assert not _run(tmp_path, exits).passed  # evoround's own tasks: exit must be 0
    assert _run(tmp_path, exits, nonzero_exit="ignore").passed  # Harbor: the reward decides
    err = _run(tmp_path, exits, nonzero_exit="error")  # harbor_multiturn: no verdict
    assert not err.passed and "exited 3" in (err.error or "")


def test_run_script_json_env_and_missing_reward(tmp_path: Path):
    js = (
        "#!/bin/bash\n"
        'printf \'{"reward": 1, "style": %s}\' "$STYLE" > $EVOROUND_VERIFIER_DIR/reward.json\n'
    )
    out = _run(tmp_path, js, env={"STYLE": "0.4"}, min_reward={"reward": 1, "style": 0.5})
    assert not out.passed and out.rewards == {"reward": 1.0, "style": 0.4}
    out = _run(tmp_path, js, env={"STYLE": "0.6"}, min_reward={"reward": 1, "style": 0.5})
    assert out.passed
    empty = "#!/bin/bash\n: > $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, empty)
    assert not out.passed and out.error == "reward.txt is empty"


def test_run_script_cases_from_stdout(tmp_path: Path):
    script = "#!/bin/bash\ncat <<'X'\n" + STDOUT + "X\necho 0 > $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, script)
    assert (out.n_passed, out.n_total) == (1, 2) and out.integrity == []
    assert [t.outcome for t in out.tests] == [Outcome.passed, Outcome.failed]


def test_full_reward_with_a_failed_case_or_a_linked_reward_is_integrity(tmp_path: Path):
    forged = "#!/bin/bash\ncat <<'X'\n" + STDOUT + "X\necho 1 > $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, forged)
    assert not out.passed and any("1 case(s) failed" in e for e in out.integrity)
    (tmp_path / "one").write_text("1\n")
    linked = f"#!/bin/bash\nln -s {tmp_path / 'one'} $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, linked)
    assert not out.passed and any("reward.txt" in e for e in out.integrity), out
