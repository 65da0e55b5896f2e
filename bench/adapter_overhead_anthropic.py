"""CPU per model turn: tooloop's Anthropic adapter against the floor for its wire format.

A scripted Messages API server runs in a child process (so its CPU is not counted) and answers
every request with the same turn: some text in many small deltas and one tool call whose JSON
arrives in fragments. Each variant runs the same number of turns per round, the variants taking
turns round by round; the figure is the median CPU time per turn, for streamed and for plain
requests, with its ratio to the floor:

* floor: the same body on a raw socket with orjson, no SDK (``bench/_floor_http.py``);
* adapter (lean): ``get_model("anthropic:...")`` as it comes, on the lean transport;
* adapter (sdk): the same with ``transport="sdk"`` (``AsyncAnthropic`` underneath);
* bare SDK: ``AsyncAnthropic.messages.create`` as a hand-written loop calls it.

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


async def _measure(variants: dict[str, Callable[[], Awaitable[Any]]], turns: int, rounds: int) -> dict[str, float]:
    """Median CPU per turn of each variant; the variants take turns round by round (interleaved)."""
    for turn in variants.values():
        for _ in range(20):  # warm up connections and caches
            await turn()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, turn in variants.items():
            start = time.process_time()
            for _ in range(turns):
                await turn()
            samples[name].append((time.process_time() - start) / turns)
    return {name: statistics.median(values) for name, values in samples.items()}


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
        request = ModelRequest([SystemMessage("Be brief."), UserMessage("Weather in Paris?")], (tool,))
        settings = ModelSettings(max_tokens=1024)
        wire_messages: Any = [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]
        wire_tools: Any = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": schema}]

        client = AsyncAnthropic(api_key="sk-bench", base_url=url, max_retries=0)
        lean = create(MODEL, provider="anthropic", base_url=url, api_key="sk-bench", settings=settings)
        sdk = create(MODEL, provider="anthropic", base_url=url, api_key="sk-bench", settings=settings, transport="sdk")

        from _floor_http import FloorClient

        floor = FloorClient(url, {"authorization": "Bearer sk-bench", "anthropic-version": "2026-10-21"})
        wire = {"model": MODEL, "max_tokens": 1024, "system": "Be brief.", "messages": wire_messages}
        wire["tools"] = wire_tools

        def listen(_: Any) -> None:
            pass

        async def bare_stream() -> None:
            stream = await client.messages.create(
                model=MODEL, max_tokens=1024, system="Be brief.", messages=wire_messages, tools=wire_tools, stream=True
            )
            async for _ in stream:
                pass

        async def bare_plain() -> None:
            await client.messages.create(
                model=MODEL, max_tokens=1024, system="Be brief.", messages=wire_messages, tools=wire_tools
            )

        cases: dict[str, dict[str, Callable[[], Awaitable[Any]]]] = {
            "stream": {
                "floor": lambda: floor.post("/v1/messages", {**wire, "stream": True}),
                "adapter (lean)": lambda: lean.respond(request, listen),
                "adapter (sdk)": lambda: sdk.respond(request, listen),
                "bare SDK": bare_stream,
            },
            "plain": {
                "floor": lambda: floor.post("/v1/messages", wire),
                "adapter (lean)": lambda: lean.respond(request),
                "adapter (sdk)": lambda: sdk.respond(request),
                "bare SDK": bare_plain,
            },
        }
        print(f"{turns} turns x {rounds} rounds, median CPU per turn (client process)")
        for label, variants in cases.items():
            cpu = await _measure(variants, turns, rounds)
            row = "   ".join(
                f"{name} {cpu[name] * 1e6:6.0f} us ({cpu[name] / cpu['floor']:4.2f}x)" for name in variants
            )
            print(f"{label:6}  {row}")
        await floor.close()
        await client.close()
        await lean.aclose()
        await sdk.aclose()
    finally:
        stop.set()
        child.join(timeout=10)


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(arguments + [200, 7][len(arguments) :])))
