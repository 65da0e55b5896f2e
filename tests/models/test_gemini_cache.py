"""Gemini's explicit context cache (``ModelSettings(cache="explicit")``) against a local server
speaking the Gemini REST wire format: the stable prefix made a ``cachedContents`` resource once,
named by every request that follows, and its cached tokens priced at the cache-read rate."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest

from tests.models.billing import M, served_model
from tests.support.wire import WireServer, json_reply
from tooloop import Agent, tool
from tooloop.models import ModelSettings

MODEL = "gemini-2.5-flash"
SYSTEM = "You add numbers. " * 200
pytestmark = pytest.mark.usefixtures("served_models")


def _model(wire: WireServer, **options: Any) -> Any:
    return served_model(f"google:{MODEL}", wire.url, **options)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _cached(name: str = "cachedContents/c4ch3d01", tokens: int = 2_048) -> Any:
    return json_reply(
        {
            "name": name,
            "model": f"models/{MODEL}",
            "createTime": "2026-11-28T00:50:00.000000Z",
            "updateTime": "2026-11-28T00:50:00.000000Z",
            "expireTime": "2026-11-28T00:55:00.000000Z",
            "displayName": "",
            "usageMetadata": {"totalTokenCount": tokens},
        }
    )


def _answer(parts: list[dict[str, Any]], prompt: int, cached: int, out: int) -> Any:
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}
    if cached:
        meta["cachedContentTokenCount"] = cached
    candidate = {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
    return json_reply({"candidates": [candidate], "usageMetadata": meta, "modelVersion": MODEL})


CALL = [{"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}}]


@pytest.mark.parametrize("transport", ["lean", "sdk"])
async def test_the_prefix_is_cached_once_and_named_by_every_request(wire: WireServer, transport: str) -> None:
    wire.queue(_cached(), _answer(CALL, 2_100, 2_048, 12), _answer([{"text": "5."}], 2_160, 2_048, 3))
    settings = ModelSettings(cache="explicit", stream=False)
    agent = Agent(_model(wire, transport=transport), system=SYSTEM, tools=[add], settings=settings)
    result = await agent.run("What is 2 + 3?")

    assert result.text == "5."
    paths = [r.path for r in wire.requests]
    assert paths == ["/v1beta/cachedContents"] + [f"/v1beta/models/{MODEL}:generateContent"] * 2
    made, first, second = (r.json for r in wire.requests)
    assert made["model"] == f"models/{MODEL}" and made["ttl"] == "300s"
    assert made["systemInstruction"] == {"parts": [{"text": SYSTEM}]}
    assert [d["name"] for d in made["tools"][0]["functionDeclarations"]] == ["add"]
    for body in (first, second):
        assert body["cachedContent"] == "cachedContents/c4ch3d01"
        assert not {"systemInstruction", "tools", "toolConfig"} & set(body)
    assert second["contents"][: len(first["contents"])] == first["contents"]  # the conversation still grows
    # gemini-2.5-flash, published: input $0.30, cached input $0.03, output $2.50 per million tokens
    usage = result.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (4_260, 4_096, 15)
    by_hand = (Decimal(164) * Decimal("0.30") + Decimal(4_096) * Decimal("0.03") + Decimal(15) * Decimal("2.50")) / M
    assert usage.cost == by_hand


async def test_one_hour_lifetime_and_a_prefix_of_the_callers_own(wire: WireServer) -> None:
    wire.queue(_cached(), _answer([{"text": "Hi."}], 2_100, 2_048, 2))
    hour = ModelSettings(cache="explicit", cache_ttl="1h", stream=False)
    await Agent(_model(wire), system=SYSTEM, settings=hour).run("hello")
    assert wire.requests[0].json["ttl"] == "3600s" and "tools" not in wire.requests[0].json
    # a cachedContent of the caller's own: tooloop makes none
    wire.queue(_answer([{"text": "Hi."}], 2_100, 2_048, 2))
    own = ModelSettings(cache="explicit", stream=False, extra={"cachedContent": "cachedContents/mine"})
    await Agent(_model(wire), system=SYSTEM, settings=own).run("hello")
    assert wire.requests[-1].json["cachedContent"] == "cachedContents/mine"
    assert len(wire.requests) == 3
    # without explicit caching (the default) nothing is made and the prefix goes as it is
    wire.queue(_answer([{"text": "Hi."}], 2_100, 0, 2))
    await Agent(_model(wire), system=SYSTEM, settings=ModelSettings(stream=False)).run("hello")
    assert "cachedContent" not in wire.requests[-1].json and "systemInstruction" in wire.requests[-1].json


async def test_a_prefix_too_small_to_cache_goes_uncached_and_is_not_tried_again(
    wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    refusal = {
        "error": {
            "code": 400,
            "message": "Cached content is too small. total_token_count=31, min_total_token_count=1024",
            "status": "INVALID_ARGUMENT",
        }
    }
    wire.queue(json_reply(refusal, status=400), _answer(CALL, 40, 0, 12), _answer([{"text": "5."}], 60, 0, 3))
    settings = ModelSettings(cache="explicit", stream=False)
    with caplog.at_level(logging.WARNING, logger="tooloop.models"):
        result = await Agent(_model(wire), system="Add.", tools=[add], settings=settings).run("What is 2 + 3?")
    assert result.text == "5."
    assert [r.path.rsplit(":", 1)[-1] for r in wire.requests] == [
        "/v1beta/cachedContents",
        "generateContent",
        "generateContent",
    ]
    assert all("systemInstruction" in r.json and "cachedContent" not in r.json for r in wire.requests[1:])
    (line,) = [r.message for r in caplog.records if "cached content not made" in r.message]
    assert "too small" in line


async def test_a_new_resource_is_made_before_the_old_one_ends(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from tooloop.models.gemini import caching

    clock = [time.monotonic()]
    monkeypatch.setattr(caching.time, "monotonic", lambda: clock[0])
    model = _model(wire)
    settings = ModelSettings(cache="explicit", stream=False)
    wire.queue(_cached("cachedContents/first"), _answer([{"text": "Hi."}], 2_100, 2_048, 2))
    await Agent(model, system=SYSTEM, settings=settings).run("hello")
    clock[0] += 260  # 40 s left of the five minutes: still used
    wire.queue(_answer([{"text": "Hi."}], 2_100, 2_048, 2))
    await Agent(model, system=SYSTEM, settings=settings).run("hello")
    clock[0] += 20  # 280 s: 20 s left, a request in flight could outlive it
    wire.queue(_cached("cachedContents/second"), _answer([{"text": "Hi."}], 2_100, 2_048, 2))
    await Agent(model, system=SYSTEM, settings=settings).run("hello")
    named = [r.json.get("cachedContent") for r in wire.requests if r.path.endswith("generateContent")]
    assert named == ["cachedContents/first", "cachedContents/first", "cachedContents/second"]
    assert sum(r.path.endswith("/cachedContents") for r in wire.requests) == 2
