"""What the leaderboard's columns mean, printed under it where newcomers see it (demo).

The wording follows the metric definitions in the design notes; it is text, not code,
so it lives apart from the command that prints it.
"""

from __future__ import annotations

LEGEND = """\
How to read it (percent). MT: the agent lives with its own edits across rounds and stops
at its first failed round; SR: every round starts from the reference state of the round
before, in a fresh session.
  MT@k           mean over tasks of the share of rounds passed in MT (best of k attempts)
  SR             the same in SR
  Gap            SR - MT@k: what the agent loses to the state it left itself
  k              attempts per task
  Comp           share of tasks whose final round passes in some attempt
  perfect        share of tasks with an MT attempt that passed every round
  mean reward    mean share of rounds passed per attempt (Harbor's per-step reward)
  case score MT  mean share of test cases passed per MT round (0 for rounds never reached)
  state penalty  share of failed MT rounds that pass in SR (failures caused by own state)
  CSR / ISR      process checks passed / checks scored; share of rounds passing every
                 check. A check that doing nothing cannot break (e.g. "add no
                 dependency") passes, so an agent that does nothing (nop) still scores
                 some CSR."""
