"""Every ``EVOROUND_*`` environment variable and the paths derived from them, in one place.

Not here: the variables evoround *sets* for the programs it runs (``EVOROUND_REWARD_FILE``,
``EVOROUND_WORKDIR``, ``EVOROUND_TESTS_DIR`` ... for task scripts; ``EVOROUND_PROXY_LOG``
for the call logger inside the proxy's own venv, which cannot import evoround).

Three sources, highest first: a command-line flag (where one exists, e.g. ``--retry-on-error``
over ``infra_retries``; ``--base-image-map`` adds to ``base_image_map``), the environment
(``EVOROUND_<NAME>``), a config file, the default. Config files are TOML with the same keys
in lower case (``infra_retries = 5``, a ``[base_image_map]`` table): ``./evoround.toml``
(the project) over ``$XDG_CONFIG_HOME/evoround/config.toml`` (the user, default
``~/.config``); ``EVOROUND_CONFIG=PATH`` names one file instead of both. An unknown key
or a bad value in a file is one line naming the file and the key.

Why one module: the engine, the proxy, the CLI and the tests all need the machine-wide
cache; reading the environment in each of them made ``engine.job`` an import hub and
closed an import circle (proxy -> job -> controller -> proxy). Settings are read afresh
whenever the environment or a config file changed, so a test or a child process that
changes them is honoured.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import SettingsError as PydanticSettingsError


class SettingsError(ValueError):
    """An ``EVOROUND_*`` variable that does not parse: one line naming it and its value."""


class Settings(BaseSettings):
    """Read from ``EVOROUND_<NAME>``; the defaults are what a fresh machine gets.

    ``evoround config`` lists every field with its variable, value and description (the
    attribute docstrings below), so this class is the one table of settings.
    """

    model_config = SettingsConfigDict(
        env_prefix="EVOROUND_", extra="ignore", use_attribute_docstrings=True, frozen=True
    )

    home: Path = Field(default_factory=lambda: Path.home() / ".cache" / "evoround")
    """Machine-wide cache: snapshot store, reference states, tools."""

    @field_validator("home")
    @classmethod
    def _home_is_a_folder(cls, v: Path) -> Path:
        if str(v) in ("", "."):  # EVOROUND_HOME= would make the current folder the cache
            raise ValueError("is empty: give a folder for evoround's cache, or unset it")
        for p in (v, *v.parents):  # a file here fails every cache write later, mid-run
            if p.exists():
                if not p.is_dir():
                    raise ValueError(f"{p} is a file, not a folder")
                break
        return v

    proxy_python: str | None = None
    """A Python with litellm[proxy] to use for --proxy instead of building one."""
    infra_retries: int = Field(default=3, ge=0, le=100)
    """Retries of an attempt after an infra failure (run --retry-on-error overrides)."""
    infra_backoff_max: float = Field(default=20.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest wait, in seconds, between infra retries (exponential from 0.5 s)."""
    heartbeat_sec: float = Field(default=60.0, gt=0, le=86400, allow_inf_nan=False)
    """Seconds between the heartbeat lines of plain progress (``run --progress plain``)."""
    ray_head_timeout: float = Field(default=20.0, gt=0, le=50, allow_inf_nan=False)
    """Seconds the Ray head may be unreachable before a --executor ray job stops (resumably,
    with the command that continues it); under Ray's own 60 s."""
    ray_runtime_env: dict[str, Any] | None = None
    """A Ray runtime_env (JSON object) for --executor ray, e.g. ``{"py_modules":
    ["/shared/evoround"]}`` when the nodes have no evoround of their own."""
    base_image: str | None = None
    """The local base image task Dockerfiles build on (``EVOROUND_BASE_IMAGE``)."""
    base_image_map: dict[str, str] = Field(default_factory=dict)
    """Standing ``FROM`` -> local image substitutions, a JSON object
    (``EVOROUND_BASE_IMAGE_MAP='{"ubuntu:24.04": "evoround-base:bookworm"}'``); each
    ``--base-image-map FROM=LOCAL`` adds to (and overrides) it. Recorded in job.json."""
    debian_mirror: str | None = None
    """Debian mirror for images bootstrap (default deb.debian.org)."""
    docker_snapshot: Literal["workspace", "archive", "commit"] | None = None
    """Docker snapshots: workspace (the workdir only, in a host folder when the daemon is
    local; default), archive (the workdir only, streamed as tars) or commit (the container)."""
    local_isolation: Literal["auto", "bwrap", "unshare", "none"] = "auto"
    """Local sandbox isolation: bwrap (bubblewrap), unshare, none; auto: the best that works."""
    local_server: Literal["auto", "always", "off"] = "auto"
    """bwrap sandboxes: run commands through one exec server per sandbox from its second
    command (auto), from its first (always), or a bubblewrap per command (off)."""
    local_show: str | None = None
    """Folders (':'-separated) a bubblewrap sandbox shows read-only beyond the system ones."""
    claude_bin: str | None = None
    """The claude binary for --agent claude-code (default: the claude-agent-sdk's)."""
    judge_api_key: str | None = None
    """API key of the judge model (shown masked)."""
    viewer_url: str | None = None
    """Where ``evoround view`` serves the jobs (``http://HOST:PORT/``): report.html links
    every job and round there (``report --viewer`` overrides; unset: no links out)."""
    chromium: str | None = None
    """A Chromium/Chrome binary for the headless report check."""
    debug: bool = False
    """Show the traceback of an unexpected error instead of one line."""
    harbor_python: str | None = None
    """A Python >= 3.12 with harbor installed, instead of the one install-harbor builds."""
    harbor_version: str | None = None
    """The harbor release install-harbor installs (default: the pinned one)."""
    harbor_agent_kwargs: str | None = None
    """A JSON object of extra constructor arguments for --agent harbor:... (like Harbor's --ak)."""
    config: Path | None = None
    """The one config file to read (TOML) instead of ./evoround.toml and the user's
    ~/.config/evoround/config.toml; environment only."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flag (init) > environment > config files > default."""
        return init_settings, env_settings, _FileSource(settings_cls)


