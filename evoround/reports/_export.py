"""``evoround export``: a job as EvoCode-Bench's own scoring scripts read it.

Why: evoround's numbers must be checkable with the benchmark's published tools. The export
writes the trial layout those scripts walk, so running them unchanged on it gives the same
figures as ``evoround report`` (MT@k over all attempts, Comp, perfect, mean reward, hard;
the case score through the leaderboard's ``CASE_SUMMARY`` reading of ``test-stdout.txt``).

Two layouts (the tasks folder and the results folder are the same folder, ``OUT``):

``evocodebench`` (the current runner, ``evaluation/compute_metrics.py``)::

    OUT/<task>/task.toml                          [[steps]] name = ... (one per round)
    OUT/<task>/steps/<step>/instruction.md
    OUT/<task>/harbor_jobs/<bucket>/<job>/result.json                 (job level)
    OUT/<task>/harbor_jobs/<bucket>/<job>/<trial>/result.json         (one trial per attempt)
    OUT/<task>/harbor_jobs/<bucket>/<job>/<trial>/steps/<step>/verifier/reward.txt
                                                                      + test-stdout.txt
    compute_metrics.py --tasks-dir OUT --results-dir OUT --model <bucket>

``harbor-multiturn`` (the paper's runner, ``legacy/evaluation/compute_metrics.py``)::

    OUT/<task>/task.toml                          [metadata.multiround] num_rounds, rounds
    OUT/<task>/jobs/<job>/<trial>/result.json
    OUT/<task>/jobs/<job>/<trial>/verifier/multiround_results.json
    legacy compute_metrics.py --tasks-dir OUT --results-dir OUT

SR (fast-forward) records, which the benchmark's scripts do not score as such, go to a
tree of their own, ``OUT/evoround_sr/`` (both formats): one trial per SR
attempt at a target round, holding that step's reward only, under task folders named
``sr.<task>`` so the MT scoring of ``OUT`` never reads them. ``compute_metrics.py`` on that
tree reports SR (macro) as its ``mt_at_k``, the README's "point --results-dir at those
runs". An MT attempt started but left without any record is a trial without reward files
(scored 0, as the report does). ``--attempts K`` exports the first K attempts only.

A round's reward file says ``1`` when evoround passed the
round, else its reward when that was below the pass threshold, else ``0`` (a round failed
for an agent timeout, say, even though its tests passed) — so the benchmark's 0.999
threshold reaches evoround's verdicts exactly. Unreached rounds have no reward file.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from evoround.fileio import named
from evoround.results import JobView, Mode, RoundResult, RoundStatus
from evoround.tasks import TaskFormatError, load_task

FORMATS = ("evocodebench", "harbor-multiturn")
EXCLUDED_BUCKETS = ("oracle", "nop")
"""Buckets the current compute_metrics.py skips unless ``--model`` names them."""


class ExportError(ValueError):
    pass


@dataclass
class ExportResult:
    out: Path
    format: str
    tasks: int = 0
    trials: int = 0
    bucket: str = ""
    command: str = ""
    sr_trials: int = 0
    sr_command: str = ""
    notes: list[str] = field(default_factory=list)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "x"


def _bucket(view: JobView) -> str:
    """The model bucket, as ``harbor_jobs/<model##*/>``; never one the script drops."""
    cfg = view.config
    name = _safe((cfg.model or cfg.agent).split("/")[-1])
    return f"evoround-{name}" if name in EXCLUDED_BUCKETS else name


def _step_names(view: JobView, task: str, n: int, notes: list[str]) -> tuple[list[str], list]:
    """Round names (Harbor step names when the task came from Harbor) and the loaded rounds."""
    ref = view.config.tasks[task]
    try:
        loaded = load_task(Path(ref.path))
    except (TaskFormatError, OSError):
        notes.append(f"{task}: task not loadable at {ref.path}; steps named round-1..round-{n}")
        return [f"round-{i}" for i in range(1, n + 1)], []
    names = [r.spec.name or f"round-{r.index}" for r in loaded.rounds]
    if loaded.n_rounds != n or len(set(names)) != n:
        return [f"round-{i}" for i in range(1, n + 1)], []
    return names, list(loaded.rounds)


