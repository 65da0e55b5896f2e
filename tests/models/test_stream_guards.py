"""``agent.stream()``'s run and its consumer stay apart: nothing the consumer does to its own task
(timeouts around each wait, a new task per wait, a slow loop body) reaches the run, and everything
that cancels the run (its token, from any thread; its read deadlines; a timeout inside a tool)
reaches only the run. Guards for any change to how the stream drives its run."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable

import anyio
import pytest

from tests.models.openai_wire import chunk
from tests.support.scripted import calls_then
from tooloop import (
    Agent,
    AssistantMessage,
    RunFinished,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallStatus,
    get_model,
    tool,
)

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    await reader.readexactly(next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")))


def _piece(delta: dict[str, object], finish: str | None = None) -> bytes:
    return _framed(b"data: " + json.dumps(chunk(delta, finish)).encode() + b"\n\n")


def _framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _answer_slowly(writer: asyncio.StreamWriter, words: list[str], gap: float) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    writer.write(_piece({"role": "assistant", "content": words[0]}))
    await writer.drain()
    for word in words[1:]:
        await asyncio.sleep(gap)
        writer.write(_piece({"content": word}))
        await writer.drain()
    writer.write(_piece({}, "stop") + _framed(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await writer.drain()


async def _serving(serve: Serve) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


WORDS = ["One", " two", " three", " four", " five", " six"]


async def test_timeouts_around_each_wait_in_a_new_task_each_time_leave_the_answer_whole() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await _answer_slowly(writer, WORDS, 0.03)
        writer.close()

    server, url = await _serving(serve)
    try:
        async with get_model("openai-compatible:m", base_url=url, api_key="k", max_retries=0) as model:
            events = Agent(model).stream("count")
            texts: list[str] = []
            gave_up = 0
            turn = 0
            async with events:
                while True:
                    turn += 1
                    try:
                        if turn % 2:  # asyncio.wait_for runs each wait in a task of its own on Python 3.11
                            event = await asyncio.wait_for(events.__anext__(), 0.01)
                        else:
                            async with asyncio.timeout(0.01):
                                event = await events.__anext__()
                    except TimeoutError:
                        gave_up += 1
                        continue
                    except StopAsyncIteration:
                        break
                    if isinstance(event, TextDelta):
                        texts.append(event.text)
    finally:
        server.close()
    assert gave_up >= 4
    assert "".join(texts) == "".join(WORDS)
    result = events.result
    assert result is not None and result.stop_reason is StopReason.END_TURN and result.text == "".join(WORDS)
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


async def test_a_cancel_from_another_thread_mid_answer_ends_the_stream_cancelled() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(_piece({"role": "assistant", "content": "Hel"}))
        await writer.drain()
        await reader.read()  # the rest never comes: only the client can end this
        writer.close()

    server, url = await _serving(serve)
    try:
        async with get_model("openai-compatible:m", base_url=url, api_key="k", max_retries=0) as model:
            events = Agent(model).stream("hi")
            seen: list[object] = []
            async with events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, TextDelta):  # the run now waits for the next piece
                        threading.Timer(0.05, events.cancel, args=("from a thread",)).start()
                        break
                last = await asyncio.wait_for(_last(events), 5)
    finally:
        server.close()
    assert isinstance(last, RunFinished) and last.result.stop_reason is StopReason.CANCELLED
    assert last.result.transcript[-1] == AssistantMessage("Hel", stop_reason=StopReason.CANCELLED)
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


async def _last(events: object) -> object:
    last = None
    async for event in events:  # type: ignore[attr-defined]
        last = event
    return last


async def test_a_consumer_slower_than_the_read_timeout_never_trips_it() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await _answer_slowly(writer, WORDS[:3], 0.1)
        writer.close()

    server, url = await _serving(serve)
    try:
        async with get_model("openai-compatible:m", base_url=url, api_key="k", max_retries=0, timeout=0.8) as model:
            texts: list[str] = []
            async with Agent(model).stream("count") as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        texts.append(event.text)
                        await asyncio.sleep(1.2)  # longer than the read timeout, while the run reads on
    finally:
        server.close()
    assert "".join(texts) == "".join(WORDS[:3])
    assert events.result is not None and events.result.stop_reason is StopReason.END_TURN


async def test_inside_a_streamed_run_the_current_task_is_the_runs_own_and_its_timeouts_work() -> None:
    seen: dict[str, object] = {}

    @tool
    async def patient() -> str:
        """Give up on two slow things, one with asyncio's timeout and one with anyio's."""
        seen["task"] = asyncio.current_task()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.02):
                await asyncio.sleep(5)
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.02):
                await anyio.sleep(5)
        return "gave up twice"

    consumer = asyncio.current_task()
    events = Agent(calls_then("done", ToolCall("c1", "patient", {})), tools=[patient]).stream("go")
    async with events:
        async for _ in events:
            pass
    assert seen["task"] is not None and seen["task"] is not consumer
    result = events.result
    assert result is not None and result.text == "done"
    assert [c.result for c in result.transcript.tool_invocations] == ["gave up twice"]
    assert consumer is not None and consumer.cancelling() == 0


async def test_a_tool_raising_cancelled_error_itself_fails_its_call_and_cancels_nobody() -> None:
    @tool
    async def odd() -> str:
        """Raise CancelledError although nobody cancelled anything."""
        raise asyncio.CancelledError("made up")

    consumer = asyncio.current_task()
    events = Agent(calls_then("done", ToolCall("c1", "odd", {})), tools=[odd]).stream("go")
    async with events:
        async for _ in events:
            pass
    result = events.result
    assert result is not None and result.text == "done"
    [call] = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.ERROR and "raised CancelledError" in call.content
    assert consumer is not None and consumer.cancelling() == 0
