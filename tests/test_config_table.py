"""docs/configuration.md is the one table of settings: it lists every field of the model."""

from pathlib import Path

from evoround.settings import Settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_the_table_lists_every_setting() -> None:
    rows = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| `EVOROUND_")]
    named = {ln.split("`")[1] for ln in rows}
    assert named == {f"EVOROUND_{n.upper()}" for n in Settings.model_fields}
