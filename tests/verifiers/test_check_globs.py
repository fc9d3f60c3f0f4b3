"""Check globs: ``**/`` is zero or more folders wherever it stands (as in gitignore and
pathlib), so ``pricing/**/*.py`` covers ``pricing/discounts.py`` too. Before, only a leading
``**/`` could match no folder, and the bundled tasks' checks on ``pricing/**/*.py`` and
``ledger/**/*.py`` skipped every top-level module of their package."""

import time

import pytest

from evoround.verifiers.checklist import match_any


@pytest.mark.parametrize(
    ("path", "glob", "matched"),
    [
        ("a.py", "**/*.py", True),
        ("x/y/a.py", "**/*.py", True),
        ("pricing/discounts.py", "pricing/**/*.py", True),
        ("pricing/sub/discounts.py", "pricing/**/*.py", True),
        ("other/discounts.py", "pricing/**/*.py", False),
        ("pricingx/a.py", "pricing/**/*.py", False),
        ("a/b/c.py", "a/**/b/**/*.py", True),
        ("a/x/b/y/c.py", "a/**/b/**/*.py", True),
        ("a/c.py", "a/**/b/**/*.py", False),
        ("docs/AGENTS.md", "**/AGENTS.md", True),
        ("AGENTS.md", ["x", "AGENTS.md"], True),
        ("a.txt", "*.py", False),
        ("tests/x/test_a.py", ["tests/**", "**/test_*.py"], True),
    ],
)
def test_double_star_slash_is_zero_or_more_folders(path: str, glob: str, matched: bool) -> None:
    assert match_any(path, glob) is matched


def test_a_hostile_path_does_not_stall_the_match() -> None:
    """Paths come from the agent's workspace: a long path of slashes against a glob with
    several ``**/`` is still answered at once."""
    start = time.monotonic()
    assert not match_any("/" * 4000 + "x", "**/*/**/*/**/*/**/*.py")
    assert time.monotonic() - start < 1.0
