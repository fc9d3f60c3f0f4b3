"""What a hardened local command's view shows besides the system folders (see
``shown_dirs`` in evoround/sandboxes/local/_isolation.py)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from evoround.sandboxes.local._isolation import _too_broad


def test_too_broad_as_text_is_path_parents() -> None:
    """``_too_broad`` compares paths as text (it runs for every PATH entry of every
    command); on every combination of a small tree it answers as ``Path.parents`` does."""

    def by_parents(r: Path, home: Path, hidden: tuple[Path, ...]) -> bool:
        if len(r.parts) < 3 or r == home or r in home.parents:
            return True
        return any(h == r or r in h.parents for h in hidden)

    names = ("a", "b", "ab", "a b")
    paths = [
        Path("/" + "/".join(c)) for n in range(1, 5) for c in itertools.product(names, repeat=n)
    ]
    paths.append(Path("/"))
    rnd = random.Random(7)
    for _ in range(5000):
        r, home = rnd.choice(paths), rnd.choice(paths)
        hidden = tuple(rnd.sample(paths, rnd.randint(0, 4)))
        assert _too_broad(r, home, hidden) == by_parents(r, home, hidden), (r, home, hidden)
