"""The ablation benchmark (``benchmarks/ablation.py``, the threat model's table) switches
each mechanism off by editing the runner's source or replacing host-side functions. A
refactor of either must not leave a switch that edits nothing: every switch applies (an
edit whose text is gone raises), and a switch that edits the runner leaves a program that
still parses."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from evoround.verifiers import _pytest as P

ABLATION = Path(__file__).resolve().parents[2] / "benchmarks" / "ablation.py"


def _ablation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evoround_ablation_bench", ABLATION)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


MECHANISMS = _ablation().MECHANISMS


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: m.name)
def test_every_ablation_switch_applies(mechanism, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    before = P.RUNNER
    mechanism.off(monkeypatch)  # a runner edit that finds its text nothing raises here
    if before != P.RUNNER:
        ast.parse(P.RUNNER)
    assert mechanism.where
