"""A whole conversation's bill, request by request, as the invoice counts it.

Each provider's usage blocks are served from 127.0.0.1 in the layout its API sends them (an
Anthropic stream repeats the input and cache counts in ``message_delta``; a Chat Completions stream
sends usage in a last chunk without choices; Gemini leaves thinking out of its output count), over
a multi-turn run with tool calls. Each request is priced here by hand from the provider's published
price list; every message's usage must match its request's price, and the run's total the sum.

The repository holds no recording of real provider traffic (its cassettes are recorded by the tests
themselves), so these blocks follow the providers' documented shapes rather than captured bytes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.billing import add, price, served_model
from tests.models.test_openai_responses import call, message, response
from tests.support.wire import WireServer, json_reply, sse_reply
from tooloop import Agent, RunResult
from tooloop.messages import AssistantMessage, ToolCallMessage, Usage
from tooloop.models import ModelSettings

pytestmark = pytest.mark.usefixtures("served_models")


def _per_request(result: RunResult) -> list[Usage]:
    """The usage kept on the messages each request produced (a batch's first call carries it)."""
    return [m.usage for m in result.transcript if isinstance(m, AssistantMessage | ToolCallMessage) and m.usage]


def _assert_bill(result: RunResult, by_hand: list[Decimal]) -> None:
    kept = _per_request(result)
    assert [u.cost for u in kept] == by_hand
    assert result.usage.requests == len(by_hand)
    assert result.usage.cost == sum(by_hand, Decimal(0))


async def test_anthropic_conversation_with_one_hour_writes_and_reads(wire: WireServer) -> None:
    # claude-sonnet-4-5, published per million: input $3, 1-hour cache write $6, 5-minute write
    # $3.75, cache read $0.30, output $15
    blocks = [
        {"input_tokens": 1_850, "cache_creation_input_tokens": 9_400, "cache_read_input_tokens": 0,
         "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 9_400},
         "output_tokens": 120, "service_tier": "standard"},
        {"input_tokens": 310, "cache_creation_input_tokens": 1_960, "cache_read_input_tokens": 9_400,
         "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_960},
         "output_tokens": 87, "service_tier": "standard"},
        {"input_tokens": 95, "cache_creation_input_tokens": 480, "cache_read_input_tokens": 11_360,
         "cache_creation": {"ephemeral_5m_input_tokens": 480, "ephemeral_1h_input_tokens": 0},
         "output_tokens": 41, "service_tier": "standard"},
    ]  # fmt: skip
    contents = [
        ([{"type": "tool_use", "id": "toolu_01", "name": "add", "input": {"a": 2, "b": 3}}], "tool_use"),
        ([{"type": "tool_use", "id": "toolu_02", "name": "add", "input": {"a": 5, "b": 4}}], "tool_use"),
        ([{"type": "text", "text": "9."}], "end_turn"),
    ]
    for (content, stop), block in zip(contents, blocks, strict=True):
        events = aw.stream_events(content, stop, block)
        events[0][1]["message"]["model"] = "claude-sonnet-4-5-20250929"
        # the API repeats the input and cache counts, cumulative, in message_delta
        delta_usage = events[-2][1]["usage"]
        delta_usage.update({k: v for k, v in block.items() if k != "service_tier"})
        wire.queue(sse_reply(events, named=True))
    agent = Agent(
        served_model("anthropic:claude-sonnet-4-5", wire.url), tools=[add], settings=ModelSettings(cache_ttl="1h")
    )
    result = await agent.run("Add 2 and 3, then add 4.")
    by_hand = [
        price((1_850, "3"), (9_400, "6"), (120, "15")),
        price((310, "3"), (1_960, "6"), (9_400, "0.30"), (87, "15")),
        price((95, "3"), (480, "3.75"), (11_360, "0.30"), (41, "15")),
    ]
    _assert_bill(result, by_hand)
    assert result.usage.input_tokens == sum(b["input_tokens"] + b["cache_creation_input_tokens"]
                                            + b["cache_read_input_tokens"] for b in blocks)  # fmt: skip
    assert (result.usage.cache_write_tokens, result.usage.cache_write_1h_tokens) == (11_840, 11_360)


async def test_openai_chat_streamed_conversation_usage_in_the_last_chunk(wire: WireServer) -> None:
    # gpt-4.1, published per million: input $2, cached input $0.50, output $8
    name = {"model": "gpt-4.1-2025-04-14"}
    call = ow.call_start(0, "call_1", "add", '{"a": 2, "b": 3}')
    first = [
        ow.chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        ow.chunk({}, "tool_calls"),
        ow.usage_chunk(ow.usage(3_410, 22, cached=3_072)),
    ]
    second = [
        ow.chunk({"role": "assistant", "content": "5."}),
        ow.chunk({}, "stop"),
        ow.usage_chunk(ow.usage(3_460, 4, cached=3_328)),
    ]
    wire.queue(ow.stream(*[{**c, **name} for c in first]), ow.stream(*[{**c, **name} for c in second]))
    agent = Agent(served_model("openai:gpt-4.1", wire.url + "/v1"), tools=[add], settings=ModelSettings(stream=True))
    result = await agent.run("What is 2 + 3?")
    by_hand = [
        price((3_410 - 3_072, "2"), (3_072, "0.50"), (22, "8")),
        price((3_460 - 3_328, "2"), (3_328, "0.50"), (4, "8")),
    ]
    _assert_bill(result, by_hand)


async def test_openai_responses_conversation_with_reasoning(wire: WireServer) -> None:
    # o4-mini, published per million: input $1.10, cached input $0.275, output $4.40 (reasoning included)
    first = response([call("call_1", "add", '{"a": 2, "b": 3}')], inp=2_300, out=410, cached=1_920, reasoning=384)
    second = response([message("5.")], inp=2_350, out=150, cached=2_304, reasoning=128)
    for body in (first, second):
        body["model"] = "o4-mini-2025-04-16"
    wire.queue(json_reply(first), json_reply(second))
    result = await Agent(served_model("openai-responses:o4-mini", wire.url + "/v1"), tools=[add]).run("What is 2 + 3?")
    by_hand = [
        price((2_300 - 1_920, "1.10"), (1_920, "0.275"), (410, "4.40")),
        price((2_350 - 2_304, "1.10"), (2_304, "0.275"), (150, "4.40")),
    ]
    _assert_bill(result, by_hand)
    assert result.usage.reasoning_tokens == 512


async def test_gemini_conversation_with_thinking_and_implicit_cache_hits(wire: WireServer) -> None:
    # gemini-2.5-flash, published per million: input $0.30, cached input $0.03, output $2.50 (thinking included)
    def answer(parts: list[dict[str, Any]], meta: dict[str, int]) -> Any:
        candidate = {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        return json_reply({"candidates": [candidate], "usageMetadata": meta, "modelVersion": "gemini-2.5-flash"})

    wire.queue(
        answer([{"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}}],
               {"promptTokenCount": 4_210, "candidatesTokenCount": 18, "thoughtsTokenCount": 240,
                "totalTokenCount": 4_468}),
        answer([{"text": "5."}],
               {"promptTokenCount": 4_262, "cachedContentTokenCount": 4_096, "candidatesTokenCount": 3,
                "thoughtsTokenCount": 61, "totalTokenCount": 4_326}),
    )  # fmt: skip
    agent = Agent(served_model("google:gemini-2.5-flash", wire.url), tools=[add], settings=ModelSettings(stream=False))
    result = await agent.run("What is 2 + 3?")
    by_hand = [
        price((4_210, "0.30"), (18 + 240, "2.50")),
        price((4_262 - 4_096, "0.30"), (4_096, "0.03"), (3 + 61, "2.50")),
    ]
    _assert_bill(result, by_hand)
