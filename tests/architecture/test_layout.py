"""The package's structure as rules: no import circles, one door per room, the layering
contracts of pyproject.toml, and an engine a newcomer can read (few modules). Function size and types:
test_house_rules.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.import_graph import PACKAGE_ROOT, cycles, graph, modules

REPO = PACKAGE_ROOT.parent
ROOMS = [
    m
    for m, p in modules().items()
    if p.name == "__init__.py" and m.count(".") >= 1 and "library" not in m and "starter" not in m
]
ENGINE_MAX_MODULES = 15


def _room_of(module: str) -> str | None:
    owners = [r for r in ROOMS if module == r or module.startswith(r + ".")]
    return max(owners, key=len) if owners else None


def test_no_import_circle() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_other_rooms_enter_through_the_door() -> None:
    """A private module (``_x``) is imported only from inside its own room."""
    bad = []
    for mod, deps in graph().items():
        for dep in deps:
            if not any(part.startswith("_") for part in dep.split(".")):
                continue
            room = _room_of(dep)
            if room is not None and not (mod == room or mod.startswith(room + ".")):
                bad.append(f"{mod} -> {dep}")
    assert bad == []


def test_engine_top_level_is_small() -> None:
    engine = [p for p in (PACKAGE_ROOT / "engine").glob("*.py") if p.name != "__init__.py"]
    assert len(engine) <= ENGINE_MAX_MODULES, sorted(p.name for p in engine)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports")
    assert exe, "import-linter is a dev dependency: pip install -e '.[dev]'"
    return subprocess.run(
        [exe, "--no-cache", "--no-logo"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts_hold() -> None:
    res = _lint_imports(REPO)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("reports/_text.py", "from evoround.sandboxes import Sandbox"),
        ("tasks/_model.py", "import evoround.engine"),
        ("sandboxes/local/_sandbox.py", "from evoround.scaffolds import Scaffold"),
        ("results/_records.py", "from evoround.engine import run_job"),
    ],
)
def test_import_contracts_fail_on_a_forbidden_import(
    tmp_path: Path, module: str, line: str
) -> None:
    """The contracts are not vacuous: one added forbidden import breaks them."""
    shutil.copytree(
        PACKAGE_ROOT,
        tmp_path / "evoround",
        ignore=shutil.ignore_patterns("library", "starter", "__pycache__"),
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "evoround" / module
    text = target.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    target.write_text(head + sep + line + "\n" + rest if sep else line + "\n" + text)
    res = _lint_imports(tmp_path)
    assert res.returncode != 0, res.stdout
    assert "BROKEN" in res.stdout
