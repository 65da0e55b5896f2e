"""Integers beyond 64 bits in a tool's arguments reach the tool exactly, on every path.

Anthropic's ``tool_use.input`` and Gemini's ``functionCall.args`` are JSON objects inside the body
(not text, as OpenAI's arguments are), so the body's parser decides their precision: orjson reads
integers beyond 64 bits as floats, and the transport's reader must not let it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.test_gemini import chunk, reply, sse
from tests.support.wire import Reply, WireServer
from tooloop import Agent
from tooloop.models import ModelSettings, get_model
from tooloop.models.anthropic import create
from tooloop.models.gemini import GeminiModel
from tooloop.transport.client import loads

BIG = 123456789012345678901234567890
BELOW = -(2**63) - 1  # one below the smallest integer orjson reads exactly
ARGS = {"n": BIG, "m": BELOW}


def keeper() -> tuple[list[tuple[int, int]], Callable[[int, int], str]]:
    kept: list[tuple[int, int]] = []

    def keep(n: int, m: int) -> str:
        """Keep two integers."""
        kept.append((n, m))
        return f"{n} {m}"

    return kept, keep


def test_the_reader_keeps_every_integer_exact_and_every_float_as_it_was() -> None:
    body = json.dumps(
        {"big": BIG, "below": BELOW, "edge": 2**64 - 1, "negative_edge": -(2**63), "list": [BIG, 7],
         "fraction": -0.00021336063934428483, "long_fraction": 1.0000000000000000000001, "exponent": 1e300,
         "text": "1234567890123456789012345", "at_the_start": 0}
    ).encode()  # fmt: skip
    read = loads(body)
    assert read == json.loads(body)
    assert [type(read[k]) for k in ("big", "below", "edge", "negative_edge")] == [int] * 4
    assert read["list"] == [BIG, 7] and type(read["list"][0]) is int
    assert loads(str(BIG).encode()) == BIG
    assert loads(b'{"small": 12, "f": 0.5}') == {"small": 12, "f": 0.5}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_anthropic_tool_use_input(wire: WireServer, stream: bool) -> None:
    call = {"type": "tool_use", "id": "toolu_big", "name": "keep", "input": ARGS}
    shape = aw.streamed if stream else aw.plain
    wire.queue(shape([call], "tool_use"), shape([{"type": "text", "text": "Kept."}]))
    kept, keep = keeper()
    model = create(aw.MODEL, base_url=wire.url, api_key="sk-test", settings=ModelSettings(stream=stream))
    try:
        result = await Agent(model, tools=[keep]).run("Keep these.")
    finally:
        await model.aclose()
    assert result.text == "Kept."
    assert kept == [(BIG, BELOW)]
    first, second = (aw.uncached(request.json) for request in wire.requests)
    assert first.get("stream", False) is stream
    assert second["messages"][1]["content"] == [call]  # sent back exactly too
    assert second["messages"][2]["content"][0]["content"] == f"{BIG} {BELOW}"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_gemini_function_call_args(wire: WireServer, stream: bool) -> None:
    call = {"functionCall": {"id": "g1", "name": "keep", "args": ARGS}}
    answers: list[Reply] = (
        [sse(chunk([call], "STOP", promptTokenCount=3)), sse(chunk([{"text": "Kept."}], "STOP"))]
        if stream
        else [reply([call]), reply([{"text": "Kept."}])]
    )
    wire.queue(*answers)
    kept, keep = keeper()
    model = get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="test-key")
    assert isinstance(model, GeminiModel)
    try:
        result = await Agent(model, tools=[keep], settings=ModelSettings(stream=stream)).run("Keep these.")
    finally:
        await model.aclose()
    assert result.text == "Kept."
    assert kept == [(BIG, BELOW)]
    first, second = wire.requests
    assert first.path.endswith(":streamGenerateContent?alt=sse" if stream else ":generateContent")
    sent_back: Any = second.json["contents"][1]["parts"][0]["functionCall"]
    assert sent_back["args"] == ARGS
