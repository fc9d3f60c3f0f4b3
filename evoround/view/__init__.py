"""``evoround view``: a local web viewer of job folders, round by round.

Reads job folders lazily (``results.jsonl`` to list rounds, a round's own folder when its
page is opened), follows a running job, and shows what no static report can: each round's
workspace change against the previous round, its trajectory, failing tests with their
class and origin round, and the rounds whose edits a regression points at.

Reads results only (never the engine, sandboxes or agents); everything it shows from the
agent's side is escaped, capped and served without scripts.
"""

from evoround.view._index import JobIndex, RoundKey, ViewError
from evoround.view._server import ViewServer

__all__ = ["JobIndex", "RoundKey", "ViewError", "ViewServer"]
