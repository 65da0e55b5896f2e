"""A session as the web app shows it: messages on a timeline, and a waterfall of requests and calls.

Pure functions over a transcript and the store's :class:`~tooloop.store.Write` records; nothing
here touches the network or the store.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from .._json import to_jsonable
from ..messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, Usage, UserMessage
from ..store import Write
from ..transcript import message_to_dict

__all__ = [
    "PAGE_SIZE",
    "Bar",
    "Entry",
    "Request",
    "Waterfall",
    "build_entries",
    "build_waterfall",
    "message_summary",
    "pretty_json",
    "requests_of",
    "same",
]

PAGE_SIZE = 200
"""Messages per page of a session."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One message of the page with what the store knows of its timing."""

    pos: int
    kind: str
    message: Message
    first_written: datetime | None
    last_written: datetime | None
    awaited_approval: bool = False
    """The call waited for a person's decision (a ``pending`` record was written for it)."""
    decided_after: float | None = None
    """Seconds from the call's ``pending`` record to the record that followed (the decision's)."""

    @property
    def duration(self) -> float | None:
        """Seconds from a tool call's first record (issued) to its outcome; None if unknown."""
        if not isinstance(self.message, ToolCallMessage) or self.first_written is None or self.last_written is None:
            return None
        if not self.message.status.finished or self.first_written == self.last_written:
            return None
        return (self.last_written - self.first_written).total_seconds()


@dataclass(frozen=True, slots=True)
class Bar:
    """One row of the waterfall: a model request or a tool call, in seconds from the page's start."""

    label: str
    kind: Literal["request", "tool", "error", "running"]
    start: float
    end: float
    pos: int
    usage: Usage | None = None
    """A request's tokens and cost, when its message keeps them."""


@dataclass(frozen=True, slots=True)
class Waterfall:
    """The bars of one page and the span they cover."""

    bars: tuple[Bar, ...]
    span: float

    def x(self, seconds: float, width: float) -> float:
        """The horizontal position of ``seconds`` in a drawing ``width`` wide."""
        return 0.0 if self.span <= 0 else round(seconds / self.span * width, 2)


def _times(writes: Sequence[Write]) -> dict[int, tuple[int, datetime | None, datetime | None]]:
    """Per position: the first record's seq, the first and the last record's time."""
    found: dict[int, tuple[int, datetime | None, datetime | None]] = {}
    for write in writes:
        if write.pos in found:
            seq, first, _ = found[write.pos]
            found[write.pos] = (seq, first, write.written_at)
        else:
            found[write.pos] = (write.seq, write.written_at, write.written_at)
    return found


def _decisions(writes: Sequence[Write]) -> dict[int, float | None]:
    """Per position of a call that waited for approval: seconds from its ``pending`` record to the next."""
    found: dict[int, float | None] = {}
    waiting: dict[int, datetime | None] = {}
    for write in writes:
        if write.pos in waiting:
            since = waiting.pop(write.pos)
            found[write.pos] = (
                (write.written_at - since).total_seconds() if since is not None and write.written_at else None
            )
        if write.status == "pending":
            waiting[write.pos] = write.written_at
            found.setdefault(write.pos, None)
    return found


def build_entries(messages: Sequence[Message], writes: Sequence[Write], start: int) -> list[Entry]:
    """The entries of ``messages`` (positions ``start``...) with their times from ``writes``."""
    times = _times(writes)
    decisions = _decisions(writes)
    entries = []
    for offset, message in enumerate(messages):
        pos = start + offset
        _, first, last = times.get(pos, (0, None, None))
        entries.append(Entry(pos, message.kind, message, first, last, pos in decisions, decisions.get(pos)))
    return entries


def _responses(entries: Sequence[Entry]) -> list[Entry]:
    """The entries that begin a model response: an answer, or the first call of a new batch."""
    begun: list[Entry] = []
    batch = None
    for entry in entries:
        message = entry.message
        if isinstance(message, AssistantMessage):
            begun.append(entry)
            batch = None
        elif isinstance(message, ToolCallMessage):
            if message.batch_id != batch:
                begun.append(entry)
            batch = message.batch_id
        else:
            batch = None
    return begun


