"""CPU per model turn: tooloop's Gemini adapter (lean and SDK transports), the bare google-genai call, the floor.

A scripted Gemini API server runs in a child process (so its CPU is not counted) and answers every
request with the same turn: a text answer plus a signed function call, as plain JSON or as an
``alt=sse`` stream of word-sized chunks. Every variant sends the same conversation (12 messages
with tool batches, 3 tools):

* ``floor``: the request body already in Gemini's wire format, POSTed on a raw kept-alive socket
  with orjson and the answer parsed with orjson (``bench/_floor_http.py``): what one Python
  process minimally spends on this exchange;
* ``bare SDK``: ``client.aio.models.generate_content(_stream)`` with contents and config already
  in the SDK's shape;
* ``adapter lean``: ``GeminiModel.respond`` on the default transport (converts the messages,
  reads the answer, emits events when streamed);
* ``adapter sdk``: the same with ``transport="sdk"``.

The figure is the median CPU time per turn over several rounds; the ratios are to the floor.

Run from the repository root::

    python bench/adapter_overhead_gemini.py [turns_per_round] [rounds]
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE.parent), str(_HERE.parent / "src"), str(_HERE)]

from tests.support.wire import Recorded, Reply, WireServer, json_reply  # noqa: E402

MODEL = "gemini-2.5-flash"
_PARTS = [
    {"text": "Let me check the weather in both cities for you."},
    {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "c"}},
        "thoughtSignature": "c2lnbmF0dXJl",
    },
]
_USAGE = {"promptTokenCount": 400, "candidatesTokenCount": 40, "totalTokenCount": 440}
_WORDS = "Let me check the weather in both cities for you , then compare them .".split()


def _event(parts: list[dict[str, Any]], final: bool = False) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if final:
        candidate["finishReason"] = "STOP"
        body["usageMetadata"] = _USAGE
    return f"data: {json.dumps(body)}\r\n\r\n".encode()


_STREAM = [_event([{"text": w + " "}]) for w in _WORDS] + [_event(_PARTS[1:], final=True)]
_PLAIN = {
    "candidates": [{"content": {"role": "model", "parts": _PARTS}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": _USAGE,
    "modelVersion": MODEL,
}


def _reply(request: Recorded) -> Reply:
    if "streamGenerateContent" in request.path:
        return Reply(200, {"content-type": "text/event-stream"}, chunks=_STREAM)
    return json_reply(_PLAIN)


def _serve(urls: Any, stop: Any) -> None:
    server = WireServer().start()
    server.queue(*([_reply] * 1_000_000))
    urls.put(server.url)
    stop.wait()
    server.stop()


def _request() -> Any:
    from tooloop.messages import SystemMessage, ToolCallMessage, UserMessage
    from tooloop.models import ModelRequest, ToolDefinition

    schema = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}
    names = [("tool_0", "A tool."), ("tool_1", "A tool."), ("get_weather", "Weather for a city.")]
    tools = tuple(ToolDefinition(name, description, schema) for name, description in names)
    messages: list[Any] = [SystemMessage("You are a weather assistant.")]
    for turn in range(5):
        messages.append(UserMessage(f"Question {turn}: what is the weather like?"))
        messages.append(
            ToolCallMessage(
                tool_name="get_weather",
                tool_call_id=f"c{turn}",
                arguments={"city": "Paris"},
                content="sunny, 21 degrees",
                message="Checking.",
            )
        )
    messages.append(UserMessage("And tomorrow?"))
    return ModelRequest(messages, tools)


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
    from _floor_http import FloorClient

    from tooloop.models.adapter import DEFAULT_TIMEOUT
    from tooloop.models.gemini import GeminiModel
    from tooloop.models.gemini.sdk import arguments, client_factory

    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_serve, args=(urls, stop), daemon=True)
    child.start()
    url = urls.get(timeout=30)
    try:
        request = _request()
        lean = GeminiModel(MODEL, api_key="bench", base_url=url)
        sdk = GeminiModel(MODEL, api_key="bench", base_url=url, transport="sdk")
        assert (lean.transport, sdk.transport) == ("lean", "sdk")
        body = lean._body(request, request.settings)  # the wire body both transports send
        client = client_factory("bench", url, DEFAULT_TIMEOUT, "600")()  # the bare SDK, configured the same way
        args = arguments(body, {})
        floor = FloorClient(url, {"x-goog-api-key": "bench", "content-type": "application/json"})
        path = f"/v1beta/models/{MODEL}"

        def listen(_: Any) -> None:
            pass

        async def floor_plain() -> None:
            await floor.post(f"{path}:generateContent", body)

        async def floor_stream() -> None:
            await floor.post(f"{path}:streamGenerateContent?alt=sse", body)

        async def bare_plain() -> None:
            await client.aio.models.generate_content(model=MODEL, **args)

        async def bare_stream() -> None:
            async for _ in await client.aio.models.generate_content_stream(model=MODEL, **args):
                pass

        async def lean_plain() -> None:
            await lean.respond(request)

        async def lean_stream() -> None:
            await lean.respond(request, listen)

        async def sdk_plain() -> None:
            await sdk.respond(request)

        async def sdk_stream() -> None:
            await sdk.respond(request, listen)

        cases = {
            "plain": (floor_plain, bare_plain, lean_plain, sdk_plain),
            "stream": (floor_stream, bare_stream, lean_stream, sdk_stream),
        }
        for label, (raw, bare, ours, via_sdk) in cases.items():
            figures = [await _measure(run, turns, rounds) for run in (raw, bare, ours, via_sdk)]
            floor_cpu = figures[0]
            row = "   ".join(
                f"{name} {cpu * 1e6:6.0f} us ({cpu / floor_cpu:4.1f}x)"
                for name, cpu in zip(("floor", "bare SDK", "adapter lean", "adapter sdk"), figures, strict=True)
            )
            print(f"{label:6}  {row}")
        await floor.close()
        await client.aio.aclose()
        await lean.aclose()
        await sdk.aclose()
    finally:
        stop.set()
        child.join(timeout=10)


if __name__ == "__main__":
    arguments_ = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(arguments_ + [200, 5][len(arguments_) :])))
