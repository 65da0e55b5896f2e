"""Per-turn CPU cost of the Gemini adapter against the bare google-genai call it wraps.

A local server (in a child process, so its CPU is not counted) answers every request with the same
Gemini response: a text answer plus a function call, as plain JSON or as an ``alt=sse`` stream.
Both sides send the same conversation (12 messages with a tool batch, 3 tools); the bare call gets
contents and config already in Gemini's shape, so the difference is what the adapter adds:
converting the request, reading the response, emitting events.

Run from the repository root: ``python bench/adapter_overhead_gemini.py [turns]``.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gemini-2.5-flash"
_PARTS = [
    {"text": "Let me check the weather in both cities for you."},
    {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "c"}},
        "thoughtSignature": "c2lnbmF0dXJl",
    },
]
_USAGE = {"promptTokenCount": 400, "candidatesTokenCount": 40, "totalTokenCount": 440}
_PLAIN = json.dumps(
    {
        "candidates": [{"content": {"role": "model", "parts": _PARTS}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _USAGE,
        "modelVersion": MODEL,
    }
).encode()
_WORDS = "Let me check the weather in both cities for you , then compare them .".split()


def _event(parts: list[dict[str, Any]], final: bool = False) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if final:
        candidate["finishReason"] = "STOP"
        body["usageMetadata"] = _USAGE
    return f"data: {json.dumps(body)}\r\n\r\n".encode()


_STREAM = b"".join([_event([{"text": w + " "}]) for w in _WORDS]) + _event(_PARTS[1:], final=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        stream = "streamGenerateContent" in self.path
        body = _STREAM if stream else _PLAIN
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(port: Any) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port.value = server.server_address[1]
    server.serve_forever()


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


async def _measure(port: int, turns: int) -> dict[str, float]:
    from tooloop.models._adapter import DEFAULT_TIMEOUT
    from tooloop.models.gemini import GeminiModel, _client, _config, _contents

    model = GeminiModel(MODEL, api_key="bench", base_url=f"http://127.0.0.1:{port}")
    client = _client("bench", f"http://127.0.0.1:{port}", DEFAULT_TIMEOUT)  # the bare SDK, configured the same way
    request = _request()
    contents, system = _contents(request.messages, sign_foreign=False)
    config = _config(request, request.settings, system, 2)

    async def bare_plain() -> None:
        await client.aio.models.generate_content(model=MODEL, contents=contents, config=config)  # type: ignore[arg-type]

    async def bare_stream() -> None:
        async for _ in await client.aio.models.generate_content_stream(model=MODEL, contents=contents, config=config):  # type: ignore[arg-type]
            pass

    async def adapter_plain() -> None:
        await model.respond(request)

    async def adapter_stream() -> None:
        await model.respond(request, lambda event: None)

    results = {}
    for name, run in [
        ("bare plain", bare_plain),
        ("adapter plain", adapter_plain),
        ("bare stream", bare_stream),
        ("adapter stream", adapter_stream),
    ]:
        for _ in range(20):
            await run()
        samples = []
        for _ in range(turns):
            start = time.process_time()
            await run()
            samples.append(time.process_time() - start)
        results[name] = statistics.median(samples) * 1000
    await model.aclose()
    return results


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    port = multiprocessing.Value("i", 0)
    server = multiprocessing.Process(target=_serve, args=(port,), daemon=True)
    server.start()
    while port.value == 0:
        time.sleep(0.01)
    try:
        results = asyncio.run(_measure(port.value, turns))
    finally:
        server.terminate()
    for mode in ("plain", "stream"):
        bare, ours = results[f"bare {mode}"], results[f"adapter {mode}"]
        print(f"{mode:6}  bare SDK {bare:.3f} ms  adapter {ours:.3f} ms  overhead {100 * (ours - bare) / bare:+.1f}%")


if __name__ == "__main__":
    sys.path[:0] = ["src"]
    main()
