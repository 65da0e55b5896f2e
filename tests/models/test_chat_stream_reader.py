"""The Chat Completions stream reader: the chunks of one network read give one delta per span.

A span is consecutive text, or consecutive fragments of one tool call. Chunks handed over
together (``feed_all``) arrived in one read; chunks handed over one by one arrived apart.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooloop.errors import ModelResponseError
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import StopReason, ToolCall
from tooloop.models.openai_chat.chunks import Chunk, decode
from tooloop.models.openai_chat.stream import ChatStreamReader


def _chunks(*deltas: dict[str, Any], finish: str | None = None) -> list[Chunk]:
    """The records of chunks with these deltas (decoded from their JSON, as the stream path does)."""
    raw = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    if finish is not None:
        raw.append({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return decode(json.dumps(raw).encode())


def _start(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name}}]}


def _args(index: int, text: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": text}}]}


def _reader() -> tuple[ChatStreamReader, list[ModelEvent]]:
    events: list[ModelEvent] = []
    return ChatStreamReader("openai", events.append), events


TURN = (
    {"content": "Let me "},
    {"content": "check."},
    _start(0, "call_a", "weather"),
    _args(0, '{"city": '),
    _args(0, '"Paris"}'),
    _start(1, "call_b", "time"),
    _args(1, "{}"),
)


def test_the_chunks_of_one_read_give_one_delta_per_span_in_order() -> None:
    reader, events = _reader()
    reader.feed_all(_chunks(*TURN, finish="tool_calls"))
    assert events == [
        TextDelta("Let me check."),
        ToolCallDelta(0, "call_a", "weather", '{"city": "Paris"}'),
        ToolCallDelta(1, "call_b", "time", "{}"),
    ]
    response = reader.result()
    assert response.text == "Let me check."
    assert response.tool_calls == (ToolCall("call_a", "weather", '{"city": "Paris"}'), ToolCall("call_b", "time", "{}"))
    assert response.stop_reason is StopReason.TOOL_USE


def test_chunks_read_apart_give_a_delta_each_and_the_same_response() -> None:
    together, _ = _reader()
    together.feed_all(_chunks(*TURN, finish="tool_calls"))
    apart, events = _reader()
    for record in _chunks(*TURN, finish="tool_calls"):
        apart.feed_all([record])
    assert events == [
        TextDelta("Let me "),
        TextDelta("check."),
        ToolCallDelta(0, "call_a", "weather", ""),
        ToolCallDelta(0, "call_a", None, '{"city": '),
        ToolCallDelta(0, "call_a", None, '"Paris"}'),
        ToolCallDelta(1, "call_b", "time", ""),
        ToolCallDelta(1, "call_b", None, "{}"),
    ]
    assert apart.result() == together.result()


def test_a_span_ends_where_another_begins_even_within_one_read() -> None:
    reader, events = _reader()
    reader.feed_all(_chunks({"content": "a"}, {"reasoning_content": "hm"}, {"content": "b"}, {"content": "c"}))
    assert events == [TextDelta("a"), ThinkingDelta("hm"), TextDelta("bc")]


def test_a_span_does_not_reach_into_the_next_read() -> None:
    reader, events = _reader()
    reader.feed_all(_chunks(_start(0, "call_a", "weather"), _args(0, '{"ci')))
    reader.feed_all(_chunks(_args(0, 'ty": "Rome"}')))
    assert events == [ToolCallDelta(0, "call_a", "weather", '{"ci'), ToolCallDelta(0, "call_a", None, 'ty": "Rome"}')]


def test_a_surrogate_pair_split_across_chunks_is_whole_in_one_read_and_across_reads() -> None:
    high, low = "\ud83d", "\ude00"
    one, events = _reader()
    one.feed_all([_text(high), _text(low + "!")])
    assert events == [TextDelta("\U0001f600!")]
    held, events = _reader()
    held.feed_all([_text("Grüße "), _text(high)])
    held.feed_all([_text(low + "!")])
    assert events == [TextDelta("Grüße "), TextDelta("\U0001f600!")]
    two, events = _reader()
    two.feed_all([_text("a" + high)])
    two.feed_all([_text(low)])
    assert events == [TextDelta("a"), TextDelta("\U0001f600")]


def _text(content: str) -> Chunk:
    """A chunk with this text (a lone surrogate cannot be written as JSON, so it is set afterwards)."""
    record = decode(b'[{"choices":[{"delta":{"content":"x"}}]}]')[0]
    assert record.choices is not None and record.choices[0].delta is not None
    record.choices[0].delta.content = content
    return record


def test_the_deltas_before_an_unreadable_chunk_still_go_out() -> None:
    reader, events = _reader()
    good = _chunks({"content": "Hi"}, {"content": " there"})
    broken = Chunk(choices=[])
    broken.choices = "not a list"  # type: ignore[assignment]  # what a chunk record never holds
    with pytest.raises(ModelResponseError, match="cannot read"):
        reader.feed_all([*good, broken])
    assert events == [TextDelta("Hi there")]


def test_the_handlers_own_error_comes_out_unchanged() -> None:
    def handler(event: ModelEvent) -> None:
        raise LookupError("the UI is gone")

    reader = ChatStreamReader("openai", handler)
    with pytest.raises(LookupError, match="the UI is gone"):
        reader.feed_all(_chunks({"content": "Hi"}, {"content": " there"}))


def test_a_dict_chunk_from_the_sdk_is_read_the_same_and_a_wrong_shape_is_an_error() -> None:
    reader, events = _reader()
    reader.feed({"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}], "model": "m"})
    assert events == [TextDelta("ok")]
    assert reader.result().text == "ok"
    with pytest.raises(ModelResponseError, match="cannot read"):
        reader.feed({"choices": [{"delta": "not an object"}]})


def test_an_object_without_choices_is_an_error_unless_it_carries_the_usage() -> None:
    reader, _ = _reader()
    reader.feed_all(decode(b'[{"choices": [], "usage": {"prompt_tokens": 3}}, {"usage": {"prompt_tokens": 3}}]'))
    with pytest.raises(ModelResponseError, match="not a chunk"):
        reader.feed_all(decode(b'[{"object": "error", "message": "the model crashed"}]'))
