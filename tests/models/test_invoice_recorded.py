"""Usage blocks recorded from the providers' real APIs, priced by hand, against tooloop's figures.

Each block below is the ``usage`` part of a response a provider really sent, taken exactly as
recorded (every number and field) from a public repository's HTTP recordings, named above it.
Only the usage is taken; it is served from 127.0.0.1 inside an otherwise minimal response of the
same API, and the request is priced here from the provider's published price list.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.billing import price, served_model
from tests.models.test_openai_responses import message, response
from tests.support.wire import WireServer, json_reply, sse_reply
from tooloop import Agent
from tooloop.messages import Usage
from tooloop.models import ModelSettings

pytestmark = pytest.mark.usefixtures("served_models")


async def _one_turn(spec: str, base_url: str, stream: bool = False) -> Usage:
    result = await Agent(served_model(spec, base_url), settings=ModelSettings(stream=stream)).run("Hi.")
    return result.usage


# pydantic/pydantic-ai, tests/models/cassettes/test_anthropic/test_anthropic_cache_real_api.yaml
# (claude-sonnet-4-5-20250929, Messages API, not streamed): a cache read, then a read plus a
# five-minute write
ANTHROPIC_READ = {
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
    "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1111, "inference_geo": "not_available",
    "input_tokens": 3, "output_tokens": 406, "service_tier": "standard",
}  # fmt: skip
ANTHROPIC_READ_AND_5M_WRITE = {
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 418},
    "cache_creation_input_tokens": 418, "cache_read_input_tokens": 1111, "inference_geo": "not_available",
    "input_tokens": 3, "output_tokens": 33, "service_tier": "standard",
}  # fmt: skip


@pytest.mark.parametrize(
    ("block", "by_hand"),
    [
        # claude-sonnet-4-5, per million (anthropic.com/pricing, docs "Prompt caching" pricing table):
        # input $3, 5-minute cache write $3.75, 1-hour write $6, cache read $0.30, output $15
        (ANTHROPIC_READ, price((3, "3"), (1111, "0.30"), (406, "15"))),
        (ANTHROPIC_READ_AND_5M_WRITE, price((3, "3"), (418, "3.75"), (1111, "0.30"), (33, "15"))),
    ],
)
async def test_anthropic_recorded_cache_read_and_five_minute_write(
    wire: WireServer, block: dict[str, Any], by_hand: Decimal
) -> None:
    body = aw.message([{"type": "text", "text": "Python."}], "end_turn", block)
    body["model"] = "claude-sonnet-4-5-20250929"
    wire.queue(json_reply(body))
    usage = await _one_turn("anthropic:claude-sonnet-4-5", wire.url)
    written = block["cache_creation_input_tokens"]
    read = block["cache_read_input_tokens"]
    assert usage.input_tokens == block["input_tokens"] + written + read
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cache_write_1h_tokens) == (read, written, 0)
    assert usage.output_tokens == block["output_tokens"]
    assert usage.cost == by_hand


async def test_anthropic_recorded_one_hour_write_streamed(wire: WireServer) -> None:
    # pydantic/pydantic-ai,
    # tests/models/cassettes/test_anthropic/test_anthropic_cache_earlier_breakpoint_raised_to_later_longer_ttl.yaml
    # (claude-sonnet-4-6, streamed): message_start's usage, then message_delta's cumulative usage
    start = {
        "input_tokens": 13, "cache_creation_input_tokens": 3913, "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 3913},
        "output_tokens": 1, "service_tier": "standard", "inference_geo": "global",
    }  # fmt: skip
    end = {"input_tokens": 13, "cache_creation_input_tokens": 3913, "cache_read_input_tokens": 0, "output_tokens": 4}
    events = aw.stream_events([{"type": "text", "text": "Django"}], "end_turn", start)
    events[0][1]["message"]["model"] = "claude-sonnet-4-6"
    events[0][1]["message"]["usage"] = start
    events[-2][1]["usage"] = end
    wire.queue(sse_reply(events, named=True))
    usage = await _one_turn("anthropic:claude-sonnet-4-6", wire.url, stream=True)
    assert (usage.input_tokens, usage.output_tokens) == (13 + 3913, 4)
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens, usage.cache_read_tokens) == (3913, 3913, 0)
    # claude-sonnet-4-6, per million (anthropic.com/pricing): input $3, 1-hour cache write $6 (2x
    # input), output $15
    assert usage.cost == price((13, "3"), (3913, "6"), (4, "15"))


async def test_openai_chat_recorded_reasoning_tokens(wire: WireServer) -> None:
    # pydantic/pydantic-ai, tests/models/cassettes/test_openai/test_openai_model_thinking_part.yaml
    # (o3-mini-2025-01-31, Chat Completions, second response)
    block = {
        "completion_tokens": 2320,
        "completion_tokens_details": {"accepted_prediction_tokens": 0, "audio_tokens": 0,
                                      "reasoning_tokens": 1792, "rejected_prediction_tokens": 0},
        "prompt_tokens": 577, "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0},
        "total_tokens": 2897,
    }  # fmt: skip
    body = ow.completion({"content": "Done."}, "stop", block)
    body["model"] = "o3-mini-2025-01-31"
    wire.queue(ow.plain(body))
    usage = await _one_turn("openai:o3-mini", wire.url + "/v1")
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (577, 2320, 1792)
    # o3-mini, per million (platform.openai.com/docs/pricing): input $1.10, cached input $0.55,
    # output $4.40; reasoning tokens are output tokens, already inside completion_tokens
    assert usage.cost == price((577, "1.10"), (2320, "4.40"))


@pytest.mark.parametrize(
    ("block", "source"),
    [
        (
            {"input_tokens": 43902, "input_tokens_details": {"cached_tokens": 4352}, "output_tokens": 4474,
             "output_tokens_details": {"reasoning_tokens": 3840}, "total_tokens": 48376},
            "tests/cassettes/test_thinking_native_tools/test_thinking_with_native_tool_wire_contract[openai-responses].yaml",
        ),
        (
            {"input_tokens": 12594, "input_tokens_details": {"cached_tokens": 3200}, "output_tokens": 1150,
             "output_tokens_details": {"reasoning_tokens": 1088}, "total_tokens": 13744},
            "tests/cassettes/test_temporal/test_web_search_agent_run_in_workflow.yaml",
        ),
    ],
)  # fmt: skip
async def test_openai_responses_recorded_cache_and_reasoning(
    wire: WireServer, block: dict[str, Any], source: str
) -> None:
    # pydantic/pydantic-ai, `source` (gpt-5-2025-08-07, Responses API)
    body = response([message("Done.")])
    body["model"] = "gpt-5-2025-08-07"
    body["usage"] = block
    wire.queue(json_reply(body))
    usage = await _one_turn("openai-responses:gpt-5", wire.url + "/v1")
    cached = block["input_tokens_details"]["cached_tokens"]
    reasoning = block["output_tokens_details"]["reasoning_tokens"]
    assert (usage.input_tokens, usage.cache_read_tokens) == (block["input_tokens"], cached)
    assert (usage.output_tokens, usage.reasoning_tokens) == (block["output_tokens"], reasoning)
    # gpt-5, per million (platform.openai.com/docs/pricing): input $1.25, cached input $0.125,
    # output $10 (reasoning tokens are billed as output and are inside output_tokens)
    assert usage.cost == price(
        (block["input_tokens"] - cached, "1.25"), (cached, "0.125"), (block["output_tokens"], "10")
    )


async def test_gemini_recorded_implicit_cache_hit_with_thinking(wire: WireServer) -> None:
    # pydantic/pydantic-ai,
    # tests/models/cassettes/test_multimodal_tool_returns/test_mixed_content_ordering[google_2_5].yaml
    # (gemini-2.5-flash, generateContent, second response: text and an image, part of it cached)
    meta = {
        "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 63}, {"modality": "IMAGE", "tokenCount": 141}],
        "cachedContentTokenCount": 204,
        "candidatesTokenCount": 89,
        "promptTokenCount": 373,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 115}, {"modality": "IMAGE", "tokenCount": 258}],
        "thoughtsTokenCount": 167,
        "totalTokenCount": 629,
    }
    candidate = {"content": {"parts": [{"text": "A cat."}], "role": "model"}, "finishReason": "STOP", "index": 0}
    wire.queue(json_reply({"candidates": [candidate], "usageMetadata": meta, "modelVersion": "gemini-2.5-flash"}))
    usage = await _one_turn("google:gemini-2.5-flash", wire.url)
    assert (usage.input_tokens, usage.cache_read_tokens) == (373, 204)
    assert (usage.output_tokens, usage.reasoning_tokens) == (89 + 167, 167)
    # gemini-2.5-flash, per million (ai.google.dev/gemini-api/docs/pricing, paid tier): input $0.30
    # (text, image, video), context caching $0.03, output $2.50 (thinking tokens included)
    assert usage.cost == price((373 - 204, "0.30"), (204, "0.03"), (89 + 167, "2.50"))


async def test_openrouter_recorded_cost_is_the_invoice(wire: WireServer) -> None:
    # pydantic/pydantic-ai, tests/models/cassettes/test_openrouter/test_openrouter_file_annotation.yaml
    # (openai/gpt-5.1-codex-mini through OpenRouter, a PDF attached): OpenRouter bills ``cost``,
    # which here is more than the upstream prompt and completion costs (the PDF's processing is in
    # it), so tooloop keeps the figure OpenRouter charged instead of pricing the tokens itself
    block = {
        "completion_tokens": 80, "completion_tokens_details": {"image_tokens": 0, "reasoning_tokens": 64},
        "cost": 0.00216775,
        "cost_details": {"upstream_inference_completions_cost": 0.00016, "upstream_inference_cost": None,
                         "upstream_inference_prompt_cost": 7.75e-06},
        "is_byok": False, "prompt_tokens": 31,
        "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0, "video_tokens": 0},
        "total_tokens": 111,
    }  # fmt: skip
    body = ow.completion({"content": "A dummy PDF."}, "stop", block)
    body["model"] = "openai/gpt-5.1-codex-mini"
    wire.queue(ow.plain(body))
    usage = await _one_turn("openrouter:openai/gpt-5.1-codex-mini", wire.url + "/api/v1")
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (31, 80, 64)
    assert usage.cost == Decimal("0.00216775")


async def test_deepseek_recorded_cache_hit_and_reasoning(wire: WireServer) -> None:
    # pydantic/pydantic-ai, tests/models/cassettes/test_deepseek/test_deepseek_deferred_capability_with_thinking.yaml
    # (deepseek-reasoner requested, answered by deepseek-v4-flash): DeepSeek reports its cache
    # hits twice, as ``prompt_cache_hit_tokens`` and as OpenAI's ``prompt_tokens_details``
    block = {
        "completion_tokens": 116, "completion_tokens_details": {"reasoning_tokens": 60},
        "prompt_cache_hit_tokens": 512, "prompt_cache_miss_tokens": 51, "prompt_tokens": 563,
        "prompt_tokens_details": {"cached_tokens": 512}, "total_tokens": 679,
    }  # fmt: skip
    body = ow.completion({"content": "Done."}, "stop", block)
    body["model"] = "deepseek-v4-flash"
    wire.queue(ow.plain(body))
    usage = await _one_turn("deepseek:deepseek-reasoner", wire.url)
    # the hits counted once, inside the prompt count (563 = 512 hits + 51 misses)
    assert (usage.input_tokens, usage.cache_read_tokens) == (563, 512)
    assert (usage.output_tokens, usage.reasoning_tokens) == (116, 60)
    # tooloop has no DeepSeek price list: the cost says unknown, never a silent zero
    assert usage.cost is None
