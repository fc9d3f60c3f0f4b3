"""Checks ``run`` makes before it writes anything, and the exit code it ends with.

Every check here raises :class:`UsageError` with one line naming the option and the
value, so that a typo costs the user a second, not a half-written job folder that a
corrected command then refuses as a config change. The exit-code contract (documented
in ``evoround --help`` and the README) lives here too:

- 0: every attempt was evaluated (whatever the score);
- 1: the job finished, but some rounds could not be evaluated (infra, model_api or
  judge errors); one line on stderr says how many and why;
- 2: usage or task error: nothing ran (and nothing was written);
- 130: interrupted (Ctrl-C or SIGTERM); the job is resumable with the printed command.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from evoround.tasks import Task

EXIT_CODES_HELP = (
    "Exit codes: 0 every attempt was evaluated (whatever the score); 1 the job finished "
    "but some rounds could not be evaluated (infra, model_api, judge errors: stderr says "
    "how many and why); 2 usage or task error, nothing ran; 130 interrupted (resumable)."
)


PREFLIGHT_TIMEOUT_SEC = 5.0


class UsageError(ValueError):
    """A bad option value, found before anything was written (exit 2)."""


class SandboxChoice(StrEnum):
    local = "local"
    docker = "docker"


class OnFailChoice(StrEnum):
    """``--on-fail``: a choice, so ``--help`` lists it and click refuses a typo."""

    stop = "stop"
    continue_ = "continue"


class ExecutorChoice(StrEnum):
    local = "local"
    ray = "ray"


_JOB_NAME = re.compile(r"^[^./\\\x00-\x1f-][^/\\\x00-\x1f]*$")
"""One folder name: no separator, no control character, not hidden (``.judge-cache`` lives
beside the jobs), not an option look-alike."""


def check_job_name(name: str) -> str:
    """``--job`` names one folder directly under ``--out``: never a path, never ``..``."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise UsageError(
            f"--job {name!r}: a job name is one folder name under --out, not a path "
            "(use --out to choose where jobs go)"
        )
    if not _JOB_NAME.match(name) or len(name) > 200:
        raise UsageError(
            f"--job {name!r}: a job name may not start with . or - nor hold control "
            "characters (at most 200 characters)"
        )
    return name


def check_out_dir(out: Path) -> None:
    """``--out`` must be (or become) a folder: not a file, not under a file."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise UsageError(f"--out {str(out)!r}: {p} is a file, not a folder")
            _probe_writable(out, p)
            return


def _probe_writable(out: Path, folder: Path) -> None:
    """Create (and remove) a folder in ``folder``, the nearest existing one: a read-only or
    virtual file system (``/proc``) is refused now, not once the tasks have loaded."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".evoround-probe-", dir=folder))
    except OSError as e:
        raise UsageError(
            f"--out {str(out)!r}: cannot create folders in {folder}: {e.strerror or e}"
        ) from None


MAX_SCRIPT_BYTES = 20_000_000
"""Largest YAML script (agent or replay): the pure-Python YAML parser needs about a minute
for 50 MB, so a wrong file is refused by its size, not waited for."""


def check_script_size(flag: str, script: Path) -> None:
    size = script.stat().st_size
    if size > MAX_SCRIPT_BYTES:
        raise UsageError(
            f"{flag} {str(script)!r}: is {size / 1e6:.0f} MB; a script is at most "
            f"{MAX_SCRIPT_BYTES / 1e6:.0f} MB (is it the right file?)"
        )


def check_script(agent: str, script: Path | None) -> None:
    """``--script`` belongs to ``--agent scripted`` and must be a readable UTF-8 file."""
    if script is None:
        return
    if agent != "scripted":
        raise UsageError(
            f"--script {str(script)!r} is only used by --agent scripted (got --agent {agent})"
        )
    if not script.exists():
        raise UsageError(f"--script {str(script)!r}: no such file")
    if not script.is_file():
        raise UsageError(f"--script {str(script)!r}: not a file")
    check_script_size("--script", script)
    try:
        script.read_bytes().decode("utf-8")
    except OSError as e:
        raise UsageError(f"--script {str(script)!r}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(
            f"--script {str(script)!r}: not UTF-8 text (byte at offset {e.start})"
        ) from None


