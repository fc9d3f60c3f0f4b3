"""The programs the verifiers run inside the sandbox, read from ``guard/`` (package data).

They run in the tested process under the sandbox's Python, never in the host's: the host
reads their text and writes it into the sandbox as is, and never imports them. As real
files they are linted, formatted and type-checked with the rest of the package (no code
lives in string literals: ``tests/architecture`` checks it).
"""

from __future__ import annotations

import re

from evoround.programs import program_text

TEMPLATE_MARKER = "# ---- the helper, copied from the next line on ----\n"
"""In a template (the twin helpers): the text after this line is what gets copied."""


def program(name: str) -> str:
    """The text of ``guard/<name>``, exactly as shipped."""
    return program_text(__name__.rpartition(".")[0], name, "guard")


def fill(name: str, values: dict[str, str]) -> str:
    """The copied part of template ``guard/<name>`` with each placeholder (a whole word
    among ``values``' keys, all of them capitalised names used for nothing else there)
    replaced by its value, in one pass."""
    text = program(name).split(TEMPLATE_MARKER, 1)[1]
    words = re.compile(r"\b(" + "|".join(map(re.escape, values)) + r")\b")
    return words.sub(lambda m: values[m[0]], text)
