"""The benchmarks' synthetic rounds: round i adds ``f{i}()`` to calc.py and tests it.

One writer for every benchmark, so their tasks differ only where the benchmark means them to
(workspace size, extra churn per round, the suite's shape).
"""

from __future__ import annotations

from pathlib import Path

TEST = "from calc import f{i}\n\n\ndef test_f{i}():\n    assert f{i}() == {i}\n"


def write_calc_rounds(
    task: Path,
    rounds: int,
    *,
    instruction: str = "Add f{i}().\n",
    solve_extra: str = "",
    test_file: str = "test_r{i}.py",
    test: str = TEST,
) -> None:
    """``rounds/NN/`` for rounds 1..N; ``{i}`` in each template is the round number."""
    for i in range(1, rounds + 1):
        d = task / "rounds" / f"{i:02d}"
        (d / "solution").mkdir(parents=True)
        (d / "tests").mkdir()
        (d / "instruction.md").write_text(instruction.format(i=i))
        (d / "solution" / "solve.sh").write_text(
            f"printf 'def f{i}():\\n    return {i}\\n\\n' >> calc.py\n" + solve_extra
        )
        (d / "tests" / test_file.format(i=i)).write_text(test.format(i=i))
