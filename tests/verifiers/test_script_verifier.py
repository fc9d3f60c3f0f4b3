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


# The benchmark's case ratio of a round for each variant of its output, derived by reading
# UniPat-AI/EvoCodeBench evaluation/viz/leaderboard.py (round_caseratio: SUMMARY_RE =
# 'CASE_SUMMARY total_cases=(\\d+) success_count=(\\d+) fail_count=(\\d+)' with re.search,
# so the first match anywhere, single spaces, any text around it; no match: 0.0; total 0:
# 0.0; else success/total, fail_count unread). evoround's figure is round_case_ratio of the
# counts parse_cases reports, and must equal it on every row.
S = "CASE_SUMMARY total_cases=4 success_count=3 fail_count=1"
R = "CASE_RESULT case_id=c1 status=success\nCASE_RESULT case_id=c2 status=fail\n"
CONFORMANCE = [
    ("canonical", S + "\n", 0.75),
    ("two-spaces-after-keyword", S.replace("CASE_SUMMARY ", "CASE_SUMMARY  ") + "\n", 0.0),
    ("tab-after-keyword", S.replace("CASE_SUMMARY ", "CASE_SUMMARY\t") + "\n", 0.0),
    ("two-spaces-between-counts", S.replace("=4 ", "=4  ") + "\n", 0.0),
    ("text-after-counts", S + " (took 3.2 s)\n", 0.75),
    ("glued-after-counts", S + "x\n", 0.75),
    ("text-before-on-the-line", ">>> " + S + "\n", 0.75),
    ("glued-before", "empty input!" + S + "\n", 0.75),
    ("crlf", S + "\r\n", 0.75),
    ("two-summaries-first-counts", S + "\n" + S.replace("success_count=3", "success_count=4")
     .replace("fail_count=1", "fail_count=0") + "\n", 0.75),
    ("forged-summary-first", S.replace("success_count=3", "success_count=4") + "\n" + S, 1.0),
    ("no-case-lines", "building...\nall good\n", 0.0),
    ("result-lines-only", R, 0.0),
    ("zero-total", "CASE_SUMMARY total_cases=0 success_count=0 fail_count=0\n", 0.0),
    ("success-above-total", "CASE_SUMMARY total_cases=2 success_count=3 fail_count=0\n", 1.5),
    ("fail-count-not-adding-up", S.replace("fail_count=1", "fail_count=9") + "\n", 0.75),
    ("leading-zeros", "CASE_SUMMARY total_cases=04 success_count=03 fail_count=01\n", 0.75),
    ("lower-case-keyword", S.lower() + "\n", 0.0),
    ("negative-count", S.replace("=3", "=-3") + "\n", 0.0),
    ("split-over-lines", S.replace(" success", "\nsuccess") + "\n", 0.0),
    ("unicode-digits", S.replace("=4", "=\u0664").replace("=3", "=\u0663") + "\n", 0.75),
    ("summary-and-result-lines-disagree", R + S + "\n", 0.75),
]  # fmt: skip


@pytest.mark.parametrize(("stdout", "ratio"), [c[1:] for c in CONFORMANCE],
                         ids=[c[0] for c in CONFORMANCE])  # fmt: skip
def test_case_lines_conform_to_the_benchmarks_leaderboard(stdout: str, ratio: float):
    cases = parse_cases(stdout, "t")
    assert (cases.passed / cases.total if cases.total else 0.0) == ratio
    assert cases.integrity == ()  # the round's pass is the reward's: never flipped by these


def test_disagreeing_case_lines_are_recorded_problems():
    two = S + "\n" + S.replace("success_count=3", "success_count=4") + "\n"
    assert "2 different CASE_SUMMARY lines; the first counts" in parse_cases(two, "t").problems[0]
    assert "CASE_RESULT lines 1/2" in parse_cases(R + S + "\n", "t").problems[0]
    assert "do not add up" in parse_cases(S.replace("=1", "=9"), "t").problems[0]
    assert parse_cases(STDOUT + STDOUT, "t").problems == ()  # repeats of the same lines


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


def test_a_case_reported_both_passed_and_failed_is_integrity_evidence():
    flipped = STDOUT + STDOUT.splitlines()[2].replace("status=fail", "status=success") + "\n"
    assert any("both passed and failed" in e for e in parse_cases(flipped, "t").integrity)


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
    # no case lines: 0 of 0 cases, as the benchmark counts it (its case ratio 0), even passed
    out = _run(tmp_path, "#!/bin/bash\necho 1 > $EVOROUND_REWARD_FILE\n")
    assert out.passed and (out.n_passed, out.n_total) == (0, 0)


def test_full_reward_with_a_failed_case_or_a_linked_reward_is_integrity(tmp_path: Path):
    forged = "#!/bin/bash\ncat <<'X'\n" + STDOUT + "X\necho 1 > $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, forged)
    assert not out.passed and any("1 case(s) failed" in e for e in out.integrity)
    (tmp_path / "one").write_text("1\n")
    linked = f"#!/bin/bash\nln -s {tmp_path / 'one'} $EVOROUND_REWARD_FILE\n"
    out = _run(tmp_path, linked)
    assert not out.passed and any("reward.txt" in e for e in out.integrity), out
