"""What both Harbor importers share: path rewriting and writing an evoround task.

Harbor runs every task in a container with fixed absolute paths (``/app`` the
workspace, ``/tests`` the suite, ``/solution``, ``/logs/verifier/reward.txt``). An
evoround sandbox may be a local directory, so the importers rewrite those paths in
shell scripts into environment variables the engine sets (see
:mod:`evoround.verifiers._script`), with the Harbor path as the fallback so the
script still works in a Harbor-like container.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from evoround.tasks import (
    Activity,
    ArtifactPaths,
    ChangeType,
    EnvironmentSpec,
    HealthcheckSpec,
    RoundSpec,
    SolutionSpec,
    Style,
    TaskFile,
    TaskMeta,
    VerifierSpec,
    known_keys,
    task_file_error,
)
from evoround.tasks.importers._paths import (
    has_harbor_path,
    rewrite_python,
    rewrite_shell,
    substitute,
)

PREAMBLE = """\
# --- evoround import: Harbor's fixed paths, mapped to what the engine provides ---
export EVOROUND_WORKDIR="${EVOROUND_WORKDIR:-$PWD}"
export EVOROUND_LOGS_DIR="${EVOROUND_LOGS_DIR:-/logs}"
export EVOROUND_VERIFIER_DIR="${EVOROUND_VERIFIER_DIR:-$EVOROUND_LOGS_DIR/verifier}"
export EVOROUND_TESTS_DIR="${EVOROUND_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
export SOLUTION_DIR="${SOLUTION_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
mkdir -p "$EVOROUND_VERIFIER_DIR" 2>/dev/null || true
# --- end of evoround import preamble ---
"""

CHANGE_SYNONYMS: dict[str, ChangeType] = {
    "extension": ChangeType.extension,
    "extend": ChangeType.extension,
    "addition": ChangeType.extension,
    "add": ChangeType.extension,
    "feature": ChangeType.extension,
    "new": ChangeType.extension,
    "new_requirement": ChangeType.extension,
    "correction": ChangeType.correction,
    "correct": ChangeType.correction,
    "fix": ChangeType.correction,
    "modification": ChangeType.correction,
    "modify": ChangeType.correction,
    "refinement": ChangeType.correction,
    "conflict": ChangeType.conflict,
    "contradiction": ChangeType.conflict,
    "reversal": ChangeType.conflict,
    "revert": ChangeType.conflict,
}


class ImportError_(ValueError):
    """The source is not a task of the format the importer expects."""


@dataclass
class ImportedRound:
    instruction: str
    solution_dir: Path | None
    tests_dir: Path | None
    title: str = ""
    change_types: list[ChangeType] = field(default_factory=list)
    name: str = ""
    """The step/round name in the source (``round-1``, ``scaffold``, ``round_1``)."""
    shared_tests_dir: Path | None = None
    """Task-level ``tests/`` (Harbor): merged under the step's own tests (the step wins)."""
    workdir_dir: Path | None = None
    """Harbor's ``steps/<s>/workdir/`` (files put into the workspace, ``setup.sh`` run)."""
    min_reward: float | dict[str, float] | None = None
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float | None = None
    verifier_env: dict[str, str] = field(default_factory=dict)
    healthcheck: dict[str, Any] | None = None
    artifacts: list[str] = field(default_factory=list)


