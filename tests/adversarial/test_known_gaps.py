"""Targeted forgeries evoround does not detect yet (see :mod:`tests.adversarial.targeted`
and docs/threat-model.md): strict xfails on hardened local, so a defence that catches one
fails here until its name moves to :data:`CAUGHT`, where it must be caught."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evoround.results import Mode, RoundStatus
from evoround.sandboxes._isolation import bwrap_available
from evoround.tasks import load_task
from tests.adversarial.conditional import scaffold
from tests.adversarial.targeted import TARGETED
from tests.helpers import COUNTER, run

CAUGHT = {"twin_aware_reader"}


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
@pytest.mark.xfail(strict=True, reason="a targeted forgery: passes undetected (known gap)")
@pytest.mark.parametrize("name", sorted(set(TARGETED) - CAUGHT))
def test_targeted_forgery_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    agent = scaffold(tmp_path, name, "counter.py", TARGETED[name])
    view = run(tmp_path, agent, tasks=[load_task(COUNTER)], modes=(Mode.mt,), sandbox="local")
    (r1,) = view.records
    assert not r1.passed, "a forged pass went unnoticed"
    assert r1.status is RoundStatus.integrity_violation


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_caught_forgery_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    test_targeted_forgery_is_caught(tmp_path, monkeypatch, name)  # its body, without xfail
