"""The export format of one session: schema-versioned JSON holding its metadata and messages.

::

    {
      "format": "tooloop.session",
      "version": 1,
      "session": {"id": ..., "title": ..., "model": ..., "created_at": ISO-8601, "updated_at": ...,
                  "usage": {...}, "metadata": {...}},
      "message_count": 3,
      "messages": [<tooloop.transcript.message_to_dict>, ...]
    }

``message_count`` lets a reader notice a truncated export.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..errors import CorruptDataError
from ..transcript import Transcript, message_from_dict
from ._records import Record, encode, metadata_from_json, usage_from_json, usage_to_dict
from .base import SessionInfo

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "build_export", "parse_export"]

EXPORT_FORMAT = "tooloop.session"
EXPORT_VERSION = 1


def build_export(info: SessionInfo, transcript: Transcript) -> dict[str, Any]:
    """The export data of a session."""
    messages = transcript.to_dicts()
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session": {
            "id": info.id,
            "title": info.title,
            "model": info.model,
            "created_at": info.created_at.isoformat() if info.created_at else None,
            "updated_at": info.updated_at.isoformat() if info.updated_at else None,
            "usage": usage_to_dict(info.usage),
            "metadata": dict(info.metadata),
        },
        "message_count": len(messages),
        "messages": messages,
    }


def parse_export(data: Mapping[str, Any] | str | bytes) -> tuple[SessionInfo, list[Record]]:
    """Check export data and return its session info and message records.

    Raises :class:`CorruptDataError` for anything else: another format, a newer version, a
    truncated message list, or a message that cannot be read (naming its position).
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise CorruptDataError(f"session export is not valid JSON (truncated?): {exc}") from exc
    if not isinstance(data, Mapping) or data.get("format") != EXPORT_FORMAT:
        raise CorruptDataError(f"not a tooloop session export (expected format {EXPORT_FORMAT!r})")
    version = data.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise CorruptDataError(
            f"session export version {version!r} is newer than this tooloop reads ({EXPORT_VERSION})"
        )
    session = data.get("session")
    messages = data.get("messages")
    if not isinstance(session, Mapping) or not isinstance(session.get("id"), str) or not isinstance(messages, list):
        raise CorruptDataError("session export needs a 'session' object with an 'id' and a 'messages' list")
    session_id = session["id"]
    if data.get("message_count") != len(messages):
        raise CorruptDataError(
            f"session export {session_id!r} is truncated: it announces {data.get('message_count')!r} messages "
            f"and holds {len(messages)}"
        )
    records = []
    for position, item in enumerate(messages):
        try:
            records.append(encode(message_from_dict(item)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(
                f"session export {session_id!r}: message {position} cannot be read: {exc!r}"
            ) from exc
    info = SessionInfo(
        id=session_id,
        title=session.get("title"),
        model=session.get("model"),
        created_at=_parse_time(session_id, session.get("created_at")),
        updated_at=_parse_time(session_id, session.get("updated_at")),
        message_count=len(records),
        usage=usage_from_json(session_id, session.get("usage")),
        metadata=metadata_from_json(session_id, session.get("metadata")),
    )
    return info, records


def _parse_time(session_id: str, value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise CorruptDataError(f"session export {session_id!r}: bad timestamp {value!r}") from exc