def check_model_options(
    agent: str, model_agents: tuple[str, ...], given: dict[str, object]
) -> None:
    """Model options given to a model-free agent would be silently dropped: refuse them."""
    from evoround.scaffolds import is_model_agent

    if agent in model_agents or is_model_agent(agent):
        return
    used = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None]
    if used:
        raise UsageError(
            f"{', '.join(used)} only apply to model agents ({', '.join(model_agents)}); "
            f"--agent {agent} calls no model"
        )


def check_litellm_model(option: str, model: str | None) -> None:
    """A litellm model name must say its provider (``openai/gpt-4o``), or be one litellm
    knows by its bare name (``gpt-4o``): else every round fails on "LLM Provider NOT
    provided". Only a bare name costs the (slow) litellm import."""
    if not model or "/" in model:
        return
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no price fetch
    import litellm

    litellm.suppress_debug_info = True
    try:
        litellm.get_llm_provider(model)
    except Exception:
        raise UsageError(
            f"{option} {model!r}: litellm cannot tell its provider; name it as "
            "PROVIDER/NAME (e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5)"
        ) from None


def check_budget(agent: str, model: str | None, max_cost: float | None) -> None:
    """A USD budget needs a price: a model litellm cannot price would make every round's
    cost unknown and the budget a promise nobody keeps."""
    if max_cost is None:
        return
    from evoround.scaffolds import has_price, is_model_agent

    if not is_model_agent(agent):
        raise UsageError(f"--max-cost {max_cost:g}: --agent {agent} calls no model")
    if not _installed("litellm"):
        raise UsageError(f"--max-cost needs litellm's price map: {MODELS_EXTRA}")
    if not has_price(model):
        raise UsageError(
            f"--max-cost {max_cost:g}: litellm's price map has no price for --model "
            f"{model or '(default)'}; use --max-tokens-total instead"
        )


def check_url(option: str, url: str | None) -> None:
    """An endpoint must be an http(s) URL with a host: ``localhost:8000`` is a typo."""
    if url is None:
        return
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a non-numeric port
    except ValueError as e:
        raise UsageError(f"{option} {url!r}: not a URL ({e})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {url!r}: expected an http:// or https:// URL with a host")


def preflight(option: str, url: str | None, timeout: float = PREFLIGHT_TIMEOUT_SEC) -> None:
    """One request to ``url`` before any attempt: an endpoint that is down fails in
    seconds with its URL named, instead of every round being recorded ``model_api``.

    Any HTTP answer (even 401 or 404) proves the endpoint is there; only a failure to
    connect (refused, unknown host, connect timeout) is an error.
    """
    if url is None:
        return
    check_url(option, url)
    import httpx

    try:
        httpx.get(url, timeout=httpx.Timeout(timeout, read=timeout), follow_redirects=False)
    except (httpx.ConnectError, httpx.ConnectTimeout) as e:
        why = re.sub(r"^\[Errno -?\d+\]\s*", "", str(e).strip()) or type(e).__name__
        raise UsageError(f"{option} {url}: unreachable ({why}); nothing was run") from None
    except httpx.HTTPError:
        return  # connected: a slow or odd answer is the agent's retries' business


def resume_command(
    job_dir: Path,
    *,
    script: Path | None = None,
    proxy: bool = False,
    executor: str = "local",
    ray_address: str | None = None,
) -> str:
    """The command that continues an interrupted job, exactly as it must be typed.

    ``job.json`` locks the script by digest only, so a scripted job's resume names the
    script (absolute: the user may resume from elsewhere); options that are not locked but
    shape how the job runs (the proxy, the executor) are repeated as given.
    """
    args = ["evoround", "run", "--resume", str(job_dir)]
    if script is not None:
        args += ["--script", str(script.resolve())]
    if proxy:
        args.append("--proxy")
    if executor != "local":
        args += ["--executor", executor]
    if ray_address:
        args += ["--ray-address", ray_address]
    return shlex.join(args)


