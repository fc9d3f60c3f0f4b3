"""``evoround export``: EvoCode-Bench's own scoring, re-implemented from its published
scripts, gives on the export exactly what ``evoround report`` gives.

The two functions below re-implement (they are not copies) ``evaluation/compute_metrics.py``
(the current runner: steps/<step>/verifier/reward.txt, threshold 0.999, every trial found
is an attempt) and ``legacy/evaluation/compute_metrics.py`` (harbor_multiturn:
verifier/multiround_results.json, raw max of rewards) as documented in the team's notes.
The result sets are built by hand: fail-stop and continue, several attempts, a task never
attempted, fractional rewards, a round failed for a timeout although its tests passed.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tomllib
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evoround.cli import app
from evoround.reports import ExportError, export_job
from evoround.results import JobConfig, Mode, RoundResult, RoundStatus, TaskRef, load_job


def ecb_current(tasks_dir: Path, results_dir: Path, model: str | None = None) -> dict:
    tasks: dict[str, list[str]] = {}
    for task in sorted(tasks_dir.iterdir()):
        try:
            cfg = tomllib.loads((task / "task.toml").read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        names = [s["name"] for s in cfg.get("steps") or [] if s.get("name")]
        if names:
            tasks[task.name] = names
    grouped: dict[str, list[dict[int, float]]] = defaultdict(list)
    for result in results_dir.rglob("result.json"):
        trial = result.parent
        if not (trial / "steps").is_dir():
            continue
        parts = trial.parts
        bucket = parts[parts.index("harbor_jobs") + 1] if "harbor_jobs" in parts else None
        if model is not None and bucket != model.split("/")[-1]:
            continue
        if model is None and bucket in ("oracle", "nop"):
            continue
        slug = next((t for t in tasks if t in parts), None)
        if slug is None:
            continue
        rewards: dict[int, float] = {}
        for i, name in enumerate(tasks[slug], start=1):
            f = trial / "steps" / name / "verifier" / "reward.txt"
            with contextlib.suppress(OSError, ValueError):  # missing or garbage: missing
                rewards[i] = float(f.read_text().strip())
        grouped[slug].append(rewards)

    def passed(x: float | None) -> float:
        return 1.0 if x is not None and x >= 0.999 else 0.0

    per_mean, per_mtk, completed, perfect = {}, {}, {}, {}
    for slug, names in tasks.items():
        n, att = len(names), grouped.get(slug, [])
        if not att:
            continue
        steps = range(1, n + 1)
        per_mean[slug] = statistics.mean(sum(passed(a.get(i)) for i in steps) / n for a in att)
        per_mtk[slug] = sum(max(passed(a.get(i)) for a in att) for i in steps) / n
        completed[slug] = any(passed(a.get(n)) >= 1.0 for a in att)
        perfect[slug] = any(all(passed(a.get(i)) >= 1.0 for i in steps) for a in att)
    n_tasks = len(tasks)
    hard = sum(1 for v in per_mean.values() if v <= 0.5)
    return {
        "hard_task_rate": 100 * hard / len(per_mean) if per_mean else 0.0,
        "tasks": n_tasks,
        "evaluated": len(per_mean),
        "mean_reward": 100 * statistics.mean(per_mean.values()) if per_mean else 0.0,
        "mt_at_k": 100 * sum(per_mtk.values()) / n_tasks,
        "completion_rate": 100 * sum(completed.values()) / n_tasks,
        "perfect_task_rate": 100 * sum(perfect.values()) / n_tasks,
    }


def ecb_legacy(tasks_dir: Path, results_dir: Path) -> dict:
    tasks = {}
    for task in sorted(tasks_dir.iterdir()):
        if (task / "task.toml").is_file():
            data = tomllib.loads((task / "task.toml").read_text())
            tasks[task.name] = int(data["metadata"]["multiround"]["num_rounds"])
    trials: dict[str, list[dict[int, float]]] = defaultdict(list)
    for result in sorted(results_dir.rglob("result.json")):
        slug = next((t for t in tasks if t in result.parts), None)
        mr = result.parent / "verifier" / "multiround_results.json"
        if slug is None or not mr.is_file():
            continue
        json.loads(result.read_text())
        rounds = {}
        for item in json.loads(mr.read_text()):
            ok = isinstance(item, dict) and isinstance(item.get("round"), int)
            if ok and isinstance(item.get("reward"), int | float):
                rounds[item["round"]] = float(item["reward"])
        trials[slug].append(rounds)
    scores, completed = {}, {}
    for slug, n in tasks.items():
        t = trials.get(slug, [])
        best = [max([0.0, *(r.get(i, 0.0) for r in t)]) for i in range(1, n + 1)]
        scores[slug] = sum(best) / n if n else 0.0
        completed[slug] = any(r.get(n, 0.0) >= 1.0 for r in t)
    return {
        "mt_score": (sum(scores.values()) / len(tasks)) * 100,
        "completion_rate": (sum(completed.values()) / len(tasks)) * 100,
        "evaluated_tasks": sum(1 for s in tasks if trials.get(s)),
    }


def rec(task, attempt, rnd, passed, n, *, reward=None, status=None, cases=(1, 1), types=()):
    return RoundResult(
        job="hand",
        task=task,
        task_digest="d",
        n_rounds=n,
        mode=Mode.mt,
        attempt=attempt,
        round=rnd,
        agent="scripted:x",
        sandbox="docker",
        passed=passed,
        status=status or (RoundStatus.passed if passed else RoundStatus.failed),
        reward=reward if reward is not None else (1.0 if passed else 0.0),
        tests_passed=cases[0],
        tests_total=cases[1],
        change_types=list(types),
        started_at=datetime.now(UTC),
    )


def make_job(tmp_path: Path, name: str, recs, n_rounds, attempts, on_fail) -> Path:
    job = tmp_path / name
    job.mkdir()
    cfg = JobConfig(
        job=name,
        agent="scripted:x",
        attempts=attempts,
        modes=[Mode.mt],
        sandbox="docker",
        on_fail=on_fail,
        tasks={
            t: TaskRef(digest="d", n_rounds=n, path=str(tmp_path / "gone" / t))
            for t, n in n_rounds.items()
        },  # fmt: skip
    )
    (job / "job.json").write_text(cfg.model_dump_json())
    (job / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))
    return job


FAIL_STOP = (
    {"alpha": 3, "beta": 2, "gamma": 4},
    [
        # alpha: a1 fails r2; a2 completes; a3 fails r1
        rec("alpha", 1, 1, True, 3, types=["extension"]),
        rec("alpha", 1, 2, False, 3, reward=0.5),
        rec("alpha", 2, 1, True, 3),
        rec("alpha", 2, 2, True, 3),
        rec("alpha", 2, 3, True, 3),
        rec("alpha", 3, 1, False, 3, status=RoundStatus.agent_timeout, reward=1.0),
        # beta: a1 fails r2 (verifier error), a2 fails r1, a3 passes r1 then times out r2
        rec("beta", 1, 1, True, 2),
        rec("beta", 1, 2, False, 2, status=RoundStatus.verifier_error, reward=None),
        rec("beta", 2, 1, False, 2, reward=0.998),
        rec("beta", 3, 1, True, 2),
        rec("beta", 3, 2, False, 2, status=RoundStatus.agent_timeout),
        # gamma: never attempted
    ],
    3,
    "stop",
)
CONTINUE = (
    {"alpha": 3, "beta": 4},
    [
        # alpha: a1 fails r1, passes r2 and r3 (continue); a2 passes r1, r2, fails r3
        rec("alpha", 1, 1, False, 3),
        rec("alpha", 1, 2, True, 3),
        rec("alpha", 1, 3, True, 3),
        rec("alpha", 2, 1, True, 3),
        rec("alpha", 2, 2, True, 3),
        rec("alpha", 2, 3, False, 3, reward=0.25),
        # beta: one attempt, passes r1, r3, fails r2 and r4
        rec("beta", 1, 1, True, 4),
        rec("beta", 1, 2, False, 4),
        rec("beta", 1, 3, True, 4),
        rec("beta", 1, 4, False, 4),
    ],
    2,
    "continue",
)


@pytest.mark.parametrize("data", [FAIL_STOP, CONTINUE], ids=["fail-stop", "continue"])
def test_current_compute_metrics_on_the_export_equals_the_report(tmp_path: Path, data):
    n_rounds, recs, attempts, on_fail = data
    view = load_job(make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail))
    out = tmp_path / "export"
    res = export_job(view, "evocodebench", out)
    theirs = ecb_current(out, out, model=res.bucket)
    ours = view.metrics()
    assert theirs["tasks"] == ours.n_tasks and theirs["evaluated"] == ours.evaluated
    assert theirs["mean_reward"] == pytest.approx(100 * ours.mean_reward, abs=1e-9)
    assert theirs["mt_at_k"] == pytest.approx(100 * ours.mt_at_k, abs=1e-9)
    assert theirs["completion_rate"] == pytest.approx(100 * ours.comp, abs=1e-9)
    assert theirs["perfect_task_rate"] == pytest.approx(100 * ours.perfect, abs=1e-9)
    assert theirs["hard_task_rate"] == pytest.approx(100 * ours.hard, abs=1e-9)
    # the same without --model: the bucket is not one the script drops
    assert ecb_current(out, out)["mt_at_k"] == theirs["mt_at_k"]


def test_hand_computed_values_fail_stop(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = FAIL_STOP
    m = load_job(make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)).metrics()
    # alpha: attempts 1/3, 3/3, 0 -> mean 4/9; beta: 1/2, 0, 1/2 -> 1/3; gamma not evaluated
    assert m.mean_reward == pytest.approx((4 / 9 + 1 / 3) / 2)
    # MT@3: alpha 1, beta 1/2, gamma 0 -> 1/2; Comp: alpha only -> 1/3; perfect = Comp
    assert (m.mt_at_k, m.comp, m.perfect) == pytest.approx((0.5, 1 / 3, 1 / 3))


def test_hand_computed_values_continue(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = CONTINUE
    m = load_job(make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)).metrics()
    # alpha: a1 2/3, a2 2/3 -> 2/3, MT@2 1 (r1 from a2, r3 from a1); beta 1/2
    assert m.mean_reward == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m.mt_at_k == pytest.approx((1 + 1 / 2) / 2)
    assert (m.comp, m.perfect) == pytest.approx((1 / 2, 0.0))


@pytest.mark.parametrize("data", [FAIL_STOP, CONTINUE], ids=["fail-stop", "continue"])
def test_legacy_compute_metrics_on_the_export_equals_the_report(tmp_path: Path, data):
    n_rounds, recs, attempts, on_fail = data
    view = load_job(make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail))
    out = tmp_path / "legacy"
    export_job(view, "harbor-multiturn", out)
    theirs = ecb_legacy(out, out)
    ours = view.metrics()
    assert theirs["mt_score"] == pytest.approx(100 * ours.mt_at_k, abs=1e-9)
    assert theirs["completion_rate"] == pytest.approx(100 * ours.comp, abs=1e-9)
    assert theirs["evaluated_tasks"] == ours.evaluated
    items = json.loads(next(out.rglob("multiround_results.json")).read_text())
    assert set(items[0]) == {
        "round", "change_type", "change_types", "reward", "verifier_reward", "status",
    }  # fmt: skip


def test_export_layout_and_refusals(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = FAIL_STOP
    job = make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)
    out = tmp_path / "export"
    res = CliRunner().invoke(app, ["export", str(job), str(out), "--format", "evocodebench"])
    assert res.exit_code == 0, res.output
    assert "compute_metrics.py" in res.output
    trial = out / "alpha" / "harbor_jobs" / "scripted-x" / "hand" / "attempt-001"
    assert (trial / "steps" / "round-1" / "verifier" / "reward.txt").read_text() == "1\n"
    assert (trial / "steps" / "round-2" / "verifier" / "reward.txt").read_text() == "0.5\n"
    assert not (trial / "steps" / "round-3").exists()  # never reached: no reward file
    stdout = (trial / "steps" / "round-1" / "verifier" / "test-stdout.txt").read_text()
    assert "CASE_SUMMARY total_cases=1 success_count=1 fail_count=0" in stdout
    # timed out with passing tests: not a pass for evoround, so not for the script either
    a3 = trial.parent / "attempt-003" / "steps" / "round-1" / "verifier" / "reward.txt"
    assert a3.read_text() == "0\n"
    again = CliRunner().invoke(app, ["export", str(job), str(out)])
    assert again.exit_code == 2 and "not an empty folder" in again.output
    bad = CliRunner().invoke(app, ["export", str(job), str(tmp_path / "x"), "--format", "csv"])
    assert bad.exit_code == 2 and "--format 'csv'" in bad.output
    with pytest.raises(ExportError, match="folder name"):
        export_job(load_job(job), "evocodebench", tmp_path / "alpha" / "out")


def test_window_export_scores_the_window(tmp_path: Path):
    n_rounds, recs, _, _ = CONTINUE
    inside = [r for r in recs if r.round >= 2]
    job = make_job(tmp_path, "hand", inside, n_rounds, 2, "continue")
    cfg = json.loads((job / "job.json").read_text())
    cfg["rounds_window"] = [2, None]
    (job / "job.json").write_text(json.dumps(cfg))
    view = load_job(job)
    out = tmp_path / "export"
    res = export_job(view, "evocodebench", out)
    theirs = ecb_current(out, out, model=res.bucket)
    ours = view.metrics()
    # alpha rounds 2-3: a1 2/2, a2 1/2 -> MT 1; beta rounds 2-4: 1/3
    assert ours.mt_at_k == pytest.approx((1 + 1 / 3) / 2)
    assert theirs["mt_at_k"] == pytest.approx(100 * ours.mt_at_k, abs=1e-9)
    assert theirs["mean_reward"] == pytest.approx(100 * ours.mean_reward, abs=1e-9)
    assert theirs["perfect_task_rate"] == pytest.approx(100 * ours.perfect, abs=1e-9)
    with pytest.raises(ExportError, match="--rounds window"):
        export_job(view, "harbor-multiturn", tmp_path / "legacy")


def test_an_attempt_that_left_no_record_counts_zero(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = FAIL_STOP
    job = make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)
    before = load_job(job).metrics()
    for a in (1, 2, 3, 4):  # the engine makes these; attempt 4 of alpha recorded nothing
        (job / "alpha" / f"mt-{a:02d}").mkdir(parents=True)
    after = load_job(job).metrics()
    # alpha: attempts 1/3, 3/3, 0, 0 -> 1/3 (was 4/9); beta unchanged (1/3)
    assert before.mean_reward == pytest.approx((4 / 9 + 1 / 3) / 2)
    assert after.mean_reward == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert after.mt_at_k == before.mt_at_k  # the first k=3 attempts are the recorded ones


def test_an_attempt_that_left_no_record_is_an_empty_trial_in_the_export(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = FAIL_STOP
    job = make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)
    for a in (1, 2, 3, 4):  # alpha's attempt 4 was started and recorded nothing
        (job / "alpha" / f"mt-{a:02d}").mkdir(parents=True)
    view = load_job(job)
    out = tmp_path / "export"
    res = export_job(view, "evocodebench", out)
    empty = out / "alpha" / "harbor_jobs" / res.bucket / "hand" / "attempt-004"
    assert (empty / "result.json").is_file() and not any((empty / "steps").iterdir())
    theirs = ecb_current(out, out, model=res.bucket)
    # alpha: 1/3, 3/3, 0, 0 -> 1/3; beta 1/3 (hand-computed; was (4/9 + 1/3) / 2 before)
    assert view.metrics().mean_reward == pytest.approx(1 / 3)
    assert theirs["mean_reward"] == pytest.approx(100 / 3, abs=1e-9)
    legacy = tmp_path / "legacy"
    export_job(view, "harbor-multiturn", legacy)
    assert ecb_legacy(legacy, legacy)["evaluated_tasks"] == 2


def test_first_k_attempts_export_gives_mt_at_1(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = FAIL_STOP
    view = load_job(make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail))
    out = tmp_path / "k1"
    res = export_job(view, "evocodebench", out, attempts=1)
    assert res.trials == 2  # alpha and beta, attempt 1 each; gamma never attempted
    theirs = ecb_current(out, out, model=res.bucket)
    # MT@1: alpha a1 passed r1 of 3, beta a1 r1 of 2, gamma 0 -> (1/3 + 1/2) / 3 = 5/18
    assert view.metrics(k=1).mt_at_k == pytest.approx(5 / 18)
    assert theirs["mt_at_k"] == pytest.approx(100 * 5 / 18, abs=1e-9)
    with pytest.raises(ExportError, match="--attempts 0"):
        export_job(view, "evocodebench", tmp_path / "k0", attempts=0)


SR_SET = (
    {"p": 3, "q": 2, "r": 4},
    [
        rec("p", 1, 1, True, 3),
        rec("p", 1, 2, False, 3),
        rec("q", 1, 1, False, 2),
        *(
            r.model_copy(update={"mode": Mode.sr})
            for r in (
                rec("p", 1, 1, True, 3),
                rec("p", 1, 2, True, 3),
                rec("p", 1, 3, False, 3),
                rec("p", 2, 3, True, 3),
                rec("q", 1, 1, True, 2),
                rec("q", 1, 2, True, 2),
                rec("r", 1, 1, True, 4),
                rec("r", 1, 2, False, 4),
            )
        ),
    ],
    2,
    "stop",
)


def test_sr_records_go_to_a_tree_of_their_own(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = SR_SET
    job = make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)
    cfg = json.loads((job / "job.json").read_text())
    (job / "job.json").write_text(json.dumps({**cfg, "modes": ["mt", "sr"]}))
    view = load_job(job)
    m = view.metrics()
    # SR macro: p 3/3, q 2/2, r 1/4 (rounds 3, 4 never run) -> 3/4; MT@2: p 1/3, q 0, r 0
    assert (m.sr, m.mt_at_k) == pytest.approx((0.75, 1 / 9))
    out = tmp_path / "export"
    res = export_job(view, "evocodebench", out)
    assert res.sr_trials == 8 and "evoround_sr" in res.sr_command
    sr = out / "evoround_sr"
    assert ecb_current(sr, sr, model=res.bucket)["mt_at_k"] == pytest.approx(75.0, abs=1e-9)
    # The MT scoring of OUT is not disturbed, with or without --model.
    mt_only = tmp_path / "mt-only"
    export_job(
        load_job(make_job(tmp_path, "mt", recs[:3], *SR_SET[0:1], 2, "stop")),
        "evocodebench",
        mt_only,
    )
    for model in (res.bucket, None):
        assert ecb_current(out, out, model=model) == ecb_current(mt_only, mt_only, model=model)
    assert ecb_current(out, out)["mt_at_k"] == pytest.approx(100 / 9, abs=1e-9)
    assert "SR" in (sr / "README.md").read_text()
    legacy = tmp_path / "legacy"
    res = export_job(view, "harbor-multiturn", legacy)
    assert res.sr_trials == 8
    assert ecb_legacy(legacy / "evoround_sr", legacy / "evoround_sr")["mt_score"] == pytest.approx(
        75.0
    )
    assert ecb_legacy(legacy, legacy)["mt_score"] == pytest.approx(100 / 9)


def test_legacy_export_writes_the_binary_verdict_as_reward(tmp_path: Path):
    # A failed round with a fractional reward: the legacy script takes the raw max, so
    # writing 0.5 would score MT 3/4 where evoround (and the paper's binary r) give 1/2.
    recs = [rec("a", 1, 1, True, 2), rec("a", 1, 2, False, 2, reward=0.5)]
    view = load_job(make_job(tmp_path, "hand", recs, {"a": 2}, 1, "stop"))
    out = tmp_path / "legacy"
    export_job(view, "harbor-multiturn", out)
    assert view.metrics().mt_at_k == pytest.approx(0.5)
    assert ecb_legacy(out, out)["mt_score"] == pytest.approx(50.0, abs=1e-9)
    items = json.loads(next(out.rglob("multiround_results.json")).read_text())
    assert [(x["reward"], x["verifier_reward"]) for x in items] == [(1.0, 1.0), (0.0, 0.5)]


def leaderboard_case_score(out: Path, bucket: str) -> float:
    """The leaderboard's case score (evaluation/viz/leaderboard.py), re-implemented: per
    task, one run; per round CASE_SUMMARY success/total from test-stdout.txt (0 when
    missing or total 0); mean over rounds 1..N; mean over tasks; x100."""
    import re

    per_task = []
    for task in sorted(p for p in out.iterdir() if (p / "steps").is_dir()):
        names = [s["name"] for s in tomllib.loads((task / "task.toml").read_text())["steps"]]
        runs = (
            sorted((task / "harbor_jobs" / bucket).glob("*"))
            if (task / "harbor_jobs").is_dir()
            else []
        )
        ratios = []
        for name in names:
            found = list(runs[-1].glob(f"**/steps/{name}/verifier/test-stdout.txt")) if runs else []
            m = found and re.search(
                r"CASE_SUMMARY total_cases=(\d+) success_count=(\d+) fail_count=(\d+)",
                found[0].read_text(),
            )
            ratios.append(int(m.group(2)) / int(m.group(1)) if m and int(m.group(1)) else 0.0)
        per_task.append(100 * statistics.mean(ratios))
    return statistics.mean(per_task)


def test_case_score_read_from_the_export_equals_the_report(tmp_path: Path):
    # Continue mode, one attempt: t1 passes 4/4, fails 1/4, passes 6/6 after the failure;
    # t2 is a build failure (0 cases) then 2/3 with reward 1; t3 never attempted.
    recs = [
        rec("t1", 1, 1, True, 3, cases=(4, 4)),
        rec("t1", 1, 2, False, 3, cases=(1, 4)),
        rec("t1", 1, 3, True, 3, cases=(6, 6)),
        rec("t2", 1, 1, False, 2, cases=(0, 0)),
        rec("t2", 1, 2, True, 2, cases=(2, 3)),
    ]
    view = load_job(make_job(tmp_path, "hand", recs, {"t1": 3, "t2": 2, "t3": 2}, 1, "continue"))
    m = view.metrics()
    # t1 (1 + 1/4 + 1)/3 = 3/4; t2 (0 + 2/3)/2 = 1/3; t3 0 -> (3/4 + 1/3)/3 = 13/36
    assert m.case_score_mt == pytest.approx(13 / 36)
    out = tmp_path / "export"
    res = export_job(view, "evocodebench", out)
    assert leaderboard_case_score(out, res.bucket) == pytest.approx(100 * 13 / 36, abs=1e-9)
    # and the other figures of the same set: MT@1 (2/3 + 1/2)/3, Comp 2/3, perfect 0
    theirs = ecb_current(out, out, model=res.bucket)
    assert theirs["mt_at_k"] == pytest.approx(100 * (2 / 3 + 1 / 2) / 3, abs=1e-9)
    assert (theirs["completion_rate"], theirs["perfect_task_rate"]) == pytest.approx((200 / 3, 0))


def test_cli_export_attempts_and_sr_command(tmp_path: Path):
    n_rounds, recs, attempts, on_fail = SR_SET
    job = make_job(tmp_path, "hand", recs, n_rounds, attempts, on_fail)
    cfg = json.loads((job / "job.json").read_text())
    (job / "job.json").write_text(json.dumps({**cfg, "modes": ["mt", "sr"]}))
    out = tmp_path / "export"
    res = CliRunner().invoke(app, ["export", str(job), str(out), "--attempts", "1"])
    assert res.exit_code == 0, res.output
    assert "score SR (7 trial(s)) with:" in res.output  # attempt 2 of p's SR left out
    assert "evoround_sr" in res.output
    bad = CliRunner().invoke(app, ["export", str(job), str(tmp_path / "x"), "--attempts", "0"])
    assert bad.exit_code == 2 and "--attempts" in bad.output


def test_a_task_named_like_another_tasks_sr_folder_is_refused(tmp_path: Path):
    recs = [rec("foo", 1, 1, True, 1), rec("sr.foo", 1, 1, True, 1)]
    job = make_job(tmp_path, "hand", recs, {"foo": 1, "sr.foo": 1}, 1, "stop")
    cfg = json.loads((job / "job.json").read_text())
    (job / "job.json").write_text(json.dumps({**cfg, "modes": ["mt", "sr"]}))
    with pytest.raises(ExportError, match="'sr.foo' is also a folder name"):
        export_job(load_job(job), "evocodebench", tmp_path / "out")
