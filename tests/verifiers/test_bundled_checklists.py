"""The bundled tasks' checklists: the decaying agent decays (the oracle's compliance is
checked on the library validation's oracle job, tests/engine/test_validate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoround.reports import compute_compliance
from evoround.results import Mode
from evoround.scaffolds import scaffold_from_name
from evoround.tasks import library_path, load_tasks
from tests.helpers import run

TASKS = [t for t in load_tasks([library_path()]) if t.name in ("ledger", "pricing")]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("checklists")


def test_bundled_checklists_have_every_instruction_source():
    for t in TASKS:
        cats = {c.category.value for c in t.config.checks} | {
            c.category.value for r in t.rounds for c in r.spec.checks
        }
        assert {"system_prompt", "repo_spec", "skill", "memory", "system_reminder",
                "user_query"} <= cats, t.name  # fmt: skip
        assert any(c.wins_over for r in t.rounds for c in r.spec.checks), t.name
        assert (t.workspace_dir / ".memory" / "MEMORY.md").is_file()
        assert list(t.workspace_dir.glob("skills/*/SKILL.md"))


# The oracle never failing a rule check (CSR 1.0 over more than 20 checks) is asserted on
# the library validation's own oracle job: test_bundled_library_validates in
# tests/engine/test_validate.py (an oracle job here ran the same rounds a second time).


def test_decaying_agent_passes_tests_but_csr_falls_by_round(home: Path):
    view = run(home, scaffold_from_name("scripted:decaying"), tasks=TASKS, modes=(Mode.mt,),
               name="decaying")  # fmt: skip
    assert all(r.passed for r in view.records) and len(view.records) == 13
    comp = compute_compliance(view.records)
    csr = [row.csr for row in comp.by_round]
    assert csr[0] == 1.0 and csr[1] == 1.0
    assert csr[-1] is not None and csr[-1] < 0.7
    # it falls round by round while every task is still running (a round only the longest
    # task has is a handful of checks of one task: its CSR is that task's alone)
    common = min(len(t.rounds) for t in TASKS)
    assert all(a >= b for a, b in zip(csr[:common], csr[1:common], strict=False)), csr
    conflict = {row.key: row for row in comp.conflicts}
    assert all(row.failed == 1 for row in conflict.values()) and len(conflict) == 2
    cats = {row.key: row for row in comp.by_category}
    assert cats["memory"].failed > 0 and cats["skill"].failed > 0