def reward_text(r: RoundResult) -> str:
    if r.passed:
        return "1"
    if r.reward is not None and r.reward < 0.999:
        return repr(float(r.reward))
    return "0"


def _attempts(
    view: JobView, task: str, mode: Mode = Mode.mt, first: int | None = None
) -> dict[int, dict[int, RoundResult]]:
    """Attempt -> round -> record, the ``first`` lowest attempt numbers only (MT@k's "first k").

    An MT attempt that was started (its ``mt-NN`` folder exists) but left no record is
    listed with no rounds: it is exported as a trial without reward files, which the
    benchmark's script scores 0, as ``evoround report`` does."""
    out: dict[int, dict[int, RoundResult]] = {}
    for r in view.records:
        if r.task == task and r.mode is mode:
            out.setdefault(r.attempt, {})[r.round] = r
    if mode is Mode.mt and (view.path / task).is_dir():
        for d in (view.path / task).iterdir():
            m = re.fullmatch(r"mt-(\d+)", d.name)
            if m and d.is_dir():
                out.setdefault(int(m.group(1)), {})
    chosen = sorted(out)[:first] if first else sorted(out)
    return {a: out[a] for a in chosen}


def _case_lines(r: RoundResult) -> str:
    lines = []
    for t in r.failing_tests:
        msg = t.message.replace('"', "'").replace("\n", " ")[:300]
        cid = _safe(t.name.split(" ")[0])
        origin = f"round-{t.origin_round}" if t.origin_round else "n/a"
        lines.append(
            f"CASE_RESULT case_id={cid} origin_step={origin} requirement_ref=n/a "
            f'case_type=core status=fail intent="{t.name}" scenario="n/a" input="n/a" '
            f'expected="n/a" actual="n/a" failure_reason="{msg}"'
        )
    failed = max(0, r.tests_total - r.tests_passed)
    lines.append(
        f"CASE_SUMMARY total_cases={r.tests_total} success_count={r.tests_passed} "
        f"fail_count={failed}"
    )
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:  # a full disk names no file: the line the CLI prints names it
        named(e, path)
        raise


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in items) + "]"


def _trial_result(view: JobView, task: str, trial: str, rewards: dict[str, float], n: int) -> dict:
    cfg = view.config
    return {
        "task_name": task,
        "trial_name": trial,
        "source": "evoround",
        "agent_info": {
            "name": cfg.agent,
            "version": None,
            "model_info": {"name": cfg.model} if cfg.model else None,
        },
        "verifier_result": {"rewards": {"reward": sum(rewards.values()) / n if n else 0.0}},
        "step_results": [
            {"step_name": k, "verifier_result": {"rewards": {"reward": v}}}
            for k, v in rewards.items()
        ],
    }


def _window(view: JobView, n: int) -> range:
    w = view.config.rounds_window
    return range(w[0], min(w[1] or n, n) + 1) if w else range(1, n + 1)


def _steps_toml(task: str, names: list[str], rounds: list) -> str:
    toml = (
        "# Written by `evoround export --format evocodebench`.\n"
        f'schema_version = "1.2"\nmulti_step_reward_strategy = "mean"\n\n'
        f"[metadata]\nname = {json.dumps(task)}\n\n"
        f"[metadata.requirement_chain]\nnum_steps = {len(names)}\n"
    )
    for i, name in enumerate(names, start=1):
        types = [c.value for c in rounds[i - 1].spec.change_types] if rounds else []
        toml += (
            f"\n[[metadata.requirement_chain.steps]]\nstep = {json.dumps(name)}\n"
            f"change_types = {_toml_list(types)}\n"
        )
    return toml + "".join(f"\n[[steps]]\nname = {json.dumps(nm)}\n" for nm in names)


