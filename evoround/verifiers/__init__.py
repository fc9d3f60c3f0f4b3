"""Grading a round: the cumulative pytest verifier, the script (reward) verifier and the
process checklist (``evoround.verifiers.checklist``). ``parse_ast`` is the engine's
one-parse-at-a-time ``ast.parse`` (see :mod:`evoround.pyast`), exported so the checklist shares it.
"""

from evoround.pyast import parse as parse_ast
from evoround.verifiers._pytest import INI, run_pytest
from evoround.verifiers._script import run_script
from evoround.verifiers._verify import verify_suite

__all__ = ["INI", "parse_ast", "run_pytest", "run_script", "verify_suite"]