def check_run_options(
    *,
    agent: str,
    script: Path | None,
    model: str | None,
    api_base: str | None,
    max_tokens: int | None,
    proxy: bool,
    sandbox: str,
    executor: str,
    judge_model: str | None,
    judge_api_base: str | None,
    out_dir: Path,
    job_name: str | None,
    given: dict[str, object],
    model_agents: tuple[str, ...] | None = None,
    reachable: bool = True,
) -> None:
    """Every ``run`` option that can be checked without running anything, cheapest first.

    ``given``: options the user typed whose meaning depends on another option (None when
    left at the default). ``reachable``: also send the preflight requests to the model
    and judge endpoints (last, as they take up to a few seconds).
    """
    from evoround.scaffolds import MODEL_AGENTS

    agents = MODEL_AGENTS if model_agents is None else model_agents
    check_settings()
    check_out_dir(out_dir)
    check_extras(agent, executor, judge_model=judge_model, proxy=proxy)
    if job_name is not None:
        check_job_name(job_name)
    check_script(agent, script)
    if agent == "scripted" and script is None:
        raise UsageError("--agent scripted needs --script PATH (a YAML script)")
    check_agent_options(agent, agents, model, api_base, max_tokens, given)
    check_judge_options(judge_model, given)
    check_placement(executor, sandbox, given)
    if proxy:
        check_proxy(agent, agents, model, executor)
    check_models(agent, model, judge_model, given)
    check_url("--api-base", api_base)
    check_url("--judge-api-base", judge_api_base)
    if reachable:
        preflight("--api-base", api_base)
        if judge_model is not None and judge_api_base != api_base:
            preflight("--judge-api-base", judge_api_base)


def check_settings() -> None:
    """A malformed EVOROUND_* variable fails now, named, not mid-job."""
    from evoround.settings import SettingsError, settings

    try:
        settings()
    except SettingsError as e:
        raise UsageError(str(e)) from None


def check_agent_options(
    agent: str,
    model_agents: tuple[str, ...],
    model: str | None,
    api_base: str | None,
    max_tokens: int | None,
    given: dict[str, object],
) -> None:
    """Model options belong to model agents, ``--max-tokens`` to evoround-agent alone."""
    model_given = {
        "model": model,
        "api_base": api_base,
        "max_steps": given.get("max_steps"),
        "temperature/--reasoning-effort/--model-arg": given.get("model_args"),
    }
    check_model_options(agent, model_agents, {**model_given, "max_tokens": max_tokens})
    if max_tokens is not None and agent != "evoround-agent":
        raise UsageError(f"--max-tokens is used by --agent evoround-agent only (got {agent})")


_JUDGE_ARG_FLAGS = "--judge-temperature/--judge-reasoning-effort/--judge-model-arg"


def check_judge_options(judge_model: str | None, given: dict[str, object]) -> None:
    """Judge options without ``--judge-model`` would be silently dropped: refuse them."""
    if judge_model is not None:
        return
    names = ("judge_api_base", "judge_votes", "judge_model_args")
    stray = [k for k in names if given.get(k) is not None]
    if stray:
        named = {"judge_model_args": _JUDGE_ARG_FLAGS}
        flags = ", ".join(named.get(k, "--" + k.replace("_", "-")) for k in stray)
        raise UsageError(f"{flags} need --judge-model (no judge runs without it)")


def check_placement(executor: str, sandbox: str, given: dict[str, object]) -> None:
    """Options of one executor or one sandbox given to another."""
    if given.get("ray_address") is not None and executor != "ray":
        raise UsageError("--ray-address needs --executor ray")
    if given.get("keep_snapshots") and sandbox != "docker":
        raise UsageError("--keep-snapshots keeps Docker images: it needs --sandbox docker")


