"""OpenAI's strict JSON schema form (``"strict": true`` on a function or a response format).

Strict mode accepts a schema only when every object lists all its properties in ``required``
and sets ``additionalProperties: false``. Optional parameters therefore become required but
nullable, and ``default`` (which strict mode does not take) is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["strict_schema"]


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` that OpenAI's strict mode accepts."""
    strict: dict[str, Any] = _strict(schema, nullable=False)
    return strict


def _strict(schema: Any, *, nullable: bool) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            required = set(schema.get("required", ())) if key == "properties" else set()
            out[key] = {
                name: _strict(sub, nullable=key == "properties" and name not in required) for name, sub in value.items()
            }
        elif key in ("items", "not"):
            out[key] = _strict(value, nullable=False)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out[key] = [_strict(option, nullable=False) for option in value]
        else:
            out[key] = value
    if out.get("type") == "object" or "properties" in out:
        out["required"] = list(out.get("properties", {}))
        out["additionalProperties"] = False
    return _nullable(out) if nullable else out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null" and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "null" in kind:
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list):
        if any(isinstance(o, Mapping) and o.get("type") == "null" for o in options):
            return schema
        return {**schema, "anyOf": [*options, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}
