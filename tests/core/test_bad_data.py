"""Transcripts read from JSON, recorded values and tool results: bad data never escapes as a raw error."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tooloop import (
    Agent,
    AssistantMessage,
    CorruptDataError,
    ModelResponse,
    Tool,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Transcript,
    UserMessage,
)
from tooloop.messages import FrozenDict, FrozenList
from tooloop.testing import ScriptedModel

GOOD = {"kind": "user", "text": "hi"}

BAD_TRANSCRIPTS: list[tuple[str, Any, str]] = [
    ("bytes that are not UTF-8", b'{"messages": [\xff]}', "transcript JSON is not valid"),
    ("nesting too deep", "[" * 100_000 + "]" * 100_000, "transcript JSON is not valid"),
    ("refusal=5", {"messages": [GOOD, {"kind": "assistant", "text": "x", "refusal": 5}]}, "message 1 .*refusal"),
    ("model=[]", {"messages": [{"kind": "assistant", "text": "x", "model": []}]}, "message 0 .*'model'"),
    ("provider_data='x'", {"messages": [{"kind": "assistant", "provider_data": "x"}]}, "message 0 .*provider_data"),
    ("thinking='x'", {"messages": [{"kind": "assistant", "thinking": "x"}]}, "message 0 .*thinking"),
    ("thinking item 5", {"messages": [{"kind": "assistant", "thinking": [5]}]}, "message 0 .*thinking part"),
    (
        "redacted='yes'",
        {"messages": [{"kind": "assistant", "thinking": [{"text": "t", "redacted": "no"}]}]},
        "redacted",
    ),
    ("message is a list", {"messages": [GOOD, ["user", "hi"]]}, "message 1 .*must be an object"),
    ("stop_reason unknown", {"messages": [{"kind": "assistant", "stop_reason": "nap"}]}, "message 0 .*nap"),
    (
        "error is a string",
        {"messages": [{"kind": "tool_call", "tool_name": "t", "tool_call_id": "c", "error": "boom"}]},
        "message 0 .*'error'",
    ),
    (
        "raw_arguments=1",
        {"messages": [{"kind": "tool_call", "tool_name": "t", "tool_call_id": "c", "raw_arguments": 1}]},
        "message 0 .*raw_arguments",
    ),
]


@pytest.mark.parametrize(("data", "needle"), [c[1:] for c in BAD_TRANSCRIPTS], ids=[c[0] for c in BAD_TRANSCRIPTS])
def test_a_malformed_transcript_is_corrupt_data_naming_the_position(data: Any, needle: str) -> None:
    with pytest.raises(CorruptDataError, match=needle):
        Transcript.from_json(data)


def test_a_corrupt_transcript_keeps_the_messages_before_the_bad_one() -> None:
    data = {"messages": [GOOD, {"kind": "assistant", "text": "ok"}, {"kind": "assistant", "refusal": 5}]}
    with pytest.raises(CorruptDataError) as caught:
        Transcript.from_json(data)
    assert caught.value.transcript == Transcript([UserMessage("hi"), AssistantMessage("ok")])


def _run_tools(*tools: Any, arguments: dict[str, Any] | None = None) -> Transcript:
    names = [t.name if isinstance(t, Tool) else t.__name__ for t in tools]
    calls = tuple(ToolCall(f"c{i}", name, arguments or {}) for i, name in enumerate(names))
    model = ScriptedModel([ModelResponse(tool_calls=calls), "done"])
    return Agent(model, tools=list(tools)).run_sync("go").transcript


def test_hashing_a_transcript_works_and_equal_transcripts_hash_alike() -> None:
    def lookup(query: str, tags: list[str]) -> dict[str, Any]:
        """Look something up."""
        return {"query": query, "tags": tags}

    transcript = _run_tools(lookup, arguments={"query": "q", "tags": ["a", "b"]})
    again = Transcript.from_json(transcript.to_json())
    assert hash(transcript) == hash(again)
    assert {transcript: 1}[again] == 1


def test_a_tool_that_mutates_its_arguments_does_not_rewrite_the_recorded_call() -> None:
    def tamper(items: list[str], options: dict[str, Any]) -> str:
        """Change what it was given."""
        items.append("added by the tool")
        options["secret"] = "changed"
        return "done"

    def change(**kwargs: Any) -> str:
        kwargs["options"]["secret"] = "changed"
        return "done"

    # a hand-written schema: the arguments reach the function without validation
    tamper_untyped = Tool(name="tamper_untyped", description="", parameters={"type": "object"}, function=change)

    arguments = {"items": ["a"], "options": {"secret": "original"}}
    for fn in (tamper, tamper_untyped):
        recorded = _run_tools(fn, arguments=arguments).tool_invocations[0]
        assert recorded.status is ToolCallStatus.OK
        assert recorded.arguments == {"items": ["a"], "options": {"secret": "original"}}
    assert arguments == {"items": ["a"], "options": {"secret": "original"}}


def test_recorded_values_are_deeply_immutable() -> None:
    message = ToolCallMessage(
        tool_name="t",
        tool_call_id="c",
        arguments={"a": [1, {"b": 2}]},
        result={"rows": [1, 2]},
        provider_data={"x": {}},
    )
    assert type(message.arguments) is FrozenDict and type(message.arguments["a"]) is FrozenList
    for change in (
        lambda: message.arguments.__setitem__("a", 1),
        lambda: message.arguments["a"].append(3),
        lambda: message.arguments["a"][1].update(b=3),
        lambda: message.result["rows"].append(3),
        lambda: message.provider_data["x"].clear(),
    ):
        with pytest.raises(TypeError, match="a recorded value cannot change"):
            change()
    assert message.arguments == {"a": [1, {"b": 2}]} and json.loads(json.dumps(message.arguments)) == {
        "a": [1, {"b": 2}]
    }


def test_bytes_results_reach_the_model_as_text_or_labelled_base64() -> None:
    def text_bytes() -> bytes:
        return "héllo".encode()

    def binary() -> bytes:
        return b"\xff\x00\x01"

    calls = _run_tools(text_bytes, binary).tool_invocations
    assert calls[0].content == "héllo"
    encoded = base64.b64encode(b"\xff\x00\x01").decode()
    assert calls[1].content == f"[binary data, 3 bytes, base64-encoded] {encoded}"
    assert "b'" not in calls[0].content + calls[1].content


def test_an_exception_whose_str_raises_is_that_calls_error_and_the_run_goes_on() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    def broken() -> str:
        raise Unprintable()

    transcript = _run_tools(broken)
    recorded = transcript.tool_invocations[0]
    assert recorded.status is ToolCallStatus.ERROR
    assert recorded.content == "Unprintable: (the error's message could not be read: its __str__ raised RuntimeError)"
    assert transcript.final_text == "done"
    assert Transcript.from_json(transcript.to_json()).tool_invocations[0].error_type == "Unprintable"
