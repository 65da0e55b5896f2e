"""Turning arbitrary tool results into JSON-compatible values and text."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` to plain JSON types (pydantic models, dataclasses, enums, sets included).

    Values JSON cannot hold become their ``str()``.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_text(bytes(value))
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    return str(value)


def render(value: Any) -> str:
    """The text a model sees for a tool result: strings as they are, structures as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_text(bytes(value))
    if type(value) is int:
        return str(value)
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    dump_json = getattr(value, "model_dump_json", None)
    if callable(dump_json):
        return str(dump_json())
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def bytes_text(data: bytes) -> str:
    """Bytes as a model can read them: the text when they are UTF-8, else base64 with a note saying so."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"[binary data, {len(data)} bytes, base64-encoded] {base64.b64encode(data).decode('ascii')}"


def error_text(error: BaseException) -> str:
    """``"TypeName: message"`` for an error, even one whose ``str()`` itself raises."""
    name = getattr(error, "type_name", None)
    name = name if isinstance(name, str) else type(error).__name__
    return f"{name}: {error_message(error)}"


def error_message(error: BaseException) -> str:
    """``str(error)``, or a note saying why it could not be read when ``str()`` raises."""
    try:
        return str(error)
    except Exception as exc:  # a broken __str__ must not take the run down with it
        return f"(the error's message could not be read: its __str__ raised {type(exc).__name__})"


def truncate(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` characters with a visible marker saying how much was removed."""
    if limit is None or len(text) <= limit:
        return text
    removed = len(text) - limit
    return f"{text[:limit]}\n[... truncated {removed} characters ...]"
