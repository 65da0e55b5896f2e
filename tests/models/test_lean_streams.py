"""``agent.stream()`` over the lean transport: many streams at once, and streams left half way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from tests.models.openai_wire import chunk
from tests.support.rollout_server import RolloutServer
from tooloop import Agent, AssistantMessage, RunFinished, StopReason, TextDelta, get_model, tool
from tooloop.errors import ProviderOverloadedError
from tooloop.models.openai_chat import OpenAIChatModel


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    await asyncio.sleep(0)
    return key.upper()


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    await reader.readexactly(next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")))


@pytest.fixture
async def rollout() -> AsyncIterator[RolloutServer]:
    server = RolloutServer()
    await server.start()
    yield server
    await server.close()


async def test_many_concurrent_streams_each_end_with_their_own_result(rollout: RolloutServer) -> None:
    async with get_model("openai-compatible:rollout", base_url=rollout.url, api_key="k", max_retries=0) as model:
        agent = Agent(model, tools=[lookup])

        async def one(n: int) -> tuple[str, str]:
            texts = []
            async for event in agent.stream(f"key {n}"):
                if isinstance(event, TextDelta):
                    texts.append(event.text)
                elif isinstance(event, RunFinished):
                    return "".join(texts), event.result.text
            raise AssertionError("the stream ended without RunFinished")

        answers = await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(300))), 60)
    assert answers == [(f"answer: KEY {n}",) * 2 for n in range(300)]
    assert all(rollout.keys[f"key {n}"] == 2 for n in range(300))  # the tool call, then the answer


async def test_a_stream_abandoned_mid_answer_closes_its_connection() -> None:
    closed = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        first = b"data: " + json.dumps(chunk({"role": "assistant", "content": "Hel"})).encode() + b"\n\n"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        if await reader.read() == b"":  # the rest is never sent: only the client can end this
            closed.set()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        model = get_model("openai-compatible:m", base_url=url, api_key="k", max_retries=0)
        assert isinstance(model, OpenAIChatModel)
        async with model, Agent(model).stream("hi") as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    break
        await asyncio.wait_for(closed.wait(), 10)
    finally:
        server.close()
    result = events.result
    assert result is not None and result.stop_reason is StopReason.CANCELLED
    assert result.transcript[-1] == AssistantMessage("Hel", stop_reason=StopReason.CANCELLED)


async def test_text_before_an_error_event_in_the_same_piece_is_streamed_and_kept() -> None:
    failure = {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}
    body = b"".join(
        b"data: " + json.dumps(event).encode() + b"\n\n"
        for event in (chunk({"role": "assistant", "content": "Hi"}), chunk({"content": " there"}), failure)
    )

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body))
        writer.write(body)  # one piece: the text and the error arrive together
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    seen: list[str] = []
    try:
        async with get_model("openai-compatible:m", base_url=url, api_key="k", max_retries=0) as model:
            with pytest.raises(ProviderOverloadedError, match="server had an error") as info:
                async for event in Agent(model).stream("hi"):
                    if isinstance(event, TextDelta):
                        seen.append(event.text)
    finally:
        server.close()
    assert seen == ["Hi there"]  # the chunks of one piece, one delta
    assert info.value.partial_text == "Hi there"
