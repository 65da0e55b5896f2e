"""LM Studio's Responses API (``/v1/responses``), as it streams.

LM Studio sends a function call's arguments only in ``response.function_call_arguments.done``
and the finished ``output_item.done`` item (no ``.delta`` events), and a reasoning model's
thinking as ``reasoning_text`` content of its reasoning item (``response.reasoning_text.delta``
events, an empty ``summary``, no ``encrypted_content``). The documented contract still holds:
the ``ToolCallDelta`` events of a call, joined, are its arguments; the reasoning text is the
response's thinking, and the reasoning item goes back with the call it led to.

Served from 127.0.0.1 through both ``Agent.run`` and ``Agent.stream``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.doors import DOORS, call_arguments, drive, joined
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, StopReason
from tooloop.events import ModelEvent, ThinkingDelta, ToolCallDelta
from tooloop.messages import ThinkingPart, UserMessage
from tooloop.models import Model, ModelRequest, ToolDefinition, get_model

MODEL = "openai/gpt-oss-20b"
THOUGHT = "User wants to read the file. Call read with the path."
ARGUMENTS = '{"path":"/tmp/notes.txt"}'
CALL_ID = "call_1339242629660212"
READ = ToolDefinition("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def read(path: str) -> str:
    """Read a file."""
    return "remember the milk"


def reasoning_item(content: bool = True, status: str = "completed") -> dict[str, Any]:
    item: dict[str, Any] = {"id": "rs_q0j4gv6wkt8r9od0w681a", "type": "reasoning", "summary": [], "status": status}
    item["content"] = [{"type": "reasoning_text", "text": THOUGHT}] if content else []
    return item


def call_item(arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": "fc_pk26hpdbeu73i93ya5pmg",
        "type": "function_call",
        "call_id": CALL_ID,
        "name": "read",
        "arguments": arguments,
        "status": status,
    }


def message_item(text: str) -> dict[str, Any]:
    return {
        "id": "msg_7c2e",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def response(output: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_9b1f0c6e2d",
        "object": "response",
        "created_at": 1780000000,
        "status": status,
        "model": MODEL,
        "output": output,
        "previous_response_id": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 120,
            "output_tokens": 40,
            "total_tokens": 160,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 25},
        }
        if status == "completed"
        else None,
    }


def events(*items: tuple[str, dict[str, Any]]) -> Reply:
    numbered = [(name, {"type": name, "sequence_number": n, **payload}) for n, (name, payload) in enumerate(items)]
    return sse_reply(numbered, named=True)


def call_stream(where: str) -> Reply:
    """Reasoning as ``reasoning_text`` deltas, then a call whose arguments come only at the end.

    ``where`` says which events carry them: ``"done"`` (``function_call_arguments.done`` and the
    finished item) or ``"item"`` (only the finished item).
    """
    pieces = [THOUGHT[:17], THOUGHT[17:33], THOUGHT[33:]]
    sequence: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response([], "in_progress")}),
        ("response.in_progress", {"response": response([], "in_progress")}),
        ("response.output_item.added", {"output_index": 0, "item": reasoning_item(False, "in_progress")}),
        (
            "response.content_part.added",
            {
                "item_id": "rs_q0j4gv6wkt8r9od0w681a",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "reasoning_text", "text": ""},
            },
        ),
    ]
    sequence += [
        (
            "response.reasoning_text.delta",
            {"item_id": "rs_q0j4gv6wkt8r9od0w681a", "output_index": 0, "content_index": 0, "delta": piece},
        )
        for piece in pieces
    ]
    sequence += [
        (
            "response.reasoning_text.done",
            {"item_id": "rs_q0j4gv6wkt8r9od0w681a", "output_index": 0, "content_index": 0, "text": THOUGHT},
        ),
        (
            "response.content_part.done",
            {
                "item_id": "rs_q0j4gv6wkt8r9od0w681a",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "reasoning_text", "text": THOUGHT},
            },
        ),
        ("response.output_item.done", {"output_index": 0, "item": reasoning_item()}),
        ("response.output_item.added", {"output_index": 1, "item": call_item("", "in_progress")}),
    ]
    if where == "done":
        sequence.append(
            (
                "response.function_call_arguments.done",
                {"item_id": "fc_pk26hpdbeu73i93ya5pmg", "output_index": 1, "arguments": ARGUMENTS},
            )
        )
    sequence += [
        ("response.output_item.done", {"output_index": 1, "item": call_item(ARGUMENTS)}),
        ("response.completed", {"response": response([reasoning_item(), call_item(ARGUMENTS)])}),
    ]
    return events(*sequence)


def answer_stream(text: str = "The file says: remember the milk.") -> Reply:
    return events(
        ("response.created", {"response": response([], "in_progress")}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**message_item(""), "content": [], "status": "in_progress"}},
        ),
        ("response.output_text.delta", {"item_id": "msg_7c2e", "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"output_index": 0, "item": message_item(text)}),
        ("response.completed", {"response": response([message_item(text)])}),
    )


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.fixture
def lmstudio(wire: WireServer, made: list[Model]) -> Callable[..., Model]:
    def make(**options: Any) -> Model:
        model = get_model(
            f"openai-responses:{MODEL}", base_url=wire.url + "/v1", api_key="lm-studio", max_retries=0, **options
        )
        made.append(model)
        return model

    return make


@pytest.mark.parametrize("where", ["done", "item"])
async def test_arguments_sent_only_at_the_end_still_stream_as_a_delta(
    wire: WireServer, lmstudio: Callable[..., Model], where: str
) -> None:
    wire.queue(call_stream(where))
    seen: list[ModelEvent] = []
    response = await lmstudio().respond(ModelRequest([UserMessage("Read my notes")], (READ,)), seen.append)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [(CALL_ID, "read", ARGUMENTS)]
    deltas = [e for e in seen if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(0, CALL_ID, "read")
    assert call_arguments(seen) == ARGUMENTS
    assert response.thinking == (ThinkingPart(THOUGHT, provider="openai-responses"),)
    assert joined(seen, ThinkingDelta) == THOUGHT


async def test_streamed_argument_deltas_are_not_repeated_by_the_done_events(
    wire: WireServer, lmstudio: Callable[..., Model]
) -> None:
    wire.queue(
        events(
            ("response.output_item.added", {"output_index": 0, "item": call_item("", "in_progress")}),
            (
                "response.function_call_arguments.delta",
                {"item_id": "fc_pk26hpdbeu73i93ya5pmg", "output_index": 0, "delta": ARGUMENTS[:9]},
            ),
            (
                "response.function_call_arguments.delta",
                {"item_id": "fc_pk26hpdbeu73i93ya5pmg", "output_index": 0, "delta": ARGUMENTS[9:]},
            ),
            (
                "response.function_call_arguments.done",
                {"item_id": "fc_pk26hpdbeu73i93ya5pmg", "output_index": 0, "arguments": ARGUMENTS},
            ),
            ("response.output_item.done", {"output_index": 0, "item": call_item(ARGUMENTS)}),
            ("response.completed", {"response": response([call_item(ARGUMENTS)])}),
        )
    )
    seen: list[ModelEvent] = []
    await lmstudio().respond(ModelRequest([UserMessage("Read my notes")], (READ,)), seen.append)
    assert "".join(e.arguments_delta for e in seen if isinstance(e, ToolCallDelta)) == ARGUMENTS  # said once


async def test_a_call_announced_only_when_done_opens_and_fills_its_delta(
    wire: WireServer, lmstudio: Callable[..., Model]
) -> None:
    wire.queue(
        events(
            ("response.output_item.done", {"output_index": 0, "item": call_item(ARGUMENTS)}),
            ("response.completed", {"response": response([call_item(ARGUMENTS)])}),
        )
    )
    seen: list[ModelEvent] = []
    await lmstudio().respond(ModelRequest([UserMessage("Read my notes")], (READ,)), seen.append)
    assert [e for e in seen if isinstance(e, ToolCallDelta)] == [ToolCallDelta(0, CALL_ID, "read", ARGUMENTS)]


@pytest.mark.parametrize("door", DOORS)
async def test_reasoning_text_is_thinking_and_goes_back_before_the_call(
    wire: WireServer, lmstudio: Callable[..., Model], door: str
) -> None:
    if door == "stream":
        wire.queue(call_stream("done"), answer_stream())
    else:
        wire.queue(
            json_reply(response([reasoning_item(), call_item(ARGUMENTS)])),
            json_reply(response([message_item("The file says: remember the milk.")])),
        )
    result, seen = await drive(Agent(lmstudio(), tools=[read]), door, "Read my notes")
    assert result.text == "The file says: remember the milk." and result.stop_reason is StopReason.END_TURN
    assert result.tool_calls[0].thinking == (ThinkingPart(THOUGHT, provider="openai-responses"),)
    sent = wire.requests[1].json["input"]
    assert sent[1:] == [
        {
            "id": "rs_q0j4gv6wkt8r9od0w681a",
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": THOUGHT}],
        },
        {"type": "function_call", "call_id": CALL_ID, "name": "read", "arguments": '{"path": "/tmp/notes.txt"}'},
        {"type": "function_call_output", "call_id": CALL_ID, "output": "remember the milk"},
    ]
    if door == "stream":
        assert call_arguments(seen) == ARGUMENTS
        assert joined(seen, ThinkingDelta) == THOUGHT


async def test_lmstudio_chat_models_need_no_key_and_default_to_its_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LMSTUDIO_API_KEY", raising=False)
    model = get_model("lmstudio:qwen/qwen3-8b")
    try:
        assert model.base_url.rstrip("/") == "http://localhost:1234/v1"  # type: ignore[attr-defined]
    finally:
        await model.aclose()  # type: ignore[attr-defined]
