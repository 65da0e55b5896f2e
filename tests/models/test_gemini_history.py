"""What the Gemini adapter keeps within a run, and what its reader makes.

Every request of a run sends the whole history again; the adapter converts only the messages after
those its last request sent, and takes the ``contents`` it made for them as they were. Whatever the
history does between requests (grows, merges turns, splits a tool batch, is rewritten), each body
is the one a fresh conversion makes, and no body sent earlier changes. The reader fills responses
through drafts and names Gemini's id-less function calls itself: what it makes is what the
constructors make, and the ids stay unique across processes, forked ones included.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
from dataclasses import fields, replace
from typing import Any

import pytest

from tooloop.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolCallMessage,
    Usage,
    UserMessage,
)
from tooloop.models import ModelRequest, ModelSettings
from tooloop.models.base import RunMemo
from tooloop.models.gemini.chunks import chunk_from
from tooloop.models.gemini.request import GeminiRequest
from tooloop.models.gemini.response import Reader

SIGNATURE = "CiQB0e2K+/signature+with/slashes"


def _call(name: str, batch: str, n: int, data: dict[str, Any] | None = None) -> ToolCallMessage:
    return ToolCallMessage(
        tool_name=name,
        tool_call_id=f"id_{name}",
        arguments={"n": n},
        content=f"result {n}",
        batch_id=batch,
        message="about to call" if n == 0 else "",
        provider_data=data or {},
    )


def _history() -> list[Message]:
    """A history that exercises every merge: system texts anywhere, user text after unanswered
    results, model text before calls, two user turns in a row, a batch recorded in two steps."""
    signed = {"google": {"signatures": {"id_a": SIGNATURE}, "ids": ["id_a"]}}
    return [
        SystemMessage("Be brief."),
        UserMessage("first"),
        AssistantMessage("thinking it over"),
        _call("a", "1", 0, signed),
        _call("b", "1", 1),
        UserMessage("never mind the results"),
        AssistantMessage("then"),
        _call("c", "2", 2),
        SystemMessage("Still brief."),
        UserMessage("again"),
        UserMessage("and again"),
        _call("d", "3", 3),
        _call("e", "3", 4),  # the same batch as d: one request may see d alone
        AssistantMessage("done"),
    ]


def _body(builder: GeminiRequest, messages: list[Message], memo: RunMemo | None) -> dict[str, Any]:
    return builder.body(ModelRequest(messages, memo=memo), ModelSettings())


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro"])
def test_each_request_of_a_run_sends_what_a_fresh_conversion_sends(model: str) -> None:
    builder = GeminiRequest(model)
    history = _history()
    memo = RunMemo()
    sent: list[tuple[dict[str, Any], str]] = []
    for end in range(1, len(history) + 1):
        body = _body(builder, history[:end], memo)
        assert body == _body(GeminiRequest(model), history[:end], None), f"after {end} messages"
        sent.append((body, json.dumps(body)))
    # nothing sent earlier was changed by a later request's merges
    assert all(json.dumps(body) == text for body, text in sent)
    last = sent[-1][0]
    roles = [content["role"] for content in last["contents"]]
    assert all(one != two for one, two in itertools.pairwise(roles))  # they alternate
    assert last["systemInstruction"] == {"parts": [{"text": "Be brief."}, {"text": "Still brief."}]}


def test_a_history_that_is_not_the_last_one_continued_is_converted_anew() -> None:
    builder = GeminiRequest("gemini-2.5-flash")
    history = _history()
    memo = RunMemo()
    _body(builder, history, memo)
    rewritten = [*history[:5], UserMessage("a summary of what came before"), *history[9:]]
    assert _body(builder, rewritten, memo) == _body(GeminiRequest("gemini-2.5-flash"), rewritten, None)
    shorter = history[:4]
    assert _body(builder, shorter, memo) == _body(GeminiRequest("gemini-2.5-flash"), shorter, None)
    equal = [UserMessage("first"), *history[2:]]  # equal to the kept messages, not the same objects
    assert _body(builder, equal, memo) == _body(GeminiRequest("gemini-2.5-flash"), equal, None)


def _answer(*parts: dict[str, Any], finish: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": finish}],
        "usageMetadata": {
            "promptTokenCount": 120,
            "candidatesTokenCount": 30,
            "thoughtsTokenCount": 7,
            "cachedContentTokenCount": 100,
            "toolUsePromptTokenCount": 5,
        },
        "modelVersion": "gemini-3-pro-001",
        "responseId": "resp-1",
    }


def _read(answer: dict[str, Any]) -> ModelResponse:
    reader = Reader("gemini-3-pro", None)
    reader.add(chunk_from(answer))
    return reader.finish(streamed=False)


def test_a_response_read_is_what_the_constructors_make() -> None:
    call = {"functionCall": {"id": "g1", "name": "add", "args": {"a": 1}}, "thoughtSignature": SIGNATURE}
    made = _read(_answer({"text": "Adding."}, call))
    expected = ModelResponse(
        "Adding.",
        (ToolCall("g1", "add", {"a": 1}),),
        StopReason.TOOL_USE,
        Usage(input_tokens=125, output_tokens=37, tool_calls=1, cache_read_tokens=100, reasoning_tokens=7),
        model="gemini-3-pro-001",
        provider_data={"google": {"signatures": {"g1": SIGNATURE.replace("+", "-").replace("/", "_")}, "ids": ["g1"]}},
        response_id="resp-1",
    )
    assert made == expected and repr(made) == repr(expected) and hash(made.usage) == hash(expected.usage)
    for value in (made, made.usage, made.tool_calls[0]):
        assert type(value) in (ModelResponse, Usage, ToolCall)
        assert all(getattr(value, f.name) == getattr(expected_of(value, expected), f.name) for f in fields(value))
    assert pickle.loads(pickle.dumps(made)) == made
    assert replace(made, text="changed").tool_calls == made.tool_calls
    with pytest.raises(AttributeError):
        made.text = "no"  # type: ignore[misc]
    text_only = _read(_answer({"text": "The total is 3."}))
    assert text_only == ModelResponse(
        "The total is 3.",
        usage=Usage(input_tokens=125, output_tokens=37, cache_read_tokens=100, reasoning_tokens=7),
        model="gemini-3-pro-001",
        response_id="resp-1",
    )


def expected_of(value: Any, response: ModelResponse) -> Any:
    if isinstance(value, Usage):
        return response.usage
    if isinstance(value, ToolCall):
        return response.tool_calls[0]
    return response


def _unnamed_call_ids(count: int) -> list[str]:
    answer = _answer(*({"functionCall": {"name": "add", "args": {"a": n}}} for n in range(count)))
    return [call.id for call in _read(answer).tool_calls]


def test_calls_without_an_id_get_one_unique_in_the_process() -> None:
    ids = _unnamed_call_ids(3) + _unnamed_call_ids(3)
    assert len(set(ids)) == 6
    assert all(call_id.startswith("call_") and call_id[5:].isalnum() for call_id in ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_names_calls_apart_from_its_parent() -> None:
    _unnamed_call_ids(1)  # the parent has named calls before the fork
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.write(write_end, json.dumps(_unnamed_call_ids(2)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        from_child = json.loads(pipe.read())
    os.waitpid(child, 0)
    in_parent = _unnamed_call_ids(2)
    assert len(set(from_child) | set(in_parent)) == 4
    assert from_child[0][:21] != in_parent[0][:21]  # a prefix of its own, not the parent's with another count