def _write_task(tdir: Path, task: str, names: list[str], rounds: list) -> None:
    _write(tdir / "task.toml", _steps_toml(task, names, rounds))
    for i, name in enumerate(names, start=1):
        instr = rounds[i - 1].instruction if rounds else f"Round {i}\n"
        _write(tdir / "steps" / name / "instruction.md", instr)


def _write_trial(
    view: JobView, tr: Path, task: str, steps: list[tuple[str, RoundResult | None]], n: int
) -> None:
    """One Harbor trial: ``steps/`` always exists (the script skips a trial without it), a
    step that was never reached or never run has no reward file (the script counts 0)."""
    (tr / "steps").mkdir(parents=True, exist_ok=True)
    rewards: dict[str, float] = {}
    for name, r in steps:
        if r is None:
            continue
        vdir = tr / "steps" / name / "verifier"
        text = reward_text(r)
        _write(vdir / "reward.txt", text + "\n")
        _write(vdir / "test-stdout.txt", _case_lines(r))
        rewards[name] = float(text)
    _write(tr / "result.json", json.dumps(_trial_result(view, task, tr.name, rewards, n)))


SR_DIR = "evoround_sr"
"""SR (fast-forward) trials: a tree of their own, which the MT scoring never reads."""
SR_PREFIX = "sr."


def export_evocodebench(view: JobView, out: Path, first: int | None = None) -> ExportResult:
    res = ExportResult(out=out, format="evocodebench", bucket=_bucket(view))
    job = _safe(view.config.job)
    if view.config.rounds_window:
        res.notes.append(
            "a --rounds window: only the window's steps are declared in each task.toml, so "
            "the script's per-step averages are over the window, as the report's are"
        )
    sr_tasks = 0
    for task, n_all in view.n_rounds.items():
        names_all, rounds_all = _step_names(view, task, n_all, res.notes)
        span = _window(view, n_all)
        names = [names_all[i - 1] for i in span]
        rounds = [rounds_all[i - 1] for i in span] if rounds_all else []
        n = len(names)
        _write_task(out / task, task, names, rounds)
        res.tasks += 1
        jdir = out / task / "harbor_jobs" / res.bucket / job
        for a, by_round in _attempts(view, task, Mode.mt, first).items():
            steps = [(name, by_round.get(i)) for i, name in zip(span, names, strict=True)]
            _write_trial(view, jdir / f"attempt-{a:03d}", task, steps, n)
            res.trials += 1
        if Mode.sr not in view.config.modes:
            continue
        # SR: one fast-forward trial per (target round, attempt) holding that step only,
        # the shape of the benchmark's own SR runs (README: point --results-dir at them).
        sdir = out / SR_DIR / f"{SR_PREFIX}{task}"
        _write_task(sdir, f"{SR_PREFIX}{task}", names, rounds)
        sr_tasks += 1
        sjob = sdir / "harbor_jobs" / res.bucket / job
        for a, by_round in _attempts(view, task, Mode.sr, first).items():
            for i, name in zip(span, names, strict=True):
                if i in by_round:
                    tr = sjob / f"sr-round-{i:03d}-attempt-{a:03d}"
                    _write_trial(view, tr, f"{SR_PREFIX}{task}", [(name, by_round[i])], n)
                    res.sr_trials += 1
    res.command = (
        f"python evaluation/compute_metrics.py --tasks-dir {out} --results-dir {out} "
        f"--model {res.bucket}"
    )
    if sr_tasks:
        sr = out / SR_DIR
        _write(sr / "README.md", _sr_readme(res.bucket))
        res.sr_command = (
            f"python evaluation/compute_metrics.py --tasks-dir {sr} --results-dir {sr} "
            f"--model {res.bucket}"
        )
        res.notes.append(
            f"SR records: {SR_DIR}/ (its own tasks and trials, never read by the MT scoring); "
            "score them with the second command: its mt_at_k is SR (macro), and "
            "Gap = that minus the first command's mt_at_k"
        )
    return res


