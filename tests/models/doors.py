"""Driving an agent through both front doors (``run`` and ``stream``) for the provider wire tests.

``run`` makes plain requests and ``stream`` streamed ones, so one test body checks both paths of
an adapter end to end; the events a streamed run produced come back for the stream door.
"""

from __future__ import annotations

from collections.abc import Sequence

from tooloop import Agent, RunFinished, RunResult
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import Message

DOORS = ("run", "stream")
TRANSPORTS = ("lean", "sdk")


async def drive(
    agent: Agent, door: str, prompt: str, history: Sequence[Message] | None = None
) -> tuple[RunResult, list[ModelEvent]]:
    """The result of one run through ``door``, and the model events it streamed (none for ``run``)."""
    if door == "run":
        return await agent.run(prompt, history=history), []
    events: list[ModelEvent] = []
    async with agent.stream(prompt, history=history) as stream:
        async for event in stream:
            if isinstance(event, TextDelta | ThinkingDelta | ToolCallDelta):
                events.append(event)
            elif isinstance(event, RunFinished):
                return event.result, events
    raise AssertionError("the stream ended without RunFinished")


def joined(events: list[ModelEvent], kind: type[TextDelta] | type[ThinkingDelta]) -> str:
    """The text of all events of one kind, joined."""
    return "".join(e.text for e in events if isinstance(e, kind))


def call_arguments(events: list[ModelEvent], index: int = 0) -> str:
    """The arguments of one streamed tool call, as its deltas say."""
    return "".join(e.arguments_delta for e in events if isinstance(e, ToolCallDelta) and e.index == index)
