"""Anthropic Messages API wire data for tests: plain ``Message`` bodies and SSE event streams.

Both are built from the same content blocks, so a test can check that streaming and plain requests
give the same response.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.wire import Reply, json_reply, sse_reply

MODEL = "claude-haiku-4-5"


def usage(input_tokens: int = 12, output_tokens: int = 7, **extra: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, **extra}


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn", use: dict[str, Any] | None = None) -> Any:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": use or usage(),
    }


def plain(content: list[dict[str, Any]], stop_reason: str = "end_turn", use: dict[str, Any] | None = None) -> Reply:
    return json_reply(message(content, stop_reason, use))


def start(use: dict[str, Any]) -> tuple[str, Any]:
    first = {**use, "output_tokens": 1}
    body = message([], "end_turn", first)
    body["stop_reason"] = None
    return ("message_start", {"type": "message_start", "message": body})


def block_start(index: int, block: dict[str, Any]) -> tuple[str, Any]:
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, payload: dict[str, Any]) -> tuple[str, Any]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": payload})


def block_stop(index: int) -> tuple[str, Any]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str | None, output_tokens: int) -> tuple[str, Any]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )


STOP = ("message_stop", {"type": "message_stop"})
PING = ("ping", {"type": "ping"})


def pieces(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def block_events(index: int, block: dict[str, Any]) -> list[tuple[str, Any]]:
    """The events that stream one content block (its text or JSON cut into small pieces)."""
    kind = block["type"]
    if kind == "text":
        events = [block_start(index, {"type": "text", "text": ""})]
        events += [delta(index, {"type": "text_delta", "text": p}) for p in pieces(block["text"])]
    elif kind in ("tool_use", "server_tool_use"):  # a server tool's call streams its input the same way
        events = [block_start(index, {"type": kind, "id": block["id"], "name": block["name"], "input": {}})]
        if block["input"]:
            raw = json.dumps(block["input"])
            events += [delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces(raw, 5)]
    elif kind == "thinking":
        events = [block_start(index, {"type": "thinking", "thinking": "", "signature": ""})]
        events += [delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces(block["thinking"])]
        events.append(delta(index, {"type": "signature_delta", "signature": block["signature"]}))
    else:
        events = [block_start(index, block)]
    return [*events, block_stop(index)]


def stream_events(
    content: list[dict[str, Any]], stop_reason: str = "end_turn", use: dict[str, Any] | None = None
) -> list[Any]:
    use = use or usage()
    events: list[Any] = [start(use), PING]
    for index, block in enumerate(content):
        events += block_events(index, block)
    events += [message_delta(stop_reason, use["output_tokens"]), STOP]
    return events


def streamed(content: list[dict[str, Any]], stop_reason: str = "end_turn", use: dict[str, Any] | None = None) -> Reply:
    return sse_reply(stream_events(content, stop_reason, use), named=True)


def error_reply(status: int, error_type: str, text: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": error_type, "message": text}, "request_id": "req_01"}
    return json_reply(body, status=status, headers=headers)


def uncached(body: Any) -> Any:
    """``body`` without its prompt-cache breakpoints (``cache_control`` markers, and the system
    prompt as plain text again), for tests of the mapping itself; tests/models/test_prompt_cache.py
    tests the breakpoints."""
    if isinstance(body, list):
        return [uncached(item) for item in body]
    if not isinstance(body, dict):
        return body
    out = {key: uncached(value) for key, value in body.items() if key != "cache_control"}
    system = out.get("system")
    if isinstance(system, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in system):
        out["system"] = "".join(b["text"] for b in system)
    return out
