"""``-o/--option KEY VALUE``: model settings from the command line.

The common settings (:data:`SETTINGS`) are checked and typed; any other key is a provider field
sent in the request body as it is (``-o reasoning_effort high``, ``-o service_tier flex``).
A value is read as JSON when it is JSON (``0.2``, ``true``, ``["END"]``), else as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .exits import fail

__all__ = ["SETTINGS", "option_value", "settings_changes"]

SETTINGS: dict[str, tuple[str, str]] = {
    "temperature": ("number", "sampling temperature, e.g. 0.2"),
    "max_tokens": ("integer", "the most tokens one response may have"),
    "top_p": ("number", "nucleus sampling, between 0 and 1"),
    "seed": ("integer", "a seed for providers that sample reproducibly"),
    "stop": ("text or list", 'text that ends a response, e.g. -o stop END or -o stop \'["END", "STOP"]\''),
    "parallel_tool_calls": ("true/false", "whether the model may ask for several tool calls at once"),
}
"""The settings every provider understands: name -> (type, what it does)."""


def option_value(text: str) -> Any:
    """``VALUE`` of ``-o KEY VALUE``: JSON when it parses, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _typed(key: str, value: Any) -> Any:
    kind = SETTINGS[key][0]
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "true/false" and isinstance(value, bool):
        return value
    if kind == "text or list":
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    fail(f"-o {key}: expected {'a' if kind != 'integer' else 'an'} {kind}, not {json.dumps(value)}")


def settings_changes(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Keyword changes for ``Agent.with_settings``: the common settings typed, the rest in ``extra``."""
    changes: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in pairs:
        if not key or not key.replace("_", "").replace("-", "").replace(".", "").isalnum():
            fail(f"-o {key!r}: an option name is letters, digits and underscores (e.g. -o temperature 0.2)")
        if key == "stream":
            fail("-o stream: use --no-stream for plain requests")
        if key in SETTINGS:
            changes[key] = _typed(key, value)
        else:
            extra[key] = value
    if extra:
        changes["extra"] = extra
    return changes
