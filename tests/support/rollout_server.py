"""A fast OpenAI-compatible chat server on 127.0.0.1 for many concurrent scripted conversations.

Unlike ``wire.py`` (one queue of scripted replies), every conversation follows the same rule, so
thousands can run at once: a request whose last message is the user's asks for the ``lookup``
tool with the user's text as ``key``; a request whose last message is a tool result answers
``"answer: <result>"``. Plain JSON and SSE streaming are both spoken, with HTTP keep-alive.
``keys`` records which conversation (the user's text) each request belonged to, per server.

Run it alone with ``python -m tests.support.rollout_server [--port N] [--latency SECONDS]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tooloop.testing._http import Answer, Listener, running_in_thread


def reply_for(messages: list[dict[str, Any]], serial: int) -> dict[str, Any]:
    """The assistant message answering ``messages``."""
    last = messages[-1]
    if last["role"] == "tool":
        return {"role": "assistant", "content": f"answer: {last['content']}"}
    key = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    call = {
        "id": f"call_{serial}",
        "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps({"key": key})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _completion(message: dict[str, Any], serial: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": "rollout",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _stream(message: dict[str, Any], serial: int) -> bytes:
    base = {"id": f"chatcmpl-{serial}", "object": "chat.completion.chunk", "created": 0, "model": "rollout"}
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
        finish = "tool_calls"
    else:
        delta["content"] = message["content"]
        finish = "stop"
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


class RolloutServer:
    """The server; ``url`` is its ``/v1`` base URL once started."""

    def __init__(self, latency: float = 0.0):
        self.latency = latency
        self.keys: Counter[str] = Counter()
        self.requests = 0
        self.port = 0
        self._listener = Listener(self._respond)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self, port: int = 0) -> None:
        self.port = await self._listener.start(port)

    async def close(self) -> None:
        await self._listener.close()

    async def _respond(self, path: str, body: dict[str, Any]) -> Answer:
        self.requests += 1
        serial = self.requests
        messages = body["messages"]
        first_user = next(m for m in messages if m["role"] == "user")
        self.keys[first_user["content"] if isinstance(first_user["content"], str) else str(first_user["content"])] += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        message = reply_for(messages, serial)
        if body.get("stream"):
            return "200 OK", b"text/event-stream", _stream(message, serial)
        return "200 OK", b"application/json", json.dumps(_completion(message, serial)).encode()


@contextmanager
def serve_in_thread(latency: float = 0.0) -> Iterator[RolloutServer]:
    """Run a :class:`RolloutServer` on its own event loop in a thread for the duration."""
    server = RolloutServer(latency)
    with running_in_thread(server.start, server.close, "rollout server"):
        yield server


async def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    options = parser.parse_args()
    server = RolloutServer(options.latency)
    await server.start(options.port)
    print(server.url, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_main())