def _sr_readme(bucket: str) -> str:
    return (
        "# SR (single-round fast-forward) records, written by `evoround export`\n\n"
        "EvoCode-Bench's scripts do not score SR themselves; its README measures SR from\n"
        "separate fast-forward runs, read with the same per-step reward reading. This folder\n"
        "is such a set of runs, kept apart from the MT trials so that they are never mixed:\n\n"
        "- `sr.<task>/task.toml`: the task's `[[steps]]` (the same step names as the MT task);\n"
        f"- `sr.<task>/harbor_jobs/{bucket}/<job>/sr-round-<i>-attempt-<a>/`: one trial per\n"
        "  SR attempt at target round i, holding only `steps/<step i>/verifier/reward.txt`\n"
        "  (and `test-stdout.txt` with the CASE_SUMMARY line).\n\n"
        "`compute_metrics.py --tasks-dir THIS --results-dir THIS` then reports SR as its\n"
        "`mt_at_k` (best over attempts per step, mean over steps, mean over all tasks). Its\n"
        "other figures (mean reward, completion, perfect) mean nothing for SR runs.\n"
        "The task folders are named `sr.<task>` so that the MT scoring of the parent folder\n"
        "never attributes these trials to an MT task.\n"
    )


def legacy_status(r: RoundResult) -> str:
    if r.status in (RoundStatus.passed, RoundStatus.failed):
        return "completed"
    if r.status is RoundStatus.agent_timeout:
        return "agent_timeout"
    if r.status in (RoundStatus.agent_error, RoundStatus.model_api):
        return "agent_error"
    return f"verification_error: {r.status.value}: {(r.error or '')[:200]}"


def _multiround_toml(n: int, rounds: list) -> str:
    toml = (
        '# Written by `evoround export --format harbor-multiturn`.\nversion = "1.0"\n\n'
        f"[metadata.multiround]\nnum_rounds = {n}\n"
    )
    for i in range(1, n + 1):
        types = [c.value for c in rounds[i - 1].spec.change_types] if rounds else []
        toml += (
            f"\n[[metadata.multiround.rounds]]\nround = {i}\nchange_types = {_toml_list(types)}\n"
        )
    return toml


def _write_multiround_task(tdir: Path, n: int, rounds: list) -> None:
    _write(tdir / "task.toml", _multiround_toml(n, rounds))
    for i in range(1, n + 1):
        instr = rounds[i - 1].instruction if rounds else f"Round {i}\n"
        _write(tdir / f"round_{i}" / "instruction.md", instr)


class _RoundItem(TypedDict):
    """One round of a trial's ``verifier/multiround_results.json``."""

    round: int
    change_type: str
    change_types: list[str]
    reward: float | None
    verifier_reward: float | None
    status: str


def _write_multiround_trial(tr: Path, task: str, by_round: dict[int, RoundResult], n: int) -> None:
    items: list[_RoundItem] = []
    for i in sorted(by_round):
        r = by_round[i]
        status = legacy_status(r)
        # r[t,a,i] is the round's binary verdict (EvoCode-Bench's rewards are 1/0): the
        # legacy script takes the raw max, so a fractional reward would count part of a
        # failed round that evoround (and the paper's MT@4) counts 0.
        reward = (1.0 if r.passed else 0.0) if status == "completed" else None
        items.append(
            {
                "round": i,
                "change_type": "+".join(r.change_types) or "unknown",
                "change_types": list(r.change_types),
                "reward": reward,
                "verifier_reward": r.reward,
                "status": status,
            }
        )
    _write(tr / "verifier" / "multiround_results.json", json.dumps(items, indent=2))
    window = {f"round_{i}": 0.0 for i in range(1, n + 1)}
    window.update({f"round_{x['round']}": x["reward"] or 0.0 for x in items})
    result = {
        "task_name": task,
        "trial_name": tr.name,
        "verifier_result": {
            "rewards": {**window, "reward": sum(window.values()) / n if n else 0.0},
            "aggregate_window_start": 1,
            "aggregate_window_end": n,
        },
        "agent_result": None,
    }
    _write(tr / "result.json", json.dumps(result, indent=2))


