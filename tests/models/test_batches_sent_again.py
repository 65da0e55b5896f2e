"""A tool batch goes out the same on every later request, converted once per conversation, and the
adapter keeps nothing of a conversation once its messages are gone."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.support.wire import WireServer
from tooloop import Agent
from tooloop.messages import ToolCallMessage, UserMessage
from tooloop.models import ModelRequest, ModelSettings
from tooloop.models.anthropic import create
from tooloop.models.anthropic import request as anthropic_request
from tooloop.models.anthropic.request import build_body
from tooloop.models.gemini.request import GeminiRequest
from tooloop.models.openai_chat.request import ChatRequest
from tooloop.models.openai_responses.request import ResponsesRequest
from tooloop.models.portable import BatchMemo

Body = Callable[[list[Any]], Any]


def _calls(*names: str, batch: str = "b") -> list[ToolCallMessage]:
    return [
        ToolCallMessage(tool_name=name, tool_call_id=f"call_{name}", arguments={"n": i}, content=str(i), batch_id=batch)
        for i, name in enumerate(names)
    ]


def _anthropic() -> tuple[Body, BatchMemo[Any], Callable[[Any], list[Any]]]:
    def body(messages: list[Any]) -> Any:
        settings = ModelSettings(cache="off")
        return build_body(ModelRequest(messages), model="claude-x", settings=settings, max_tokens=9)[0]

    return body, anthropic_request._batches, lambda b: [block for m in b["messages"] for block in m["content"]]


def _responses() -> tuple[Body, BatchMemo[Any], Callable[[Any], list[Any]]]:
    builder = ResponsesRequest("gpt-x", include=None, reasoning=None)

    def body(messages: list[Any]) -> Any:
        return builder.params(ModelRequest(messages), ModelSettings())

    return body, builder._batches, lambda b: b["input"]


def _chat() -> tuple[Body, BatchMemo[Any], Callable[[Any], list[Any]]]:
    builder = ChatRequest("gpt-x", "openai")

    def body(messages: list[Any]) -> Any:
        return builder.body(ModelRequest(messages), ModelSettings())

    return body, builder._batches, lambda b: b["messages"]


def _gemini() -> tuple[Body, BatchMemo[Any], Callable[[Any], list[Any]]]:
    builder = GeminiRequest("gemini-3-flash")

    def body(messages: list[Any]) -> Any:
        return builder.body(ModelRequest(messages), ModelSettings())

    return body, builder._batches, lambda b: [part for content in b["contents"] for part in content["parts"]]


ADAPTERS = [_anthropic, _responses, _chat, _gemini]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_batch_sent_again_is_the_same_and_a_changed_one_is_read_anew(adapter: Any) -> None:
    body = adapter()[0]
    first, second = _calls("alpha", "beta")
    user = UserMessage("go")
    whole = body([user, first, second])
    assert body([user, first, second]) == whole
    alone = body([user, first])  # the same first call, the batch without its second
    fresh = body([user, _calls("alpha")[0]])  # equal messages, not the same objects
    assert alone == fresh
    assert "beta" not in str(alone) and "beta" in str(whole)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_each_batch_is_converted_once_per_conversation(adapter: Any) -> None:
    body, _, pieces = adapter()
    history: list[Any] = [UserMessage("go"), *_calls("alpha", "beta", batch="1")]
    earlier = pieces(body(history))
    history += [UserMessage("more"), *_calls("gamma", batch="2")]
    later = pieces(body(history))
    assert "gamma" in str(later)
    assert pieces(body(history)) == later  # merging turns changed nothing that was kept
    # the first batch's blocks/items are the very objects made for the first request
    made_once = [piece for piece in earlier if isinstance(piece, dict) and "alpha" in str(piece)]
    assert made_once and all(any(piece is seen for seen in later) for piece in made_once)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_nothing_of_a_finished_conversation_stays(adapter: Any) -> None:
    body, memo, _ = adapter()
    gc.collect()
    before = len(memo)
    history: list[Any] = [UserMessage("go"), *_calls("a", "b", batch="1"), *_calls("c", batch="2")]
    body(history)
    body(history)
    assert len(memo) == before + 2
    gone = [weakref.ref(message) for message in history if isinstance(message, ToolCallMessage)]
    del history
    gc.collect()
    assert [ref() for ref in gone] == [None] * len(gone)
    assert len(memo) == before


def test_an_entry_goes_when_any_of_its_messages_goes() -> None:
    memo: BatchMemo[str] = BatchMemo()
    first, second = _calls("a", "b")
    memo.put((first, second), "made")
    assert memo.get((first, second)) == "made"
    assert memo.get((first, second), "other variant") is None
    assert memo.get((first,)) is None
    del second
    assert len(memo) == 0
    memo.put((first,), "again", variant=True)
    assert memo.get((first,), True) == "again"


async def test_a_finished_run_leaves_nothing_with_a_model_that_lives_on(wire: WireServer) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "double", "input": {"n": 2}}
    wire.queue(
        aw.streamed([use], "tool_use"),
        aw.streamed([{**use, "id": "toolu_2", "input": {"n": 4}}], "tool_use"),
        aw.streamed([{"type": "text", "text": "8"}]),
    )

    def double(n: int) -> int:
        """Double a number."""
        return 2 * n

    gc.collect()
    before = len(anthropic_request._batches)
    model = create(aw.MODEL, base_url=wire.url, api_key="sk-test")
    try:
        result = await Agent(model, tools=[double]).run("Double 2 twice.")
        assert result.text == "8"
        calls = [m for m in result.transcript if isinstance(m, ToolCallMessage)]
        assert len(calls) == 2 and len(anthropic_request._batches) == before + 2  # the two batches
        third = wire.requests[2].json["messages"]
        assert [b["type"] for m in third for b in m["content"]] == [
            "text", "tool_use", "tool_result", "tool_use", "tool_result"]  # fmt: skip
        gone = [weakref.ref(call) for call in calls]
        del result, calls
        gc.collect()
        assert [ref() for ref in gone] == [None, None]
        assert len(anthropic_request._batches) == before
    finally:
        await model.aclose()
