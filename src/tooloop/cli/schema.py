"""``--schema``: a JSON Schema file, inline JSON Schema, or the concise ``{"name": "str"}`` form."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ArgumentTypeError
from .exits import fail

__all__ = ["read_schema"]

_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "string": {"type": "string"},
    "int": {"type": "integer"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "boolean": {"type": "boolean"},
    "dict": {"type": "object"},
    "object": {"type": "object"},
    "list": {"type": "array"},
    "array": {"type": "array"},
    "any": {},
}
_LIST = re.compile(r"^list\[(.+)\]$")
_SCHEMA_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_SCHEMA_KEYS = frozenset({"$schema", "$ref", "properties", "items", "anyOf", "oneOf", "allOf", "enum", "const"})


def read_schema(value: str) -> dict[str, Any]:
    """The JSON Schema ``--schema VALUE`` gives: a file's JSON Schema, inline JSON Schema, or the
    concise form (each key a field, each value a type name such as ``"str"``, ``"int"``,
    ``"float"``, ``"bool"``, ``"list[str]"``, ``"int?"`` for an optional field, or a nested
    object); checked here, so a mistake is one line before any request."""
    text, where = _text(value)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(
            f"--schema {where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); give a JSON Schema "
            """file or inline JSON such as '{"name": "str", "age": "int"}'"""
        )
    if not isinstance(data, dict):
        kind = type(data).__name__
        fail(f"--schema {where}: give a JSON object (a JSON Schema, or field names and types), not {kind}")
    schema = data if _is_json_schema(data) else _concise(data, where)
    _check(schema, where)
    return schema


def _text(value: str) -> tuple[str, str]:
    stripped = value.strip()
    if stripped.startswith(("{", "[", '"')):
        return value, "(inline)"
    path = Path(value).expanduser()
    if not path.is_file():
        fail(f"--schema {value!r}: no such file, and not inline JSON (inline JSON starts with '{{')")
    try:
        return path.read_text(encoding="utf-8"), repr(value)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--schema {value!r}: cannot read it ({exc})")


def _is_json_schema(data: dict[str, Any]) -> bool:
    return data.get("type") in _SCHEMA_TYPES or any(key in data for key in _SCHEMA_KEYS)


def _concise(fields: dict[str, Any], where: str) -> dict[str, Any]:
    if not fields:
        fail(f'--schema {where}: no fields; give at least one, e.g. \'{{"name": "str"}}\'')
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, kind in fields.items():
        optional = isinstance(kind, str) and kind.endswith("?")
        properties[name] = _field(kind.removesuffix("?") if optional else kind, f"{where} field {name!r}")
        if not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def _field(kind: Any, where: str) -> dict[str, Any]:
    if isinstance(kind, dict):
        return _concise(kind, where)
    if isinstance(kind, list) and len(kind) == 1:
        return {"type": "array", "items": _field(kind[0], where)}
    if isinstance(kind, str):
        name = kind.strip()
        match = _LIST.match(name)
        if match:
            return {"type": "array", "items": _field(match.group(1), where)}
        if name in _TYPES:
            return dict(_TYPES[name])
    known = ", ".join(sorted({"str", "int", "float", "bool", "list", "dict", "any"}))
    fail(f"--schema {where}: unknown type {kind!r}; use {known}, list[TYPE], TYPE? (optional) or a nested object")


def _check(schema: dict[str, Any], where: str) -> None:
    from ..loop.output import OutputSpec

    try:
        OutputSpec.for_type(schema)
    except ArgumentTypeError as exc:
        fail(f"--schema {where}: {str(exc).removeprefix('output_type got a dict that is ')}")
