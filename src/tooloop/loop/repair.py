"""History repair: make any transcript safe to send, whatever crashed or edited it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..messages import Message, ToolCallMessage, ToolCallStatus
from ..outcome import INTERRUPTED

__all__ = ["INTERRUPTED", "interrupted", "repair", "unfinished_tail", "unique_id"]


def repair(messages: Sequence[Message], *, keep_tail: bool = True) -> tuple[list[Message], bool]:
    """Return ``messages`` with every defect a provider would reject fixed, and whether it changed.

    * a tool call without an outcome (``STARTED`` or ``PENDING``) gets a synthetic error result,
      except in the final batch when ``keep_tail`` is set (the loop resolves that batch itself);
    * a missing tool call id is generated, and a repeated one is made unique;
    * a missing batch id becomes the call's own id.

    In tooloop's format a tool result cannot exist without its call (a ``ToolCallMessage`` holds
    both), so orphaned results are impossible once a history is in this form.
    """
    if not messages:
        return [], False
    tail_start = _tail_batch_start(messages) if keep_tail else len(messages)
    seen: set[str] = set()
    out: list[Message] = []
    changed = False
    for index, message in enumerate(messages):
        if isinstance(message, ToolCallMessage):
            fixed = _fix_call(message, seen, index, in_tail=index >= tail_start)
            changed = changed or fixed is not message
            message = fixed
        out.append(message)
    return out, changed


def unique_id(call_id: str, position: int, seen: set[str]) -> str:
    """``call_id`` itself, or a deterministic variant of it (from its position) not yet in ``seen``.

    Deterministic, so the same history repaired twice (a resumed session, a pending approval
    loaded again) gives every call the same id both times.
    """
    if call_id and call_id not in seen:
        return call_id
    base = call_id or "call"
    candidate, attempt = f"{base}_{position}", 0
    while candidate in seen:
        attempt += 1
        candidate = f"{base}_{position}_{attempt}"
    return candidate


def _fix_call(message: ToolCallMessage, seen: set[str], position: int, *, in_tail: bool) -> ToolCallMessage:
    call_id = unique_id(message.tool_call_id, position, seen)
    if call_id != message.tool_call_id:
        message = replace(message, tool_call_id=call_id, batch_id=message.batch_id or call_id)
    seen.add(call_id)
    if not message.status.finished and not in_tail:
        message = interrupted(message)
    return message


def _tail_batch_start(messages: Sequence[Message]) -> int:
    if not messages or not isinstance(messages[-1], ToolCallMessage):
        return len(messages)
    batch = messages[-1].batch_id
    start = len(messages) - 1
    while start > 0:
        previous = messages[start - 1]
        if not isinstance(previous, ToolCallMessage) or previous.batch_id != batch:
            break
        start -= 1
    return start


def unfinished_tail(messages: Sequence[Message]) -> tuple[int, list[ToolCallMessage]]:
    """The start index of the final tool batch and its calls, when any of them lacks an outcome."""
    start = _tail_batch_start(messages)
    batch = [m for m in messages[start:] if isinstance(m, ToolCallMessage)]
    if any(not m.status.finished for m in batch):
        return start, batch
    return len(messages), []


def interrupted(message: ToolCallMessage) -> ToolCallMessage:
    """``message`` failed: it started but never produced a result."""
    return replace(message, status=ToolCallStatus.ERROR, content=INTERRUPTED, error_type="Interrupted")
