"""A response cut off while writing a tool call, on the Chat Completions wire: never run, asked once
more with a larger ``max_tokens``, or a stop saying the output limit was hit."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.models.openai_wire import call_args, call_start, chunk, stream, usage, usage_chunk
from tests.support.wire import Reply, WireServer
from tooloop import Agent, Limits, RunFinished, RunResult, StopReason, ToolCallStatus
from tooloop.models.base import ModelSettings
from tooloop.models.openai_chat import OpenAIChatModel

Make = Callable[..., OpenAIChatModel]
ran: list[str] = []


async def _streamed(agent: Agent, prompt: str) -> RunResult:
    """The result of ``agent.stream(prompt)`` (every request streamed)."""
    async with agent.stream(prompt) as events:
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("the stream ended without RunFinished")


def read_file(path: str) -> str:
    """A file's text."""
    ran.append(path)
    return "contents"


def _cut_stream(finish: str) -> Reply:
    return stream(
        chunk({"role": "assistant", "content": None, "tool_calls": [call_start(0, "call_1", "read_file")]}),
        chunk({"tool_calls": [call_args(0, '{"path": "/very/long/pa')]}),
        chunk({}, finish),
        usage_chunk(usage(40, 16)),
    )


async def test_a_server_saying_tool_calls_with_half_written_arguments_runs_nothing(
    wire: WireServer, make_model: Make
) -> None:
    ran.clear()
    wire.queue(_cut_stream("tool_calls"))
    result = await _streamed(Agent(make_model(), tools=[read_file]), "read it")
    assert result.stop_reason is StopReason.MAX_TOKENS and ran == []
    (call,) = result.tool_calls
    assert call.status is ToolCallStatus.CANCELLED
    assert "output token limit" in call.content and "not valid JSON" not in call.content
    assert len(wire.requests) == 1


async def test_finish_reason_length_is_asked_again_with_twice_max_tokens(wire: WireServer, make_model: Make) -> None:
    ran.clear()
    whole = stream(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call_start(0, "call_2", "read_file", '{"path": "/a"}')],
            }
        ),
        chunk({}, "tool_calls"),
        usage_chunk(usage(40, 30)),
    )
    done = stream(chunk({"role": "assistant", "content": "Done."}), chunk({}, "stop"), usage_chunk(usage(60, 2)))
    wire.queue(_cut_stream("length"), whole, done)
    agent = Agent(make_model(), tools=[read_file], settings=ModelSettings(max_tokens=64))
    result = await _streamed(agent, "read it")
    assert (result.stop_reason, result.text, ran) == (StopReason.END_TURN, "Done.", ["/a"])
    sent = [json.loads(r.body) for r in wire.requests]
    assert [body["max_completion_tokens"] for body in sent] == [64, 128, 64]
    assert [m["role"] for m in sent[1]["messages"]] == ["user"]  # the cut answer is not sent back
    assert result.usage.requests == 3 and result.usage.output_tokens == 16 + 30 + 2  # the cut one is paid for


async def test_without_retry_the_run_stops_with_the_output_limit(wire: WireServer, make_model: Make) -> None:
    ran.clear()
    wire.queue(_cut_stream("length"))
    agent = Agent(
        make_model(), tools=[read_file], settings=ModelSettings(max_tokens=64), limits=Limits(retry_cut_calls=False)
    )
    result = await _streamed(agent, "read it")
    assert result.stop_reason is StopReason.MAX_TOKENS and ran == [] and len(wire.requests) == 1