class _FileSource(PydanticBaseSettingsSource):
    """The merged config files (checked first by :func:`file_values`)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        values, _ = file_values()
        return values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(file_values()[0])


def config_files() -> list[Path]:
    """The config files that apply, lowest precedence first (missing ones included)."""
    named = os.environ.get("EVOROUND_CONFIG")
    if named:
        return [Path(named).expanduser()]
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path(xdg) / "evoround" / "config.toml", Path.cwd() / "evoround.toml"]


NOT_IN_FILES = frozenset({"config"})
"""Settings a config file may not hold (which file to read is not read from a file)."""


def file_values() -> tuple[dict[str, Any], dict[str, Path]]:
    """Every key of the config files (later files win) and the file each came from; an
    unknown key, or a file that is not TOML, is a :class:`SettingsError` naming it."""
    values: dict[str, Any] = {}
    origin: dict[str, Path] = {}
    known = [n for n in Settings.model_fields if n not in NOT_IN_FILES]
    for path in config_files():
        if not path.is_file():
            if os.environ.get("EVOROUND_CONFIG"):
                raise SettingsError(f"EVOROUND_CONFIG={str(path)!r}: no such file")
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise SettingsError(f"{path}: cannot read: {e}") from None
        except tomllib.TOMLDecodeError as e:
            raise SettingsError(f"{path}: not valid TOML ({e})") from None
        for key, value in data.items():
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean `{close[0]}`?)" if close else f" (keys: {', '.join(known)})"
                raise SettingsError(f"{path}: unknown key `{key}`{hint}")
            values[key] = value
            origin[key] = path
    return values, origin


SECRET_FIELDS = frozenset({"judge_api_key"})


_LAST: tuple[object, Settings] | None = None
"""The last settings read and what they were read from (see :func:`settings`)."""


def settings() -> Settings:
    """The settings now; a malformed variable or config-file entry is a
    :class:`SettingsError` naming the variable, or the file and the key.

    Read afresh whenever what they are read from changed: the ``EVOROUND_*`` variables,
    ``HOME``, ``XDG_CONFIG_HOME``, the working folder and the config files' bytes (the key,
    a few microseconds). Otherwise the last answer is given again: building them costs about
    10 ms, and a sandbox command read them up to four times (a tenth of a verification)."""
    global _LAST
    key = _source_key()
    last = _LAST
    if last is not None and last[0] == key:
        return last[1]
    got = _read_settings()
    _LAST = (key, got)
    return got


def _source_key() -> object:
    """Everything :func:`_read_settings` reads, as one comparable value."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("EVOROUND_"))
    files: list[tuple[str, bytes | int | None]] = []
    for path in config_files():
        try:
            files.append((str(path), path.read_bytes()))
        except OSError as e:
            files.append((str(path), e.errno))
    return env, os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME"), files


def _read_settings() -> Settings:
    """The settings, read afresh."""
    _, origin = file_values()
    try:
        return Settings()
    except PydanticSettingsError as e:  # a complex value (JSON) that does not parse
        m = re.search(r'field "(\w+)"', str(e))
        name = f"EVOROUND_{m.group(1).upper()}" if m else "EVOROUND_*"
        value = os.environ.get(name, "")
        raise SettingsError(f"{name}={value!r}: not valid JSON ({e.__cause__ or e})") from None
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        var = f"EVOROUND_{field.upper()}" if field else "EVOROUND_*"
        msg = str(first["msg"]).removeprefix("Value error, ")
        if field in origin and var not in os.environ:
            raise SettingsError(
                f"{origin[field]}: {field} = {first.get('input')!r}: {msg}"
            ) from None
        raise SettingsError(f"{var}={first.get('input')!r}: {msg}") from None


def sources() -> dict[str, str]:
    """Where each setting's value comes from: ``environment``, the config
    file's path, or ``default`` (``evoround config`` shows it)."""
    _, origin = file_values()
    out = {}
    for name in Settings.model_fields:
        var = f"EVOROUND_{name.upper()}"
        if var in os.environ:
            out[name] = "environment"  # the variable is named beside it
        elif name in origin:
            out[name] = str(origin[name])
        else:
            out[name] = "default"
    return out


def evoround_home() -> Path:
    """Machine-wide cache (snapshot store, reference states); ``EVOROUND_HOME`` overrides."""
    return settings().home