def check_proxy(
    agent: str, model_agents: tuple[str, ...], model: str | None, executor: str
) -> None:
    """``--proxy`` records a model agent's calls on this machine's loopback."""
    if agent not in model_agents or not model:
        raise UsageError(
            "--proxy records model calls: it needs a model agent and --model "
            f"(one of {', '.join(model_agents)})"
        )
    if executor == "ray":
        raise UsageError("--proxy listens on this machine's loopback: use --executor local")


def check_models(
    agent: str, model: str | None, judge_model: str | None, given: dict[str, object]
) -> None:
    """Model names litellm can route, and a USD budget only for a model with a price."""
    if agent in ("evoround-agent", "mini-swe-agent"):
        check_litellm_model("--model", model)
    check_litellm_model("--judge-model", judge_model)
    max_cost = given.get("max_cost")
    check_budget(agent, model, float(max_cost) if isinstance(max_cost, int | float) else None)


LOCAL_TRUSTED_NOTE = (
    "--sandbox local: {agent} runs on this machine with your user's rights; local is for "
    "trusted agents (Docker isolates untrusted ones)"
)


def check_isolation() -> None:
    """``EVOROUND_LOCAL_ISOLATION`` names a mechanism that works here (one line if not)."""
    from evoround.sandboxes import SandboxError, choose_isolation
    from evoround.settings import settings

    try:
        choose_isolation(settings().local_isolation)
    except SandboxError as e:
        raise UsageError(str(e)) from None


def choose_sandbox(agent: str, sandbox: str | None, reachable: Callable[[], bool]) -> str:
    """The sandbox a run uses when ``--sandbox`` was not given.

    A model-backed agent writes code nobody has read, so it runs in Docker by default; with
    no engine to reach, the run stops (exit 2) rather than quietly falling back to the
    host. Scripted, oracle and nop agents run what the task or the user wrote: local.
    ``reachable`` probes the engine, only when the answer matters.
    """
    from evoround.scaffolds import is_model_agent

    if sandbox is not None:
        return sandbox
    if not is_model_agent(agent):
        return "local"
    if reachable():
        return "docker"
    raise UsageError(
        f"--agent {agent} runs in Docker by default and no Docker engine is reachable: start "
        "Docker, or pass --sandbox local (trusted agents only)"
    )


def select_tasks(
    tasks: list[Task], include: list[str], exclude: list[str], limit: int | None
) -> list[Task]:
    """``-t/--task``, ``--exclude`` (names or shell globs) and ``--limit``, as Harbor and
    inspect_ai users expect; a pattern that selects nothing is a typo, not an empty job."""
    import fnmatch

    from evoround.tasks import did_you_mean

    names = [t.name for t in tasks]
    for flag, patterns in (("--task", include), ("--exclude", exclude)):
        for p in patterns:
            if not fnmatch.filter(names, p):
                hint = did_you_mean(p, names) or f" (tasks: {', '.join(names[:12])})"
                raise UsageError(f"{flag} {p!r} matches no task{hint}")
    chosen = [t for t in tasks if not include or any(fnmatch.fnmatch(t.name, p) for p in include)]
    chosen = [t for t in chosen if not any(fnmatch.fnmatch(t.name, p) for p in exclude)]
    if not chosen:
        raise UsageError("--task/--exclude leave no task to run")
    return chosen[:limit] if limit is not None else chosen


