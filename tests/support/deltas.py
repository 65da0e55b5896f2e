"""Comparing streamed deltas whatever the network pieces were.

A stream reader hands over the deltas of one network read merged (the text of several chunks as
one ``TextDelta``, the fragments of one tool call as one ``ToolCallDelta``), so how many events a
test sees depends on how the bytes fell. :func:`merged` gives the events as if every byte had
arrived at once: what a test can assert exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta


def merged(events: Iterable[object]) -> list[object]:
    """``events`` with consecutive text, thinking, and same-call deltas joined."""
    out: list[object] = []
    for event in events:
        last = out[-1] if out else None
        joined = _join(last, event) if last is not None else None
        if joined is None:
            out.append(event)
        else:
            out[-1] = joined
    return out


def _join(last: object, event: object) -> ModelEvent | None:
    if isinstance(last, TextDelta) and isinstance(event, TextDelta):
        return TextDelta(last.text + event.text)
    if isinstance(last, ThinkingDelta) and isinstance(event, ThinkingDelta):
        return ThinkingDelta(last.text + event.text)
    if isinstance(last, ToolCallDelta) and isinstance(event, ToolCallDelta) and last.index == event.index:
        return ToolCallDelta(
            last.index,
            event.tool_call_id or last.tool_call_id,
            last.name or event.name,
            last.arguments_delta + event.arguments_delta,
        )
    return None
