"""Helpers shared by the core tests: checks every finished run's transcript must pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tooloop import Message, ToolCall, ToolCallMessage


def assert_valid(messages: Sequence[Message]) -> None:
    """Every call has an outcome, call ids are unique, and each batch is one adjacent run."""
    seen_ids: set[str] = set()
    closed_batches: set[str] = set()
    current: str | None = None
    for message in messages:
        if isinstance(message, ToolCallMessage):
            assert message.status.finished, f"call {message.tool_call_id} has no outcome: {message.status}"
            assert message.tool_call_id not in seen_ids, f"duplicate call id {message.tool_call_id}"
            seen_ids.add(message.tool_call_id)
            if message.batch_id != current:
                assert message.batch_id not in closed_batches, f"batch {message.batch_id} is split"
                if current is not None:
                    closed_batches.add(current)
                current = message.batch_id
        else:
            if current is not None:
                closed_batches.add(current)
            current = None


def call(name: str, arguments: object = None, id: str | None = None) -> ToolCall:
    """A tool call with a readable default id."""
    return ToolCall(id or f"id_{name}", name, {} if arguments is None else arguments)  # type: ignore[arg-type]


def normalised(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with batch ids (random per run) replaced by their order of appearance."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolCallMessage):
            batch = names.setdefault(message.batch_id, f"batch-{len(names)}")
            message = replace(message, batch_id=batch)
        out.append(message)
    return out