@dataclass
class ImportedTask:
    name: str
    source_format: str
    rounds: list[ImportedRound]
    description: str = ""
    environment_dir: Path | None = None
    workspace_dir: Path | None = None
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    tags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things the author should look at after importing (printed by the CLI): every source
    field evoround does not honour is named here."""
    source_name: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    activity: str | None = None
    style: str | None = None
    workdir: str | None = None
    image: str | None = None
    network: bool | None = None
    env: dict[str, str] = field(default_factory=dict)
    verifier_env: dict[str, str] = field(default_factory=dict)
    solution_env: dict[str, str] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    min_reward: float | dict[str, float] | None = None
    nonzero_exit: Literal["fail", "ignore", "error"] = "ignore"
    """Harbor reads only the reward; harbor_multiturn treats a non-zero exit as an error."""


_CANARY = re.compile(r"^\s*(<!--.*canary.*-->|#.*canary.*)\s*$", re.I)


def strip_canary(text: str) -> str:
    """Harbor drops leading canary lines (``<!-- ... canary ... -->`` or ``# ... canary ...``)
    and the blank lines after them before an instruction reaches the agent."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and _CANARY.match(lines[i]):
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
    return "".join(lines[i:])


def read_text(path: Path) -> str:
    """A source file as UTF-8 text, or one ImportError_ naming it (never a traceback)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ImportError_(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ImportError_(
            f"{path}: not UTF-8 text: byte 0x{data[e.start]:02x} on line {line}"
        ) from None


def read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise ImportError_(f"{path}: invalid TOML: {e}") from None


def positive_number(table: dict[str, Any], key: str, label: str) -> float | None:
    """``table[key]`` as a positive number (TOML int or float), None when absent."""
    v = table.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < float("inf"):
        raise ImportError_(f"{label}.{key} = {v!r}: must be a positive number")
    return v


def step_dir_name(name: Any, label: str) -> str:
    """A step or round name used as a folder name under ``steps/``: one plain path part."""
    if not isinstance(name, str) or not name:
        raise ImportError_(f"{label}.name: missing, or not a string (got {name!r})")
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        raise ImportError_(f"{label}.name {name!r}: must name a folder directly under steps/")
    return name


def change_types_of(value: Any) -> list[ChangeType]:
    """Map Harbor's change-type spellings (str, list, or {type = ...}) to evoround's."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = value.get("type") or value.get("change_type") or value.get("kind")
    items = value if isinstance(value, list) else [value]
    out: list[ChangeType] = []
    for item in items:
        if isinstance(item, dict):
            out += change_types_of(item)
            continue
        key = str(item).strip().lower().replace("-", "_").replace(" ", "_")
        ct = CHANGE_SYNONYMS.get(key)
        if ct is not None and ct not in out:
            out.append(ct)
    return out


def slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    return s or "imported-task"


def memory_mb_of(value: Any) -> int | None:
    """``2048``, ``"2G"``, ``"512M"`` -> MiB."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)i?[bB]?\s*", str(value))
    if not m:
        return None
    n, unit = float(m.group(1)), m.group(2).lower()
    return int(n * {"k": 1 / 1024, "m": 1, "g": 1024, "": 1}[unit])


def rewrite_harbor_paths(text: str) -> str:
    """Replace Harbor's absolute paths in a bash script by engine variables, each in the
    form its quoting context expands (see :mod:`._paths`), with a preamble defining them."""
    out = rewrite_shell(text)
    if out == text:
        return text
    lines = out.splitlines(keepends=True)
    head = lines[0] if lines and lines[0].startswith("#!") else ""
    body = "".join(lines[1:] if head else lines)
    return head + PREAMBLE + body


def rewrite_inline(text: str) -> str:
    """Harbor paths in a one-line command (a healthcheck): each with its Harbor default, so
    it works whether or not the engine sets the variable."""
    return substitute(text, lambda var, harbor: "${" + var + ":-" + harbor + "}")


def _copy_tree(src: Path, dest: Path, notes: list[str], label: str) -> None:
    """Copy a directory, rewriting Harbor paths in shell and Python files; note the rest."""
    for p in sorted(src.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        rel = p.relative_to(src)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _text_or_none(p)
        if text is None or not has_harbor_path(text):
            shutil.copy2(p, target)
            continue
        new = _rewritten(p, text)
        if new is None:
            shutil.copy2(p, target)
            notes.append(
                f"{label}/{rel.as_posix()} uses Harbor's absolute paths (/app, /tests, "
                "/solution, /logs): left as is, so it works only where those folders are "
                "what Harbor makes them; evoround's verifier reads the reward from its own "
                "folder ($EVOROUND_VERIFIER_DIR), never /logs/verifier: edit it to use the "
                "EVOROUND_* variables"
            )
            continue
        target.write_text(new, encoding="utf-8")
        shutil.copymode(p, target)


def _text_or_none(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _rewritten(p: Path, text: str) -> str | None:
    """The file with its Harbor paths rewritten, or None when its kind cannot be."""
    if p.suffix == ".sh" or (text.startswith("#!") and "sh" in text.splitlines()[0]):
        return rewrite_harbor_paths(text)
    if p.suffix == ".py":
        return rewrite_python(text)
    return None


def workspace_of(env: Path) -> Path | None:
    """The initial workspace a Harbor task ships beside its Dockerfile, if any."""
    for name in ("workspace", "app", "files"):
        if (env / name).is_dir():
            return env / name
    return None


def _dockerfile_workdir(src: Path) -> str | None:
    """The last ``WORKDIR`` of a Dockerfile (the file itself is copied verbatim: its own
    ``FROM`` is what runs; see ``--base-image-map`` for substitutions)."""
    workdir = None
    for m in re.finditer(r"^\s*WORKDIR\s+(\S+)", src.read_text(encoding="utf-8"), re.M | re.I):
        workdir = m.group(1)
    return workdir


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def toml_value(v: Any) -> str:
    """One TOML value (inline form): strings, numbers, booleans, lists, tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v) if isinstance(v, int) or v == v else "nan"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        items = ", ".join(f"{toml_key(str(k))} = {toml_value(x)}" for k, x in v.items())
        return "{ " + items + " }"
    return json.dumps(str(v))


