"""How messages become rows and rows become a transcript; shared by every SQL backend.

A row is ``(session_id, seq, pos, tool_call_id, status, format, data)``: ``seq`` counts every write
of the session, ``pos`` is the message's position in the transcript. A tool call that replaces
an unfinished entry gets a new ``seq`` and the old entry's ``pos``, so writing never rewrites a
row and reading keeps the last write of each position.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

from ..errors import ArgumentValueError, CorruptDataError
from ..messages import Message, ToolCallMessage, ToolCallStatus, Usage
from ..transcript import SCHEMA_VERSION, Transcript, message_from_dict, message_to_dict
from .base import UNSET

__all__ = [
    "Latest",
    "Record",
    "Row",
    "built_on",
    "check_fork_at",
    "decode_rows",
    "encode",
    "latest_per_position",
    "metadata_changes",
    "metadata_from_json",
    "plan_rows",
    "repack",
    "session_details",
    "to_datetime",
    "usage_from_json",
    "usage_to_dict",
    "usage_to_json",
]

_R = TypeVar("_R", bound=tuple[Any, ...])
_T = TypeVar("_T")

_UNFINISHED = frozenset({ToolCallStatus.STARTED.value, ToolCallStatus.PENDING.value})


@dataclass(frozen=True, slots=True)
class Record:
    """One message ready to be written."""

    tool_call_id: str | None
    status: str | None
    data: str
    batch_id: str | None = None


@dataclass(frozen=True, slots=True)
class Latest:
    """The newest stored entry of one tool call id."""

    pos: int
    status: str | None
    data: str


@dataclass(frozen=True, slots=True)
class Row:
    """A row to insert."""

    seq: int
    pos: int
    tool_call_id: str | None
    status: str | None
    data: str
    format: int = SCHEMA_VERSION


def encode(message: Message) -> Record:
    """The record of one message (its JSON is built exactly once)."""
    data = json.dumps(message_to_dict(message), ensure_ascii=False, separators=(",", ":"))
    if isinstance(message, ToolCallMessage):
        return Record(message.tool_call_id, message.status.value, data, message.batch_id)
    return Record(None, None, data)


def plan_rows(
    records: Sequence[Record], latest: dict[str, Latest], version: int, count: int, *, claim: bool = False
) -> tuple[list[Row], int, int]:
    """The rows to insert for ``records`` and the session's new ``(version, message_count)``.

    ``latest`` maps the records' tool call ids to their newest stored entry (updated in place).
    A tool call replaces the newest entry with its id when that entry is unfinished or belongs
    to the same batch (the same model response); an exact repeat is skipped. A provider that
    reuses ids in a later response (``call_0`` every time) therefore gets a new entry.

    With ``claim`` (a conditional write) the version moves even when every record is a repeat:
    two processes resuming the same interrupted calls both write the same records, and the
    second must lose before it runs anything.
    """
    rows: list[Row] = []
    for record in records:
        call_id = record.tool_call_id
        previous = latest.get(call_id) if call_id is not None else None
        if previous is not None and previous.data == record.data:
            continue
        if previous is not None and (previous.status in _UNFINISHED or _batch_of(previous) == record.batch_id):
            pos = previous.pos
        else:
            pos = count
            count += 1
        if call_id is not None:
            latest[call_id] = Latest(pos, record.status, record.data)
        rows.append(Row(version, pos, call_id, record.status, record.data))
        version += 1
    if claim and not rows:
        version += 1
    return rows, version, count


def built_on(version: int, writes: Sequence[tuple[int, int]]) -> bool:
    """Whether another writer wrote after the last of ``writes`` (the session is past its end).

    Whoever wrote after a record had read it: it built on it (its model saw it, or it closed a
    call it found there). Such records are never taken back, or the session would no longer be
    what that writer built on.
    """
    return not writes or version > max(end for _, end in writes)


def repack(rows: Iterable[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """After records were taken back: the ``(new pos, seq)`` of each remaining ``(seq, pos)`` row
    (in ``seq`` order) whose position changes, and the new message count.

    Positions are numbered again in the order they first appear, which is what reading expects.
    """
    numbering: dict[int, int] = {}
    moves = []
    for seq, pos in rows:
        new = numbering.setdefault(pos, len(numbering))
        if new != pos:
            moves.append((new, seq))
    return moves, len(numbering)


def latest_per_position(session_id: str, rows: Iterable[_R]) -> list[_R]:
    """The last write of each position from rows ``(seq, pos, ...)`` in ``seq`` order."""
    final: list[_R] = []
    for row in rows:
        seq, pos = row[0], row[1]
        if pos == len(final):
            final.append(row)
        elif 0 <= pos < len(final):
            final[pos] = row
        else:
            raise CorruptDataError(f"session {session_id!r}: row seq={seq} has position {pos}, beyond the transcript")
    return final


def _batch_of(entry: Latest) -> str | None:
    try:
        batch = json.loads(entry.data).get("batch_id")
    except (ValueError, AttributeError):
        return None
    return batch if isinstance(batch, str) else None


def decode_rows(session_id: str, rows: Iterable[tuple[int, int, int, str]]) -> Transcript:
    """The transcript from ``(seq, pos, format, data)`` rows in ``seq`` order.

    Only the last write of each position is parsed. A row that cannot be read raises
    :class:`CorruptDataError` naming the session, the message's position and the row's ``seq``;
    its ``transcript`` holds the messages before it.
    """
    final = latest_per_position(session_id, rows)
    messages: list[Message] = []
    for seq, pos, fmt, data in final:
        try:
            messages.append(_decode(session_id, seq, pos, fmt, data))
        except CorruptDataError as error:
            error.transcript = Transcript(messages)  # the readable messages before it are kept
            raise
    return Transcript(messages)


def _decode(session_id: str, seq: int, pos: int, fmt: int, data: str) -> Message:
    where = f"session {session_id!r}: message {pos} (seq={seq})"
    if fmt > SCHEMA_VERSION:
        raise CorruptDataError(
            f"{where} uses format {fmt}, newer than this tooloop reads ({SCHEMA_VERSION}); upgrade tooloop"
        )
    try:
        return message_from_dict(json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise CorruptDataError(f"{where} cannot be read: {exc!r}") from exc


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """Usage as a JSON-compatible dict (the cost as a decimal string, so no cent is rounded away)."""
    data: dict[str, Any] = {f.name: getattr(usage, f.name) for f in fields(usage)}
    data["cost"] = None if usage.cost is None else str(usage.cost)
    return data


def usage_to_json(usage: Usage) -> str:
    """Usage as compact JSON text."""
    return json.dumps(usage_to_dict(usage), separators=(",", ":"))


def usage_from_json(session_id: str, text: str | Mapping[str, Any] | None) -> Usage:
    """Usage from what :func:`usage_to_json` wrote (unknown keys are ignored)."""
    if text is None:
        return Usage()
    try:
        data = json.loads(text) if isinstance(text, str) else text
        known = {f.name for f in fields(Usage)} - {"cost", "estimated"}
        cost = data.get("cost")
        return Usage(
            **{k: int(v) for k, v in data.items() if k in known},
            cost=None if cost is None else Decimal(str(cost)),
            estimated=data.get("estimated") is True,
        )
    except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
        raise CorruptDataError(f"session {session_id!r}: usage cannot be read: {exc!r}") from exc


def session_details(
    session_id: str, usage: str | Mapping[str, Any] | None, metadata: str | Mapping[str, Any] | None, *, lenient: bool
) -> tuple[Usage, dict[str, Any], str | None]:
    """A session's usage and metadata columns, read.

    With ``lenient`` (listing sessions) a column that cannot be read is replaced by its empty
    value and the problem is returned, so one damaged session never hides the others; otherwise
    it raises :class:`CorruptDataError`.
    """
    problems: list[str] = []
    read_usage = _column(lambda: usage_from_json(session_id, usage), Usage(), problems, lenient)
    no_metadata: dict[str, Any] = {}
    read_metadata = _column(lambda: metadata_from_json(session_id, metadata), no_metadata, problems, lenient)
    return read_usage, read_metadata, "; ".join(problems) or None


def _column(read: Callable[[], _T], empty: _T, problems: list[str], lenient: bool) -> _T:
    try:
        return read()
    except CorruptDataError as exc:
        if not lenient:
            raise
        problems.append(str(exc))
        return empty


def metadata_from_json(session_id: str, text: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A session's metadata dict."""
    if text is None:
        return {}
    try:
        data = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise CorruptDataError(f"session {session_id!r}: metadata cannot be read: {exc!r}") from exc
    if not isinstance(data, dict):
        raise CorruptDataError(f"session {session_id!r}: metadata is not an object")
    return data


def check_fork_at(session_id: str, at: Any, count: int) -> None:
    """Raise :class:`ArgumentValueError` unless ``fork(session_id, at)`` names a position of the session."""
    if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= count:
        raise ArgumentValueError(
            f"fork(at={at!r}) is outside session {session_id!r}, which has {count} messages; "
            f"pass a whole number from 0 to {count}"
        )


def to_datetime(epoch: float | None) -> datetime | None:
    """An aware UTC datetime from epoch seconds."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def metadata_changes(**fields: Any) -> dict[str, Any]:
    """The columns ``set_metadata`` changes: fields not ``UNSET``, usage and metadata as JSON."""
    changes: dict[str, Any] = {}
    for name, value in fields.items():
        if value is UNSET:
            continue
        if name == "usage":
            changes["cost"] = None if value.cost is None else str(value.cost)
            changes["tokens"] = value.input_tokens + value.output_tokens
            changes["tool_calls"] = value.tool_calls
            value = usage_to_json(value)
        elif name == "metadata":
            value = json.dumps(dict(value), ensure_ascii=False)
        changes[name] = value
    return changes
