"""Messages are frozen values; a Transcript is an immutable sequence with a versioned JSON form."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooloop import (
    Agent,
    AssistantMessage,
    ModelResponse,
    SystemMessage,
    ThinkingPart,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Transcript,
    UserMessage,
    tool,
)
from tooloop.errors import CorruptDataError, RestoredToolError, ToolArgumentsError
from tooloop.testing import ScriptedModel

# ---------------------------------------------------------------- messages


@pytest.mark.parametrize(
    "message",
    [
        SystemMessage("be brief"),
        UserMessage("hi"),
        AssistantMessage("hello"),
        ToolCallMessage(tool_name="add", tool_call_id="c1", arguments={"a": 1}),
    ],
)
def test_messages_are_frozen(message: object) -> None:
    field = dataclasses.fields(message)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(message, field, "changed")


def test_tool_call_message_fields() -> None:
    error = ValueError("boom")
    failed = ToolCallMessage(
        tool_name="add",
        tool_call_id="c1",
        arguments={"a": 1},
        error=error,
        message="let me add",
        status=ToolCallStatus.ERROR,
        content="ValueError: boom",
    )
    assert failed.tool_name == "add"
    assert failed.tool_call_id == "c1"
    assert failed.arguments == {"a": 1}
    assert failed.result is None
    assert failed.error is error
    assert failed.error_type == "ValueError"
    assert failed.message == "let me add"
    assert failed.is_error and not failed.ok
    assert failed.batch_id == "c1"  # a lone call is its own batch

    ok = ToolCallMessage(tool_name="add", tool_call_id="c2", result=3, content="3")
    assert ok.ok and not ok.is_error and ok.status is ToolCallStatus.OK

    assert {s.value for s in ToolCallStatus} >= {"ok", "error", "denied", "cancelled", "pending"}
    for status in ("denied", "cancelled"):
        assert ToolCallMessage(tool_name="t", tool_call_id="x", status=ToolCallStatus(status)).is_error
    assert not ToolCallStatus.PENDING.finished
    assert ToolCallStatus.DENIED.finished


async def test_calls_of_one_response_share_batch_and_stay_in_model_order() -> None:
    @tool
    def echo(x: int) -> int:
        return x

    model = ScriptedModel(
        [
            ModelResponse("first", [ToolCall("a", "echo", {"x": 1}), ToolCall("b", "echo", {"x": 2})]),
            ModelResponse("second", [ToolCall("c", "echo", {"x": 3})]),
            "done",
        ]
    )
    result = await Agent(model, tools=[echo]).run("go")
    calls = result.tool_calls
    assert [c.tool_call_id for c in calls] == ["a", "b", "c"]
    assert calls[0].batch_id == calls[1].batch_id != calls[2].batch_id
    assert [c.message for c in calls] == ["first", "first", "second"]
    kinds = [m.kind for m in result.transcript]
    assert kinds == ["user", "tool_call", "tool_call", "tool_call", "assistant"]


# ---------------------------------------------------------------- transcript


def _sample() -> Transcript:
    return Transcript(
        [
            SystemMessage("sys"),
            UserMessage("q"),
            ToolCallMessage(tool_name="t", tool_call_id="1", batch_id="b1", content="r1", result="r1"),
            ToolCallMessage(tool_name="t", tool_call_id="2", batch_id="b1", content="r2", result="r2"),
            AssistantMessage("a1"),
            UserMessage("q2"),
            ToolCallMessage(tool_name="t", tool_call_id="3", content="r3"),
            AssistantMessage("a2"),
        ]
    )


def test_transcript_is_a_sequence() -> None:
    t = _sample()
    assert len(t) == 8
    assert t[1] == UserMessage("q")
    assert t[-1] == AssistantMessage("a2")
    with pytest.raises(IndexError):
        t[8]
    part = t[1:3]
    assert isinstance(part, Transcript)
    assert list(part) == [UserMessage("q"), t[2]]
    assert [m.kind for m in t][:2] == ["system", "user"]
    assert t.final_message == AssistantMessage("a2")
    assert [c.tool_call_id for c in t.tool_invocations] == ["1", "2", "3"]
    assert t.iterations == 4  # batch b1, a1, call 3, a2
    assert Transcript().final_message is None


def test_plus_returns_new_transcript_and_branches_are_independent() -> None:
    base = Transcript([UserMessage("q")])
    left = base + AssistantMessage("left")
    right = base + AssistantMessage("right")
    longer = left + [UserMessage("more"), AssistantMessage("again")]  # noqa: RUF005 (Transcript.__add__)
    assert list(base) == [UserMessage("q")]
    assert list(left) == [UserMessage("q"), AssistantMessage("left")]
    assert list(right) == [UserMessage("q"), AssistantMessage("right")]
    assert len(longer) == 4 and list(left) == [UserMessage("q"), AssistantMessage("left")]
    left2 = left + AssistantMessage("x")
    left3 = left + AssistantMessage("y")
    assert left2[-1] == AssistantMessage("x") and left3[-1] == AssistantMessage("y")
    assert longer[2] == UserMessage("more")


def test_json_round_trip_keeps_tool_errors() -> None:
    failed = ToolCallMessage(
        tool_name="div",
        tool_call_id="c",
        arguments={"a": 1, "b": 0},
        status=ToolCallStatus.ERROR,
        error=ZeroDivisionError("division by zero"),
        content="ZeroDivisionError: division by zero",
    )
    back = Transcript.from_json(Transcript([failed]).to_json())
    restored = back[0]
    assert isinstance(restored, ToolCallMessage)
    assert isinstance(restored.error, RestoredToolError)
    assert restored.error.type_name == "ZeroDivisionError"
    assert restored.error_type == "ZeroDivisionError"
    assert str(restored.error) == "division by zero"
    assert restored == failed  # errors are not compared, everything else is
    # a second round trip is stable
    assert Transcript.from_json(back.to_json()).to_json() == back.to_json()


@pytest.mark.parametrize(
    ("data", "position"),
    [
        ('{"version": 1, "messages": [{"kind": "user", "text": "ok"}, {"kind": "martian"}]}', "message 1"),
        ('{"version": 1, "messages": [{"kind": "tool_call", "tool_name": "t"}]}', "message 0"),
        ('{"version": 1, "messages": [{"kind": "user"}, {"kind": "user", "text": "x"}]}', "message 0"),
    ],
)
def test_from_json_names_the_bad_position(data: str, position: str) -> None:
    with pytest.raises(CorruptDataError, match=position):
        Transcript.from_json(data)


@pytest.mark.parametrize("data", ["not json", "[1, 2]", '{"messages": 3}', b"\xff\xfe"])
def test_from_json_of_garbage(data: str | bytes) -> None:
    with pytest.raises(CorruptDataError):
        Transcript.from_json(data)


def test_from_json_refuses_a_newer_version() -> None:
    with pytest.raises(CorruptDataError, match="version"):
        Transcript.from_json('{"version": 99, "messages": []}')


# ---------------------------------------------------------------- property test

_text = st.text(max_size=20)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_thinking = st.builds(
    ThinkingPart, _text, signature=st.none() | _text, redacted=st.booleans(), provider=st.none() | _text
)
_errors = st.sampled_from([ValueError, KeyError, ToolArgumentsError, RuntimeError])


@st.composite
def _tool_call(draw: st.DrawFn, index: int, batch: str) -> ToolCallMessage:
    failed = draw(st.booleans())
    status = draw(st.sampled_from(list(ToolCallStatus))) if not failed else ToolCallStatus.ERROR
    error = draw(_errors)(draw(_text)) if failed else None
    return ToolCallMessage(
        tool_name=draw(st.from_regex(r"[a-z_]{1,10}", fullmatch=True)),
        tool_call_id=f"call-{index}",
        arguments=draw(st.dictionaries(_text, _json_value, max_size=3)),
        result=None if failed else draw(_json_value),
        error=error,
        message=draw(_text),
        status=status,
        content=draw(_text),
        batch_id=batch,
        raw_arguments=draw(st.none() | _text),
        thinking=tuple(draw(st.lists(_thinking, max_size=2))),
        provider_data=draw(st.dictionaries(_text, _json_value, max_size=2)),
    )


@st.composite
def _transcripts(draw: st.DrawFn) -> Transcript:
    messages: list = []
    for index in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "batch"]))
        if kind == "system":
            messages.append(SystemMessage(draw(_text)))
        elif kind == "user":
            messages.append(UserMessage(draw(_text)))
        elif kind == "assistant":
            messages.append(
                AssistantMessage(
                    draw(_text),
                    thinking=tuple(draw(st.lists(_thinking, max_size=2))),
                    refusal=draw(st.none() | _text),
                    model=draw(st.none() | _text),
                    provider_data=draw(st.dictionaries(_text, _json_value, max_size=2)),
                )
            )
        else:
            for n in range(draw(st.integers(1, 3))):
                messages.append(draw(_tool_call(index * 10 + n, f"batch-{index}")))
    return Transcript(messages)


@settings(max_examples=150, deadline=None)
@given(_transcripts())
def test_json_round_trip_property(transcript: Transcript) -> None:
    text = transcript.to_json()
    back = Transcript.from_json(text)
    assert back == transcript
    assert json.loads(back.to_json()) == json.loads(text)
    for before, after in zip(transcript, back, strict=True):
        if isinstance(before, ToolCallMessage):
            assert isinstance(after, ToolCallMessage)
            assert after.error_type == before.error_type
            if before.error is not None:
                assert str(after.error) == str(before.error)


_fields = st.sampled_from(
    ["text", "tool_name", "tool_call_id", "status", "error", "thinking", "arguments", "provider_data", "stop_reason"]
)
_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_fields | st.just("type"), inner, max_size=4),
    max_leaves=12,
)
_junk_message = st.fixed_dictionaries(
    {"kind": st.sampled_from(["system", "user", "assistant", "tool_call", "robot"])},
    optional={"text": _junk, "tool_name": _junk, "tool_call_id": _junk, "status": _junk, "error": _junk,
              "thinking": _junk, "arguments": _junk, "provider_data": _junk, "stop_reason": _junk},
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_junk_message | _junk, max_size=3), st.none() | _junk)
def test_from_json_of_any_json_reads_or_raises_corrupt_data(messages: list[object], version: object) -> None:
    data = {"messages": messages} if version is None else {"messages": messages, "version": version}
    try:
        transcript = Transcript.from_json(json.dumps(data))
    except CorruptDataError:
        return
    assert len(transcript) == len(messages)


def test_from_json_refuses_non_string_text_instead_of_inventing_it() -> None:
    with pytest.raises(CorruptDataError, match="message 0"):
        Transcript.from_json('{"version": 1, "messages": [{"kind": "user", "text": null}]}')


def test_a_transcript_saves_to_a_file_and_loads_back(tmp_path: Path) -> None:
    transcript = Transcript([UserMessage("hi"), AssistantMessage("hello")])
    path = tmp_path / "chat.json"
    transcript.save_to_file(path)
    assert Transcript.load_from_file(path) == transcript
    assert [p.name for p in tmp_path.iterdir()] == ["chat.json"]  # no temporary file left behind
    path.write_text(path.read_text()[:-20])
    with pytest.raises(CorruptDataError):
        Transcript.load_from_file(path)
