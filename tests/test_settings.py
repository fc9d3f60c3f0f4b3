"""``EVOROUND_*`` variables: read afresh, typed, and a bad one is one clear line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from evoround.settings import SettingsError, evoround_home, settings


def test_read_afresh_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVOROUND_HOME", str(tmp_path / "a"))
    assert evoround_home() == tmp_path / "a"
    monkeypatch.setenv("EVOROUND_HOME", str(tmp_path / "b"))
    assert evoround_home() == tmp_path / "b"
    monkeypatch.setenv("EVOROUND_INFRA_RETRIES", "7")
    assert settings().infra_retries == 7


def test_read_again_only_when_a_source_changed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The last settings are given again while nothing they are read from changed; a
    variable, the working folder or a config file's bytes (same size, same instant) that
    changed are read afresh, and a bad value is refused every time."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVOROUND_HOME", str(tmp_path / "a"))
    first = settings()
    assert settings() is first
    with pytest.raises(ValidationError):
        first.infra_retries = 9  # shared, so frozen
    (tmp_path / "evoround.toml").write_text("infra_retries = 4\n")
    assert settings().infra_retries == 4
    (tmp_path / "evoround.toml").write_text("infra_retries = 5\n")
    assert settings().infra_retries == 5
    monkeypatch.setenv("EVOROUND_INFRA_RETRIES", "6")
    assert settings().infra_retries == 6
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.delenv("EVOROUND_INFRA_RETRIES")
    assert settings().infra_retries == 3
    monkeypatch.setenv("EVOROUND_INFRA_RETRIES", "many")
    for _ in range(2):
        with pytest.raises(SettingsError):
            settings()


def test_defaults_without_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVOROUND_HOME", "EVOROUND_INFRA_RETRIES", "EVOROUND_BASE_IMAGE"):
        monkeypatch.delenv(name, raising=False)
    s = settings()
    assert s.home == Path.home() / ".cache" / "evoround"
    assert s.infra_retries == 3 and s.base_image is None


def test_a_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_INFRA_RETRIES", "many")
    with pytest.raises(SettingsError, match=r"EVOROUND_INFRA_RETRIES='many'"):
        settings()


def test_the_command_reports_a_bad_variable_in_one_line(tmp_path: Path) -> None:
    env = {"EVOROUND_INFRA_RETRIES": "many", "EVOROUND_HOME": str(tmp_path), "PATH": "/usr/bin"}
    res = subprocess.run(
        [sys.executable, "-m", "evoround.cli", "run", "--agent", "oracle", "--out", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "EVOROUND_INFRA_RETRIES='many'" in res.stderr and "Traceback" not in res.stderr


def test_base_image_map_is_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_BASE_IMAGE_MAP", '{"ubuntu:24.04": "evoround-base:bookworm"}')
    assert settings().base_image_map == {"ubuntu:24.04": "evoround-base:bookworm"}
    from evoround.cli._app import parse_image_map

    # --base-image-map adds to the standing map and wins on the same FROM
    assert parse_image_map(["ubuntu:24.04=mine:1", "golang:1.22=evoround-base:bookworm"]) == {
        "ubuntu:24.04": "mine:1",
        "golang:1.22": "evoround-base:bookworm",
    }
    monkeypatch.setenv("EVOROUND_BASE_IMAGE_MAP", "ubuntu=local")
    with pytest.raises(
        SettingsError, match="EVOROUND_BASE_IMAGE_MAP='ubuntu=local': not valid JSON"
    ):
        settings()
