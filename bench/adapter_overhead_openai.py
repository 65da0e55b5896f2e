"""Per-turn CPU overhead of tooloop's Chat Completions adapter against the bare ``openai`` SDK.

A canned Chat Completions server runs in a child process (its CPU is not counted). Each turn
sends the same 24-message conversation with 6 tools and reads a tool-call answer, plain JSON or
streamed (text in many small chunks, then a call with fragmented arguments). We time the client
process's CPU (``time.process_time``) per turn and print medians.

    python bench/adapter_overhead_openai.py [--turns 400]

"bare SDK" is what a hand-written loop does: ``client.chat.completions.create(...)`` with message
dicts it keeps itself, reading ``choices[0].message`` (plain) or accumulating chunk deltas (stream).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from openai import AsyncOpenAI

from tooloop.messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, UserMessage
from tooloop.models import ModelRequest, ModelSettings, ToolDefinition
from tooloop.models.openai_chat import OpenAIChatModel

SERVER = r"""
import json, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def chunk(delta, finish=None, usage=None):
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "bench-model",
         "system_fingerprint": "fp_1", "choices": [choice]}
    if usage is not None:
        c["choices"] = []
        c["usage"] = usage
    return c

USAGE = {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876,
         "prompt_tokens_details": {"cached_tokens": 512, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
WORDS = ["I", " will", " look", " up", " the", " weather", " in", " both", " cities", " and", " compare",
         " them", " for", " you", " now", "."] * 2
ARGS = ['{"', 'city', '":"', 'Paris', '","', 'unit', '":"', 'celsius', '"}']
events = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": w}) for w in WORDS]
events.append(chunk({"tool_calls": [{"index": 0, "id": "call_abc123", "type": "function",
                                     "function": {"name": "get_weather", "arguments": ""}}]}))
events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in ARGS]
events.append(chunk({}, "tool_calls"))
events.append(chunk(None, usage=USAGE))
STREAM = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
PLAIN = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "bench-model",
    "choices": [{"index": 0, "logprobs": None, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "".join(WORDS), "refusal": None, "annotations": [],
        "tool_calls": [{"id": "call_abc123", "type": "function",
                        "function": {"name": "get_weather", "arguments": "".join(ARGS)}}]}}],
    "usage": USAGE, "service_tier": "default", "system_fingerprint": "fp_1"}).encode()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def setup(self):
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed-ACK stalls
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        streaming = b'"stream":true' in body
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if streaming else "application/json")
        data = STREAM if streaming else PLAIN
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

TOOLS = tuple(
    ToolDefinition(
        f"tool_{i}" if i else "get_weather",
        "Look something up. " * 4,
        {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    )
    for i in range(6)
)


def conversation() -> list[Message]:
    messages: list[Message] = [SystemMessage("You are a helpful assistant. " * 10)]
    for turn in range(5):
        messages.append(UserMessage(f"Question {turn}: what is the weather like? " * 3))
        for k in range(2):
            messages.append(
                ToolCallMessage(
                    tool_name="get_weather",
                    tool_call_id=f"call_{turn}_{k}",
                    arguments={"city": "Paris", "unit": "celsius"},
                    message="Let me check." if k == 0 else "",
                    content='{"temperature": 18, "sky": "cloudy", "wind": "12 km/h"}',
                    batch_id=f"b{turn}",
                )
            )
        messages.append(AssistantMessage("It is 18°C and cloudy in Paris. " * 3))
    messages.append(UserMessage("And now?"))
    return messages


def as_dicts(messages: list[Message]) -> list[dict[str, Any]]:
    """The message dicts a hand-written loop keeps (built once, outside the timing)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.text})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.text})
        elif isinstance(m, AssistantMessage):
            out.append({"role": "assistant", "content": m.text})
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": m.message or None,
                    "tool_calls": [
                        {
                            "id": m.tool_call_id,
                            "type": "function",
                            "function": {"name": m.tool_name, "arguments": '{"city": "Paris", "unit": "celsius"}'},
                        }
                    ],
                }
            )
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
    return out


async def measure(turn: Callable[[], Awaitable[Any]], turns: int) -> tuple[float, float]:
    for _ in range(20):  # warm up connections and caches
        await turn()
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(turns):
        c0, w0 = time.process_time(), time.perf_counter()
        await turn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu) * 1e6, statistics.median(wall) * 1e6


async def run(port: int, turns: int) -> None:
    base_url = f"http://127.0.0.1:{port}/v1"
    messages = conversation()
    dicts = as_dicts(messages)
    tool_dicts = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in TOOLS
    ]
    client = AsyncOpenAI(api_key="sk-bench", base_url=base_url)
    model = OpenAIChatModel("bench-model", client=AsyncOpenAI(api_key="sk-bench", base_url=base_url))
    plain_request = ModelRequest(messages, TOOLS, settings=ModelSettings(stream=False))
    stream_request = ModelRequest(messages, TOOLS, settings=ModelSettings(stream=True))

    async def sdk_plain() -> Any:
        completion = await client.chat.completions.create(model="bench-model", messages=dicts, tools=tool_dicts)  # type: ignore[arg-type]
        message = completion.choices[0].message
        return message.content, [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]  # type: ignore[union-attr]

    async def sdk_raw_json() -> Any:
        raw = await client.chat.completions.with_raw_response.create(
            model="bench-model",
            messages=dicts,  # type: ignore[arg-type]
            tools=tool_dicts,  # type: ignore[arg-type]
        )
        return json.loads(raw.content)["choices"][0]["message"]

    async def sdk_stream() -> Any:
        stream = await client.chat.completions.create(
            model="bench-model",
            messages=dicts,  # type: ignore[arg-type]
            tools=tool_dicts,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        text: list[str] = []
        calls: dict[int, list[str]] = {}
        async for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                text.append(delta.content)
            for tc in delta.tool_calls or ():
                calls.setdefault(tc.index, []).append(tc.function.arguments or "" if tc.function else "")
        return "".join(text), calls

    noop: Callable[[Any], None] = lambda event: None  # noqa: E731

    cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("bare SDK, plain", sdk_plain),
        ("SDK with_raw_response + json.loads", sdk_raw_json),
        ("tooloop adapter, plain", lambda: model.respond(plain_request)),
        ("bare SDK, stream", sdk_stream),
        ("tooloop adapter, stream (no listener)", lambda: model.respond(stream_request)),
        ("tooloop adapter, stream + events", lambda: model.respond(stream_request, noop)),
    ]
    print(f"{turns} turns each; 24 messages, 6 tools; answer: 32 text chunks + tool call in 10 fragments")
    print(f"{'case':40} {'CPU/turn (µs)':>14} {'wall/turn (µs)':>15}")
    for name, turn in cases:
        cpu, wall = await measure(turn, turns)
        print(f"{name:40} {cpu:14.0f} {wall:15.0f}")
    await client.close()
    await model.aclose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the bench server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        wait_for(port)
        asyncio.run(run(port, args.turns))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
