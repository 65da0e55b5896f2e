"""``agent.stream_sync()`` and ``stream_text()``: events and text for code without an event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tooloop import (
    Agent,
    ModelRequestFinished,
    ModelResponse,
    RunFinished,
    StopReason,
    SyncEventStream,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
)
from tooloop.testing import ScriptedModel


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sun"


def test_stream_sync_yields_the_same_events_as_stream() -> None:
    agent = Agent("test:echo", tools=[weather])
    sync_events = list(agent.stream_sync("hi"))

    async def collect() -> list[object]:
        async with agent.stream("hi") as events:
            return [event async for event in events]

    async_events = asyncio.run(collect())
    assert [type(e).__name__ for e in sync_events] == [type(e).__name__ for e in async_events]
    kinds = {type(e) for e in sync_events}
    assert {ToolCallStarted, ToolCallFinished, ModelRequestFinished, TextDelta} <= kinds
    last = sync_events[-1]
    assert isinstance(last, RunFinished) and last.result.text == "You said: hi. Tool results: weather -> text: sun"


def test_stream_text_prints_the_answer_as_it_comes() -> None:
    stream = Agent("test:echo").stream_sync("hello there")
    pieces = list(stream.stream_text())
    assert len(pieces) > 1  # it arrived in pieces
    assert "".join(pieces) == "You said: hello there"
    assert stream.result is not None and stream.result.stop_reason is StopReason.END_TURN


async def test_the_async_stream_has_stream_text_too() -> None:
    async with Agent("test:echo").stream("hello") as events:
        assert "".join([piece async for piece in events.stream_text()]) == "You said: hello"
        assert events.result is not None and events.result.text == "You said: hello"


async def test_stream_sync_works_where_an_event_loop_is_already_running() -> None:
    # A notebook cell: this thread runs a loop, and the sync stream still works.
    assert "".join(Agent("test:echo").stream_sync("nb").stream_text()) == "You said: nb"


def test_an_error_is_raised_from_the_for_loop() -> None:
    model = ScriptedModel([RuntimeError("provider exploded")])
    with pytest.raises(Exception, match="provider exploded"):
        for _ in Agent(model).stream_sync("hi"):
            pass


def test_leaving_early_cancels_the_run_and_its_thread_ends() -> None:
    started = threading.Event()

    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c1", "hang", {})]), ModelResponse("after")])
    with Agent(model, tools=[hang]).stream_sync("wait") as stream:
        for event in stream:
            if isinstance(event, ToolCallStarted):
                break
        assert started.wait(10)
    assert stream._thread is not None and not stream._thread.is_alive()
    assert list(stream) == []


def test_cancel_ends_the_stream_with_a_cancelled_result() -> None:
    async def hang() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c1", "hang", {})])])
    stream = Agent(model, tools=[hang]).stream_sync("wait")
    events = []
    for event in stream:
        events.append(event)
        if isinstance(event, ToolCallStarted):
            stream.cancel("enough")
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.stop_reason is StopReason.CANCELLED


async def test_a_plain_for_over_an_async_stream_says_what_to_do() -> None:
    agent = Agent("test:echo")
    with pytest.raises(
        TypeError, match=r"use 'async for event in agent.stream\(...\)', or 'for event in agent.stream_sync"
    ):
        for _ in agent.stream("hi"):  # type: ignore[attr-defined]
            pass
    with pytest.raises(TypeError, match=r"a Conversation is asynchronous: use 'async for message"):
        for _ in agent.conversation("hi"):  # type: ignore[attr-defined]
            pass


def test_stream_sync_is_a_sync_event_stream() -> None:
    stream = Agent("test:echo").stream_sync("hi")
    assert isinstance(stream, SyncEventStream)
    stream.close()  # never started: nothing to stop
    assert list(stream) == []
