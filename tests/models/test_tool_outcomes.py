"""Every provider tells the model the same thing about a tool outcome; only the wire field differs.

One transcript holds a result cut to the length limit, an error, a denial, a cancellation, an
interrupted call and a failure without text. It is sent through each adapter's official SDK to the
scripted server, and the texts read back from the four request bodies must be identical (and
exactly the expected sentences), with the error flag in each provider's own field.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.models.test_portability import PROVIDERS
from tests.support.wire import WireServer
from tooloop.errors import ToolDeniedError
from tooloop.loop.repair import interrupted
from tooloop.messages import Message, SystemMessage, ToolCallMessage, ToolCallStatus, UserMessage
from tooloop.models import ModelRequest
from tooloop.outcome import render_error, render_result

EXPECTED = [
    ("xxxxxxxxxx\n[... truncated 40 characters ...]", False),
    ("Error: ValueError: boom", True),
    ("Error: ToolDeniedError: tool 'rm' is not allowed", True),
    ("Error: CancelledError: the run was cancelled", True),
    ("Error: this tool call was interrupted before it produced a result; it was not run again.", True),
    ("Error: the tool call failed.", True),
]


def transcript() -> list[Message]:
    def call(index: int, status: ToolCallStatus, content: str) -> ToolCallMessage:
        return ToolCallMessage(
            tool_name="rm" if index == 2 else "work",
            tool_call_id=f"call_{index}",
            arguments={"n": index},
            status=status,
            content=content,
            batch_id="b1",
        )

    started = call(4, ToolCallStatus.STARTED, "")
    calls = [
        call(0, ToolCallStatus.OK, render_result("x" * 50, 10)),
        call(1, ToolCallStatus.ERROR, render_error(ValueError("boom"))),
        call(2, ToolCallStatus.DENIED, render_error(ToolDeniedError("tool 'rm' is not allowed"))),
        call(3, ToolCallStatus.CANCELLED, render_error(asyncio.CancelledError("the run was cancelled"))),
        interrupted(started),
        call(5, ToolCallStatus.ERROR, ""),
    ]
    return [SystemMessage("You report the weather."), UserMessage("go"), *calls]


def chat_outcomes(body: dict[str, Any]) -> list[tuple[str, bool | None]]:
    return [(m["content"], None) for m in body["messages"] if m["role"] == "tool"]


def responses_outcomes(body: dict[str, Any]) -> list[tuple[str, bool | None]]:
    return [(i["output"], None) for i in body["input"] if i["type"] == "function_call_output"]


def anthropic_outcomes(body: dict[str, Any]) -> list[tuple[str, bool | None]]:
    blocks = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    return [(b["content"], b["is_error"]) for b in blocks]


def gemini_outcomes(body: dict[str, Any]) -> list[tuple[str, bool | None]]:
    parts = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    return [(r["response"].get("error", r["response"].get("result")), "error" in r["response"]) for r in parts]


READERS: dict[str, Callable[[dict[str, Any]], list[tuple[str, bool | None]]]] = {
    "openai": chat_outcomes,
    "openai-responses": responses_outcomes,
    "anthropic": anthropic_outcomes,
    "google": gemini_outcomes,
}


@pytest.mark.parametrize("name", sorted(READERS))
async def test_every_outcome_reads_the_same_on_every_provider(wire: WireServer, name: str) -> None:
    provider = PROVIDERS[name]
    wire.queue(provider.final("done"))
    model = provider.make(wire)
    try:
        await model.respond(ModelRequest(transcript()))
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    seen = READERS[name](wire.requests[-1].json)
    assert [text for text, _ in seen] == [text for text, _ in EXPECTED]
    flags = [flag for _, flag in seen]
    if flags[0] is not None:  # the providers with an error field of their own set it
        assert flags == [is_error for _, is_error in EXPECTED]
