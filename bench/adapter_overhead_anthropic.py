"""CPU per model turn: tooloop's Anthropic adapter versus the bare ``anthropic`` SDK call.

A scripted Messages API server runs in a child process (so its CPU is not counted) and answers
every request with the same turn: some text in many small deltas and one tool call whose JSON
arrives in fragments. Each variant runs the same number of turns; the figure is the median CPU
time per turn over several rounds, for streamed and for plain requests.

A third figure is the floor for this wire format (``bench/_floor_http.py``: the same body on a raw
socket with orjson, no SDK).

Run from the repository root::

    python bench/adapter_overhead_anthropic.py [turns_per_round] [rounds]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE.parent), str(_HERE.parent / "src"), str(_HERE)]

from tests.models import anthropic_wire as aw  # noqa: E402
from tests.support.wire import Recorded, Reply, WireServer  # noqa: E402

MODEL = aw.MODEL
TEXT = "The weather service says it will be mostly sunny with a light breeze from the west. " * 3
CONTENT = [
    {"type": "text", "text": TEXT},
    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris", "units": "metric"}},
]


def _reply(request: Recorded) -> Reply:
    if request.json.get("stream"):
        return aw.streamed(CONTENT, "tool_use")
    return aw.plain(CONTENT, "tool_use")


def _serve(port_out: Any, stop: Any) -> None:
    server = WireServer().start()
    server.queue(*([_reply] * 1_000_000))
    port_out.put(server.url)
    stop.wait()
    server.stop()


async def _measure(turn: Callable[[], Awaitable[Any]], turns: int, rounds: int) -> float:
    for _ in range(20):  # warm up connections and caches
        await turn()
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(turns):
            await turn()
        samples.append((time.process_time() - start) / turns)
    return statistics.median(samples)


async def main(turns: int, rounds: int) -> None:
    from anthropic import AsyncAnthropic

    from tooloop.messages import SystemMessage, UserMessage
    from tooloop.models import ModelRequest, ModelSettings, ToolDefinition
    from tooloop.models.anthropic import create

    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_serve, args=(urls, stop), daemon=True)
    child.start()
    url = urls.get(timeout=30)
    try:
        schema = {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}}
        tool = ToolDefinition("get_weather", "Weather for a city.", schema)
        messages = [SystemMessage("Be brief."), UserMessage("Weather in Paris?")]
        settings = ModelSettings(max_tokens=1024)
        wire_messages: Any = [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]
        wire_tools: Any = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": schema}]

        client = AsyncAnthropic(api_key="sk-bench", base_url=url, max_retries=0)
        model = create(MODEL, provider="anthropic", base_url=url, api_key="sk-bench", settings=settings)

        async def sdk_stream() -> None:
            stream = await client.messages.create(
                model=MODEL, max_tokens=1024, system="Be brief.", messages=wire_messages, tools=wire_tools, stream=True
            )
            async for _ in stream:
                pass

        async def sdk_plain() -> None:
            await client.messages.create(
                model=MODEL, max_tokens=1024, system="Be brief.", messages=wire_messages, tools=wire_tools
            )

        def listen(_: Any) -> None:
            pass

        async def adapter_stream() -> None:
            await model.respond(ModelRequest(messages, (tool,)), listen)

        async def adapter_plain() -> None:
            await model.respond(ModelRequest(messages, (tool,)))

        from _floor_http import FloorClient

        floor = FloorClient(url, {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"})
        wire = {"model": MODEL, "max_tokens": 1024, "system": "Be brief.", "messages": wire_messages}
        wire["tools"] = wire_tools

        async def floor_stream() -> None:
            await floor.post("/v1/messages", {**wire, "stream": True})

        async def floor_plain() -> None:
            await floor.post("/v1/messages", wire)

        cases = (("stream", sdk_stream, adapter_stream, floor_stream), ("plain", sdk_plain, adapter_plain, floor_plain))
        for label, bare, ours, raw in cases:
            bare_cpu = await _measure(bare, turns, rounds)
            ours_cpu = await _measure(ours, turns, rounds)
            raw_cpu = await _measure(raw, turns, rounds)
            print(
                f"{label:6}  bare SDK {bare_cpu * 1e6:8.0f} us/turn   adapter {ours_cpu * 1e6:8.0f} us/turn   "
                f"ratio {ours_cpu / bare_cpu:5.2f}   floor {raw_cpu * 1e6:6.0f} us/turn   "
                f"adapter / floor {ours_cpu / raw_cpu:5.2f}"
            )
        await floor.close()
        await client.close()
        await model.aclose()
    finally:
        stop.set()
        child.join(timeout=10)


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(arguments + [200, 7][len(arguments) :])))
