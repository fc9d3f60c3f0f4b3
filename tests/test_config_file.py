"""Config files: one settings model for EVOROUND_* variables and config-file keys, with
flag > environment > ./evoround.toml > user config > default, and one line per mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evoround.settings import SettingsError, settings, sources


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A user config and a project folder, with no EVOROUND_* variable set."""
    for var in [v for v in os.environ if v.startswith("EVOROUND_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "evoround").mkdir(parents=True)
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    return tmp_path / "xdg" / "evoround" / "config.toml", tmp_path / "proj" / "evoround.toml"


def test_precedence_env_over_project_over_user_over_default(files, monkeypatch) -> None:
    user, project = files
    user.write_text('infra_retries = 7\ndebian_mirror = "http://user"\nbase_image = "u:1"\n')
    project.write_text(
        'infra_retries = 5\n[base_image_map]\n"ubuntu:24.04" = "evoround-base:bookworm"\n'
    )
    monkeypatch.setenv("EVOROUND_DEBIAN_MIRROR", "http://env")
    s = settings()
    assert s.infra_retries == 5 and s.base_image == "u:1" and s.debian_mirror == "http://env"
    assert s.base_image_map == {"ubuntu:24.04": "evoround-base:bookworm"}
    assert s.infra_backoff_max == 20.0
    where = sources()
    assert where["infra_retries"] == str(project) and where["base_image"] == str(user)
    assert where["debian_mirror"] == "environment"
    assert where["infra_backoff_max"] == "default"
    # a flag wins over all of them: --base-image-map adds to (and overrides) the file's map
    from evoround.cli._app import parse_image_map

    assert parse_image_map(["ubuntu:24.04=mine:1"]) == {"ubuntu:24.04": "mine:1"}


def test_an_unknown_key_is_one_line_naming_file_and_key(files) -> None:
    _, project = files
    project.write_text("infra_retry = 5\n")
    with pytest.raises(SettingsError) as e:
        settings()
    assert str(e.value) == f"{project}: unknown key `infra_retry` (did you mean `infra_retries`?)"


def test_a_bad_value_names_file_and_key(files) -> None:
    user, _ = files
    user.write_text('infra_retries = "many"\n')
    with pytest.raises(SettingsError, match=rf"^{user}: infra_retries = 'many': "):
        settings()
    user.write_text("infra_retries = [\n")
    with pytest.raises(SettingsError, match=rf"^{user}: not valid TOML"):
        settings()


def test_evoround_config_names_the_one_file(files, tmp_path, monkeypatch) -> None:
    _, project = files
    project.write_text("infra_retries = 5\n")
    other = tmp_path / "other.toml"
    other.write_text("infra_retries = 9\n")
    monkeypatch.setenv("EVOROUND_CONFIG", str(other))
    assert settings().infra_retries == 9
    monkeypatch.setenv("EVOROUND_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(SettingsError, match="EVOROUND_CONFIG=.*no such file"):
        settings()


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOROUND_")}
    env |= {"XDG_CONFIG_HOME": str(cwd / "xdg"), "COLUMNS": "200",
            "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "evoround.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_config_lists_the_source_and_run_refuses_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / "evoround.toml").write_text("infra_retries = 4\n")
    res = _cli(tmp_path, "config", "--json")
    assert res.returncode == 0, res.stderr
    rows = {r["key"]: r for r in json.loads(res.stdout)}
    assert rows["infra_retries"]["value"] == "4"
    assert rows["infra_retries"]["source"] == str(tmp_path / "evoround.toml")
    assert rows["home"]["source"] == "default" and rows[None]["variable"] == "EVOROUND_CONFIG"
    (tmp_path / "evoround.toml").write_text("base_image_mapp = {}\n")
    res = _cli(tmp_path, "run", "--agent", "oracle", "--out", str(tmp_path / "runs"))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert (
        "evoround.toml: unknown key `base_image_mapp` (did you mean `base_image_map`?)" in lines[0]
    )
    assert not (tmp_path / "runs").exists()