def check_task_rules(tasks: list[Task]) -> None:
    """Rule checks must name a rule that exists: the loader cannot know the rule registry
    (tasks sit below verifiers), and a typo would otherwise score ``error`` on every round
    of a run that already cost its time."""
    from evoround.tasks import TaskFormatError, did_you_mean
    from evoround.verifiers.checklist import RULES

    known = sorted(RULES)
    for task in tasks:
        groups = [("checks", task.config.checks)]
        groups += [(f"rounds[{r.index}].checks", r.spec.checks) for r in task.rounds]
        for where, checks in groups:
            for n, c in enumerate(checks, start=1):
                if c.kind.value != "rule":
                    continue
                field = f"{where}[{n}].rule"
                if not c.rule:
                    why = "a rule check needs `rule` (see `evoround tasks schema`)"
                    raise TaskFormatError(task.path / "task.toml", field, why)
                if c.rule not in RULES:
                    hint = did_you_mean(c.rule, known) or f" (known: {', '.join(known)})"
                    raise TaskFormatError(
                        task.path / "task.toml", field, f"unknown rule {c.rule!r}{hint}"
                    )


class ReasoningEffort(StrEnum):
    minimal = "minimal"
    low = "low"
    medium = "medium"
    high = "high"


def parse_model_args(
    temperature: float | None,
    reasoning_effort: str | None,
    model_arg: list[str],
    flag: str = "--model-arg",
) -> dict[str, object]:
    """``--temperature``, ``--reasoning-effort`` and ``--model-arg KEY=VALUE`` as the litellm
    keyword arguments a model agent sends with every call. A VALUE that is JSON (``0.5``,
    ``true``, ``{"type": "json_object"}``) is parsed, anything else stays a string."""
    import json

    args: dict[str, object] = {}
    if temperature is not None:
        args["temperature"] = temperature
    if reasoning_effort is not None:
        args["reasoning_effort"] = str(getattr(reasoning_effort, "value", reasoning_effort))
    for item in model_arg:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE (e.g. top_p=0.9)")
        if key in args:
            raise UsageError(f"{flag} {item!r}: {key} is already set")
        if key in _RESERVED_MODEL_ARGS:
            raise UsageError(f"{flag} {item!r}: {key} is set by evoround itself")
        try:
            args[key] = json.loads(raw)
        except ValueError:
            args[key] = raw
    return args


_RESERVED_MODEL_ARGS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "api_base",
        "api_key",
        "timeout",
        "num_retries",
        "extra_headers",
        "stream",
    }
)
"""Keyword arguments the agents set per call: a --model-arg may not override them."""


MODELS_EXTRA = "pip install 'evoround[models]'"


def check_extras(
    agent: str, executor: str, *, judge_model: str | None = None, proxy: bool = False
) -> None:
    """What ``pip install evoround`` leaves out is one line naming the pip command."""
    if executor == "ray" and not _installed("ray"):
        raise UsageError("--executor ray needs Ray: pip install 'evoround[ray]'")
    if not _installed("litellm"):
        if agent == "evoround-agent":
            raise UsageError(f"--agent evoround-agent needs litellm: {MODELS_EXTRA}")
        if judge_model is not None:
            raise UsageError(f"--judge-model needs litellm: {MODELS_EXTRA}")
        if proxy:
            raise UsageError(f"--proxy needs litellm (its version pins the proxy): {MODELS_EXTRA}")
    if agent == "mini-swe-agent" and not _installed("minisweagent"):
        raise UsageError(
            "--agent mini-swe-agent needs it installed: pip install 'evoround[mini-swe]'"
        )
    if agent == "claude-code":
        from evoround.scaffolds import bundled_claude

        try:
            binary = bundled_claude()
        except FileNotFoundError:
            raise UsageError(
                "--agent claude-code needs the claude CLI: pip install 'evoround[claude]' "
                "(it bundles one) or set EVOROUND_CLAUDE_BIN"
            ) from None
        if not binary.is_file():
            raise UsageError(f"EVOROUND_CLAUDE_BIN={str(binary)!r}: no such file")


def _installed(module: str) -> bool:
    """Importable, without importing it (Ray takes seconds); a module blocked in
    ``sys.modules`` (None) counts as missing."""
    import importlib.util
    import sys

    if module in sys.modules and sys.modules[module] is None:
        return False
    return importlib.util.find_spec(module) is not None
