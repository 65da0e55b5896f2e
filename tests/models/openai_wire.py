"""Chat Completions wire data for tests, written from the API reference (chunk and completion objects)."""

from __future__ import annotations

from typing import Any

from tests.support.wire import Reply, json_reply, sse_reply

MODEL = "gpt-4.1-mini-2025-04-14"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "system_fingerprint": "fp_06737a9306",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


def usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    """The last chunk of a stream with ``stream_options.include_usage``: no choices, only usage."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "system_fingerprint": "fp_06737a9306",
        "choices": [],
        "usage": usage,
    }


def usage(prompt: int = 20, completion: int = 5, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def call_start(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    """The first fragment of a streamed tool call (id, type and name)."""
    return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def call_args(index: int, arguments: str) -> dict[str, Any]:
    """A later fragment of a streamed tool call: only arguments text."""
    return {"index": index, "function": {"arguments": arguments}}


def completion(
    message: dict[str, Any], finish: str = "stop", usage_data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A plain ``chat.completion`` body."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "logprobs": None, "finish_reason": finish}
        ],
        "usage": usage_data if usage_data is not None else usage(),
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call in a plain completion's message."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def stream(*chunks: dict[str, Any] | str, done: bool = True, cut: bool = False) -> Reply:
    return sse_reply(list(chunks), done=done, cut=cut)


def plain(body: dict[str, Any]) -> Reply:
    return json_reply(body)