def _table(lines: list[str], header: str, doc: dict[str, Any]) -> None:
    scalars = {k: v for k, v in doc.items() if not isinstance(v, dict) and not _is_aot(v)}
    if header:
        lines.append(header)
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in scalars.items()]
    lines.append("")


def _is_aot(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def toml_dump(doc: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer (no TOML writer among the dependencies): tables become
    ``[a.b]`` sections, lists of tables ``[[a]]``, everything else inline values."""
    lines: list[str] = []
    _table(lines, f"[{prefix}]" if prefix else "", doc)
    for k, v in doc.items():
        key = f"{prefix}.{toml_key(k)}" if prefix else toml_key(k)
        if isinstance(v, dict):
            lines.append(toml_dump(v, key))
        elif _is_aot(v):
            for item in v:
                lines.append(f"[[{key}]]")
                lines += [f"{toml_key(a)} = {toml_value(b)}" for a, b in item.items()]
                lines.append("")
    return "\n".join(lines)


def _merge_tests(r: ImportedRound, dest: Path, notes: list[str], label: str) -> None:
    """Harbor uploads task-level ``tests/`` then the step's ``tests/`` into /tests."""
    if r.shared_tests_dir is not None and r.shared_tests_dir.is_dir():
        _copy_tree(r.shared_tests_dir, dest, notes, label)
    if r.tests_dir is not None and r.tests_dir.is_dir():
        _copy_tree(r.tests_dir, dest, notes, label)


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()[:90]
    return ""


def write_task(imported: ImportedTask, out_dir: Path) -> Path:
    """Write ``imported`` as an evoround task in ``out_dir`` (which must not exist yet).

    The task's files are copied first, then ``task.toml`` is the task model itself
    (``TaskFile``) filled and dumped, so an importer cannot write a key the loader does not
    know. A value the model refuses raises the loader's own TaskFormatError (naming the
    field in task.toml), after every file problem, as when the loader read it back."""
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ImportError_(f"{out_dir}: already exists and is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir, has_dockerfile = _write_environment(imported, out_dir)
    _write_workspace(imported, out_dir)
    retires = _write_rounds(imported, out_dir)
    settings = _TaskSettings(workdir, has_dockerfile, _activity(imported))
    if not has_dockerfile and not imported.image:
        imported.notes.append("no environment/Dockerfile in the source: set [environment] by hand")
    if imported.style is None:
        imported.notes.append("style: the source names none; 'contractual' assumed")
    task_file = _task_file(imported, settings, retires, out_dir / "task.toml")
    doc = task_file.model_dump(exclude_defaults=True)
    (out_dir / "task.toml").write_text(_header(imported) + toml_dump(doc), encoding="utf-8")
    return out_dir


@dataclass(frozen=True)
class _TaskSettings:
    """What ``write_task`` decides from the copied files and the source, for the model."""

    workdir: str
    has_dockerfile: bool
    activity: str


def _header(imported: ImportedTask) -> str:
    return (
        f"# Imported from a {imported.source_format} task by `evoround tasks import`.\n"
        "# Each round's tests/test.sh is a cumulative script suite that writes a reward file;\n"
        "# earlier rounds' test files are retired so the latest suite replaces them.\n"
    )


def _write_environment(imported: ImportedTask, out_dir: Path) -> tuple[str, bool]:
    """Copy ``environment/``; the workdir is the source's, else the Dockerfile's, else /app."""
    workdir = imported.workdir
    has_dockerfile = False
    if imported.environment_dir and imported.environment_dir.is_dir():
        env_out = out_dir / "environment"
        shutil.copytree(imported.environment_dir, env_out, dirs_exist_ok=True)
        df = env_out / "Dockerfile"
        if df.is_file():
            workdir = workdir or _dockerfile_workdir(df)
            has_dockerfile = True
    return workdir or "/app", has_dockerfile


def _write_workspace(imported: ImportedTask, out_dir: Path) -> None:
    ws_out = out_dir / "workspace"
    ws_out.mkdir(exist_ok=True)
    if imported.workspace_dir and imported.workspace_dir.is_dir():
        shutil.copytree(imported.workspace_dir, ws_out, dirs_exist_ok=True)


def _write_rounds(imported: ImportedTask, out_dir: Path) -> list[list[str]]:
    """Write each round's folder; returns what each round retires.

    Harbor's suites are cumulative scripts: each round's suite replaces the last, so a
    round retires every earlier test file its own suite does not bring again."""
    active: set[str] = set()
    retires: list[list[str]] = []
    for i, r in enumerate(imported.rounds, start=1):
        d = out_dir / "rounds" / f"{i:02d}"
        _write_round(r, i, d, imported.notes)
        files = {
            p.relative_to(d / "tests").as_posix() for p in (d / "tests").rglob("*") if p.is_file()
        }
        retires.append(sorted(active - files))
        active = files
        if not r.change_types:
            imported.notes.append(f"round {i}: no change type found; set change_types in task.toml")
    return retires


def _write_round(r: ImportedRound, i: int, d: Path, notes: list[str]) -> None:
    """``rounds/NN``: instruction, reference solution, tests, workdir files."""
    d.mkdir(parents=True)
    (d / "instruction.md").write_text(r.instruction.rstrip() + "\n", encoding="utf-8")
    if r.solution_dir and r.solution_dir.is_dir():
        _copy_tree(r.solution_dir, d / "solution", notes, f"rounds/{i:02d}/solution")
    else:
        raise ImportError_(
            f"round {i} ({r.name or i}): no solution directory (solution/solve.sh); "
            "evoround needs each round's reference solution for the oracle and SR"
        )
    _merge_tests(r, d / "tests", notes, f"rounds/{i:02d}/tests")
    if r.workdir_dir is not None and r.workdir_dir.is_dir():
        _copy_tree(r.workdir_dir, d / "workdir", notes, f"rounds/{i:02d}/workdir")


def _activity(imported: ImportedTask) -> str:
    """The source's activity, else derived from the change types (and said so in a note)."""
    if imported.activity is not None:
        return imported.activity
    kinds = {c for r in imported.rounds for c in r.change_types}
    activity = "spec_evolution" if kinds - {ChangeType.extension} else "construction"
    imported.notes.append(
        f"activity: the source names none (EvoCode-Bench's task.toml has no activity or "
        f"style field); derived {activity!r} from the change types (set [task] activity "
        "by hand if the benchmark's table says otherwise)"
    )
    return activity


# --- task.toml: the task model, filled from the imported task ----------------------------


def _task_file(
    imported: ImportedTask, settings: _TaskSettings, retires: list[list[str]], path: Path
) -> TaskFile:
    """The whole task.toml as the model; refused values are the loader's TaskFormatError."""
    problems = _Problems()
    workdir = settings.workdir
    meta = problems.check(("task",), partial(_task_meta, imported, settings.activity))
    environment = problems.check(("environment",), partial(_environment, imported, settings))
    verifier = problems.check(("verifier",), partial(_verifier, imported))
    artifacts = problems.check(
        ("artifacts",),
        partial(_ARTIFACTS.validate_python, _in_workspace(imported.artifacts, workdir)),
    )
    rounds = [
        problems.check(("rounds", i), partial(_round_spec, r, i, retires[i], workdir, problems))
        for i, r in enumerate(imported.rounds)
    ]
    problems.raise_any(path)
    # No problem was found, so every part was built.
    assert meta is not None and environment is not None and verifier is not None
    assert artifacts is not None
    return TaskFile(
        task=meta,
        environment=environment,
        verifier=verifier,
        solution=SolutionSpec(env=_strings(imported.solution_env)),
        artifacts=artifacts,
        rounds=[r for r in rounds if r is not None],
    )


_ARTIFACTS: TypeAdapter[list[str]] = TypeAdapter(ArtifactPaths)
_Part = TypeVar("_Part")


class _Problems:
    """The task model's parts are validated one by one; their errors are collected, located
    in task.toml and put in the order the loader reports them (the model's field order), so
    the first error and the count of the others read exactly as when the loader validates
    the written file at once."""

    def __init__(self) -> None:
        self.errors: list[ErrorDetails] = []

    def check(self, loc: tuple[int | str, ...], build: Callable[[], _Part]) -> _Part | None:
        """``build()``, or None with its validation errors kept (located under ``loc``)."""
        try:
            return build()
        except ValidationError as e:
            self.errors += [_relocated(err, loc) for err in e.errors()]
            return None

    def raise_any(self, path: Path) -> None:
        if self.errors:
            in_order = sorted(self.errors, key=lambda err: _field_order(err["loc"]))
            raise task_file_error(path, in_order)


def _relocated(err: ErrorDetails, loc: tuple[int | str, ...]) -> ErrorDetails:
    moved = err.copy()
    moved["loc"] = (*loc, *err["loc"])
    return moved


def _field_order(loc: tuple[int | str, ...]) -> tuple[int, ...]:
    """Where pydantic reports an error at ``loc`` when validating a whole TaskFile: by field
    position at each level (list items by index; a non-field part, e.g. a union member,
    after the fields)."""
    key: list[int] = []
    for depth, part in enumerate(loc):
        if isinstance(part, int):
            key.append(part)
            continue
        fields = known_keys(TaskFile, loc[:depth])
        key.append(fields.index(part) if part in fields else len(fields))
    return tuple(key)


def _strings(env: dict[str, str]) -> dict[str, str]:
    return {k: str(v) for k, v in env.items()}


def _seconds(value: float | None) -> float | None:
    return float(value) if value else None


def _in_workspace(paths: list[str], workdir: str) -> list[str]:
    """Artifact paths in the workspace become relative, so the local sandbox finds them too."""
    pre = workdir.rstrip("/") + "/"
    return [p[len(pre) :] if p.startswith(pre) else p for p in paths]


def _task_meta(imported: ImportedTask, activity: str) -> TaskMeta:
    return TaskMeta(
        name=slug(imported.name),
        description=imported.description.strip(),
        activity=Activity(activity),
        style=Style(imported.style or "contractual"),
        tags=list(dict.fromkeys(["imported", imported.source_format, *imported.tags])),
        source_name=imported.source_name,
        metadata=imported.metadata,
    )


def _environment(imported: ImportedTask, settings: _TaskSettings) -> EnvironmentSpec:
    """``[environment]``: a source image without a Dockerfile of its own sets none."""
    defaults = EnvironmentSpec()
    no_dockerfile = bool(imported.image) and not settings.has_dockerfile
    return EnvironmentSpec(
        workdir=settings.workdir,
        image=imported.image or None,
        dockerfile="" if no_dockerfile else defaults.dockerfile,
        cpus=float(imported.cpus) if imported.cpus else defaults.cpus,
        memory_mb=int(imported.memory_mb) if imported.memory_mb else defaults.memory_mb,
        network=defaults.network if imported.network is None else bool(imported.network),
        agent_timeout_sec=_seconds(imported.agent_timeout_sec) or defaults.agent_timeout_sec,
        verifier_timeout_sec=(
            _seconds(imported.verifier_timeout_sec) or defaults.verifier_timeout_sec
        ),
        env=_strings(imported.env),
    )


def _verifier(imported: ImportedTask) -> VerifierSpec:
    """Harbor's suites are scripts that write a reward (``tests/test.sh``); a step's
    ``min_reward`` keeps Harbor's meaning (an early stop, never the pass test)."""
    min_reward = imported.min_reward
    return VerifierSpec(
        kind="script",
        script="test.sh",
        nonzero_exit=imported.nonzero_exit,
        min_reward=VerifierSpec().min_reward if min_reward is None else min_reward,
        min_reward_semantics="early_stop",
        env=_strings(imported.verifier_env),
    )


def _round_spec(
    r: ImportedRound, i: int, retires: list[str], workdir: str, problems: _Problems
) -> RoundSpec:
    """``[[rounds]]`` entry ``i`` (0-based); its title falls back to the first heading.

    A refused healthcheck is kept as a problem and the round checked without it, so the
    round's other problems are counted too."""
    healthcheck = None
    if r.healthcheck:
        healthcheck = problems.check(
            ("rounds", i, "healthcheck"), partial(_healthcheck, r.healthcheck)
        )
    return RoundSpec(
        title=r.title or _first_heading(r.instruction) or r.name,
        name=r.name,
        change_types=list(r.change_types),
        retires=retires,
        min_reward=r.min_reward,
        agent_timeout_sec=_seconds(r.agent_timeout_sec),
        verifier_timeout_sec=_seconds(r.verifier_timeout_sec),
        verifier_env=_strings(r.verifier_env),
        healthcheck=healthcheck,
        artifacts=_in_workspace(r.artifacts, workdir),
    )


def _healthcheck(hc: dict[str, Any]) -> HealthcheckSpec:
    """Harbor's healthcheck settings; its command's Harbor paths get their defaults inline."""
    return HealthcheckSpec.model_validate({**hc, "command": rewrite_inline(str(hc["command"]))})
