"""Cost that matches the invoice: usage blocks as each provider sends them, served from 127.0.0.1
through the real adapters, priced by hand here from the provider's published price list.

Each provider counts cached and reasoning tokens differently: Anthropic's ``input_tokens`` leaves
out cache reads and writes, OpenAI's and Gemini's include cache reads; Gemini's output count
leaves out thinking, OpenAI's includes reasoning. The figures below are what the provider bills.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.billing import M, price, served_model
from tests.support.wire import WireServer, json_reply, sse_reply
from tooloop import Agent, Limits, StopReason
from tooloop.messages import Usage
from tooloop.transcript import usage_from_dict, usage_to_dict

pytestmark = pytest.mark.usefixtures("served_models")


async def test_anthropic_one_hour_cache_writes_are_priced_at_the_one_hour_rate(wire: WireServer) -> None:
    # claude-sonnet-4-5, published: input $3, 5-minute write $3.75, 1-hour write $6, read $0.30, output $15
    usage = {
        "input_tokens": 21,
        "cache_creation_input_tokens": 12_400,
        "cache_read_input_tokens": 3_600,
        "cache_creation": {"ephemeral_5m_input_tokens": 2_400, "ephemeral_1h_input_tokens": 10_000},
        "output_tokens": 393,
        "service_tier": "standard",
    }
    events = aw.stream_events([{"type": "text", "text": "Done."}], "end_turn", usage)
    events[0][1]["message"]["model"] = "claude-sonnet-4-5-20250929"
    wire.queue(sse_reply(events, named=True))  # a long max_tokens: the adapter streams
    result = await Agent(served_model("anthropic:claude-sonnet-4-5", wire.url)).run("hi")
    assert result.usage.input_tokens == 21 + 12_400 + 3_600  # tooloop's input includes the cache
    assert (result.usage.cache_write_tokens, result.usage.cache_write_1h_tokens) == (12_400, 10_000)
    by_hand = price(
        fresh=(21, "3"), write5=(2_400, "3.75"), write1h=(10_000, "6"), read=(3_600, "0.30"), out=(393, "15")
    )
    assert result.usage.cost == by_hand
    five_minute_rate = price(fresh=(21, "3"), write=(12_400, "3.75"), read=(3_600, "0.30"), out=(393, "15"))
    assert result.usage.cost - five_minute_rate == Decimal(10_000) * (Decimal(6) - Decimal("3.75")) / M


async def test_openai_chat_cached_tokens_are_part_of_prompt_tokens(wire: WireServer) -> None:
    # gpt-4.1, published: input $2, cached input $0.50, output $8
    usage = {
        "prompt_tokens": 2_006,
        "completion_tokens": 300,
        "total_tokens": 2_306,
        "prompt_tokens_details": {"cached_tokens": 1_920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    wire.queue(json_reply(_chat_completion("gpt-4.1-2025-04-14", usage)))
    result = await Agent(served_model("openai:gpt-4.1", wire.url + "/v1")).run("hi")
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (2_006, 1_920)
    assert result.usage.cost == price(fresh=(86, "2"), read=(1_920, "0.50"), out=(300, "8"))


async def test_openai_responses_reasoning_tokens_are_billed_as_output(wire: WireServer) -> None:
    # o4-mini, published: input $1.10, cached input $0.275, output $4.40 (reasoning included)
    usage = {
        "input_tokens": 1_200,
        "input_tokens_details": {"cached_tokens": 1_024},
        "output_tokens": 900,
        "output_tokens_details": {"reasoning_tokens": 704},
        "total_tokens": 2_100,
    }
    wire.queue(json_reply(_responses_body("o4-mini-2025-04-16", usage)))
    result = await Agent(served_model("openai-responses:o4-mini", wire.url + "/v1")).run("hi")
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (900, 704)
    assert result.usage.cost == price(fresh=(176, "1.10"), read=(1_024, "0.275"), out=(900, "4.40"))


async def test_gemini_thinking_tokens_are_added_to_output_and_cached_tokens_are_in_the_prompt(
    wire: WireServer,
) -> None:
    # gemini-2.5-flash, published: input $0.30, cached input $0.03, output $2.50 (thinking included)
    meta = {
        "promptTokenCount": 18_625,
        "cachedContentTokenCount": 18_010,
        "candidatesTokenCount": 188,
        "thoughtsTokenCount": 412,
        "totalTokenCount": 19_225,
    }
    body = {
        "candidates": [
            {"content": {"parts": [{"text": "Done."}], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": meta,
        "modelVersion": "gemini-2.5-flash",
    }
    wire.queue(json_reply(body))
    result = await Agent(served_model("google:gemini-2.5-flash", wire.url)).run("hi")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (18_625, 600)
    assert result.usage.cost == price(fresh=(615, "0.30"), read=(18_010, "0.03"), out=(600, "2.50"))


async def test_a_cost_the_server_bills_is_kept_as_billed(wire: WireServer) -> None:
    usage = {
        "prompt_tokens": 194,
        "completion_tokens": 2,
        "total_tokens": 196,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 0},
        "cost": 0.000667,
    }
    wire.queue(json_reply(_chat_completion("anthropic/claude-sonnet-4.5", usage)))
    result = await Agent(served_model("openrouter:anthropic/claude-sonnet-4.5", wire.url + "/api/v1")).run("hi")
    assert result.usage.cache_write_tokens == 100
    assert result.usage.cost == Decimal("0.000667")


async def test_an_unknown_price_is_none_never_zero(wire: WireServer) -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    wire.queue(json_reply(_chat_completion("my-local-model", usage)))
    result = await Agent(served_model("openai-compatible:my-local-model", wire.url + "/v1")).run("hi")
    assert result.usage.cost is None and result.usage.requests == 1
    assert (result.usage + Usage(requests=1, cost=Decimal("0.01"))).cost is None


def test_max_cost_stops_at_a_request_of_unknown_price() -> None:
    from tooloop.loop.limits import cost_reached

    limits = Limits(max_cost="1.00")
    assert cost_reached(limits, Usage(requests=2, cost=None), None)
    assert not cost_reached(limits, Usage(requests=2, cost=Decimal("0.10")), Usage(requests=1, cost=Decimal("0.10")))
    assert StopReason.COST_LIMIT.value == "cost_limit"


def test_one_hour_writes_survive_the_transcript_and_sums() -> None:
    usage = Usage(input_tokens=10, cache_write_tokens=8, cache_write_1h_tokens=5, requests=1, cost=Decimal("0.5"))
    assert usage_from_dict(usage_to_dict(usage)) == usage
    assert usage_from_dict({"input_tokens": 3}) == Usage(input_tokens=3)  # data written before the field
    assert (usage + usage).cache_write_1h_tokens == 10


def _chat_completion(model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _responses_body(model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
