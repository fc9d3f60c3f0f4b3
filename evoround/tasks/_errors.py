"""Turn pydantic's validation errors on ``task.toml`` into one line an author can act on.

Pydantic says "Field required" about ``activity`` when the author typed ``activty``;
an author needs "unknown key `activty` (did you mean `activity`?)", the table it sits
in, and for a wrong value the value itself. The suggestions come from the schema, so a
key added to the model is suggested without touching this module.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Mapping
from enum import Enum
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

_MAX_SHOWN = 60


def shown(value: object) -> str:
    """A value as the author wrote it, cut short so the error stays one line."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def did_you_mean(word: str, choices: list[str]) -> str:
    """`` (did you mean `x`?)`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[word.lower()]] if word.lower() in lowered else []
    return f" (did you mean `{close[0]}`?)" if close else ""


def unknown_key_message(key: str, known: list[str]) -> str:
    hint = did_you_mean(key, known)
    if not hint and known:
        hint = f" (known keys: {', '.join(known)})"
    return f"unknown key `{key}`{hint}"


def _step(annotation: Any, part: int | str) -> Any:
    """The annotation one location part (field, list index or mapping key) further in."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _step(arg, part)
            if found is not None:
                return found
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(part))
        return field.annotation if field is not None else None
    if origin in (list, tuple) and isinstance(part, int):
        return get_args(annotation)[0]
    if origin is dict:
        return get_args(annotation)[1]
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation (``X``, ``X | None``, a type alias) stands for."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def known_keys(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the table at ``loc`` (a pydantic error location) accepts."""
    annotation: Any = root
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    model = _model_of(annotation)
    return list(model.model_fields) if model is not None else []


def _choices(err: Mapping[str, Any]) -> list[str]:
    expected = str(err.get("ctx", {}).get("expected", ""))
    return re.findall(r"'([^']*)'", expected)


def describe_error(err: Mapping[str, Any]) -> str:
    """One pydantic error (not ``extra_forbidden``) as a sentence that shows the value."""
    kind, value = err["type"], err.get("input")
    if kind == "missing":
        return "required key is missing"
    if kind == "enum":
        choices = _choices(err)
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        return f"{shown(value)} is not one of: {', '.join(choices)}{hint}"
    if kind == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        alternatives = re.fullmatch(r"\^\(([\w|]+)\)\$", pattern)
        if alternatives:
            choices = alternatives.group(1).split("|")
            hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
            return f"{shown(value)} is not one of: {', '.join(choices)}{hint}"
        return f"{shown(value)} does not match the pattern {pattern}"
    if kind == "value_error":  # our own validators: their message is the sentence
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
        return f"{msg} (got {shown(value)})"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, dict | list) and kind.endswith("_type"):
        what = "a table" if isinstance(value, dict) else "an array"
        return f"{err['msg'][0].lower()}{err['msg'][1:]} (got {what})"
    return f"{err['msg'][0].lower()}{err['msg'][1:]} (got {shown(value)})"