def export_multiturn(view: JobView, out: Path, first: int | None = None) -> ExportResult:
    if view.config.rounds_window:
        raise ExportError(
            "a job with a --rounds window: harbor-multiturn's script scores rounds 1..N; "
            "export it with --format evocodebench"
        )
    res = ExportResult(out=out, format="harbor-multiturn")
    job = _safe(view.config.job)
    for task, n in view.n_rounds.items():
        _, rounds = _step_names(view, task, n, res.notes)
        _write_multiround_task(out / task, n, rounds)
        res.tasks += 1
        for a, by_round in _attempts(view, task, Mode.mt, first).items():
            _write_multiround_trial(
                out / task / "jobs" / job / f"attempt-{a:03d}", task, by_round, n
            )
            res.trials += 1
        if Mode.sr not in view.config.modes:
            continue
        # SR: harbor_multiturn's --start-round i --max-round i runs, one per round and attempt.
        sdir = out / SR_DIR / f"{SR_PREFIX}{task}"
        _write_multiround_task(sdir, n, rounds)
        for a, by_round in _attempts(view, task, Mode.sr, first).items():
            for i in sorted(by_round):
                tr = sdir / "jobs" / job / f"sr-round-{i:03d}-attempt-{a:03d}"
                _write_multiround_trial(tr, f"{SR_PREFIX}{task}", {i: by_round[i]}, n)
                res.sr_trials += 1
    res.command = (
        f"python legacy/evaluation/compute_metrics.py --tasks-dir {out} --results-dir {out}"
    )
    res.notes.append(
        "harbor-multiturn's compute_metrics.py reports MT score (= MT@k over all attempts) "
        "and completion rate (= Comp); it has no mean reward or perfect-task rate"
    )
    if res.sr_trials:
        sr = out / SR_DIR
        res.sr_command = (
            f"python legacy/evaluation/compute_metrics.py --tasks-dir {sr} --results-dir {sr}"
        )
        res.notes.append(
            f"SR records: {SR_DIR}/ (never read by the MT scoring); the second command's MT "
            "score is SR (macro)"
        )
    if view.config.on_fail == "continue":
        res.notes.append(
            "this job ran with --on-fail continue: rounds after a failure are listed too "
            "(harbor_multiturn itself stops at the first failure)"
        )
    return res


def export_job(view: JobView, fmt: str, out: Path, attempts: int | None = None) -> ExportResult:
    """Write ``view`` into ``out`` (new or empty) in the benchmark's layout ``fmt``.

    ``attempts``: export only each task's first k attempts (the lowest numbers), so that
    the script's best-of-all-trials MT@k is the report's MT@k for that k (MT@1, MT@4)."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if attempts is not None and attempts < 1:
        raise ExportError(f"--attempts {attempts}: must be at least 1")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: exists and is not an empty folder")
    # The scripts find a trial's task as the first task name equal to ANY part of its path.
    taken = {
        "harbor_jobs",
        "jobs",
        "steps",
        "verifier",
        SR_DIR,
        _bucket(view),
        _safe(view.config.job),
    }
    taken |= set(out.resolve().parts)
    if Mode.sr in view.config.modes:  # the SR tree's task folders are named sr.<task>
        taken |= {f"{SR_PREFIX}{t}" for t in view.n_rounds}
    clash = [t for t in view.n_rounds if t in taken or t.startswith(("attempt-", "sr-round-"))]
    if clash:
        raise ExportError(
            f"task name {clash[0]!r} is also a folder name on the export's paths; the "
            "benchmark's scripts would misattribute trials: export to another folder"
        )
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        if fmt == "evocodebench":
            return export_evocodebench(view, out, attempts)
        return export_multiturn(view, out, attempts)
    except BaseException:  # a full disk, a read-only folder, an interrupt: no half export
        _undo(out, created)
        raise


def _undo(out: Path, created: bool) -> None:
    """Remove what a failed export wrote: ``out`` itself if it made it, else its content
    (it was empty before)."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
        return
    for child in out.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