def build_waterfall(entries: Sequence[Entry], writes: Sequence[Write]) -> Waterfall | None:
    """Model requests (from the last record before a response to the response) and tool calls
    (from their first record to their outcome) of the page; None when the store has no times."""
    timed = sorted((w.seq, w.written_at) for w in writes if w.written_at is not None)
    seqs = [seq for seq, _ in timed]
    responses = {id(e) for e in _responses(entries)}
    first_seq = {p: s for p, (s, _, _) in _times(writes).items()}
    spans: list[tuple[str, Literal["request", "tool", "error", "running"], datetime, datetime, int]] = []
    for entry in entries:
        if id(entry) in responses and entry.first_written is not None:
            before = bisect.bisect_left(seqs, first_seq.get(entry.pos, 0))  # records are timed in seq order
            sent = timed[before - 1][1] if before > 0 else None
            if sent is not None:
                spans.append(("model request", "request", sent, entry.first_written, entry.pos))
        message = entry.message
        if isinstance(message, ToolCallMessage) and entry.first_written is not None and entry.last_written is not None:
            kind: Literal["tool", "error", "running"] = (
                "running" if not message.status.finished else "error" if message.status.value == "error" else "tool"
            )
            spans.append((message.tool_name, kind, entry.first_written, entry.last_written, entry.pos))
    if not spans:
        return None
    origin = min(s[2] for s in spans)
    bars = tuple(
        Bar(
            label,
            kind,
            (a - origin).total_seconds(),
            max((b - origin).total_seconds(), (a - origin).total_seconds()),
            pos,
        )
        for label, kind, a, b, pos in spans
    )
    if any(bar.kind == "request" for bar in bars):
        used = {e.pos: e.message.usage for e in entries if isinstance(e.message, AssistantMessage | ToolCallMessage)}
        bars = tuple(replace(bar, usage=used.get(bar.pos)) if bar.kind == "request" else bar for bar in bars)
    return Waterfall(bars, max(b.end for b in bars) or 0.0)


@dataclass(frozen=True, slots=True)
class Request:
    """One model request of the page: the message it produced and what it used."""

    pos: int
    usage: Usage
    response_id: str | None
    model: str | None
    ending: str
    """How the response ended: its stop reason, with the stop sequence when one ended it."""


def requests_of(entries: Sequence[Entry]) -> list[Request]:
    """The requests whose usage the page's messages carry (an answer, or a batch's first call)."""
    found = []
    for entry in entries:
        message = entry.message
        if isinstance(message, AssistantMessage) and message.usage is not None:
            ending = message.stop_reason.value
            if message.stop_sequence is not None:
                ending += f" ({message.stop_sequence!r})"
            found.append(Request(entry.pos, message.usage, message.response_id, message.model, ending))
        elif isinstance(message, ToolCallMessage) and message.usage is not None:
            found.append(Request(entry.pos, message.usage, message.response_id, None, "tool_use"))
    return found


def pretty_json(value: Any) -> str:
    """Indented JSON of any value a message holds (text, never HTML)."""
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False, sort_keys=True, default=str)


def message_summary(message: Message) -> str:
    """One line saying what a message is, for the compare view."""
    if isinstance(message, UserMessage | SystemMessage):
        return message.text
    if isinstance(message, AssistantMessage):
        return message.text or (message.refusal or "")
    return f"{message.tool_name}({pretty_json(message.arguments)}) -> {message.status.value}: {message.content}"


_PER_REQUEST = ("usage", "response_id", "tokens")
"""What a message records of the request that produced it: two runs never share it, so a
comparison of what was said leaves it out."""


def same(a: Message | None, b: Message | None) -> bool:
    """Whether two messages say the same, as the store would write them (the request's usage,
    response id and tokens aside)."""
    if a is None or b is None:
        return a is b
    return _said(a) == _said(b)


def _said(message: Message) -> dict[str, Any]:
    data = message_to_dict(message)
    for key in _PER_REQUEST:
        data.pop(key, None)
    return data
