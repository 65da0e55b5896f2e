"""Each model response's id, stop sequence and usage kept on the messages it produced; RunResult as JSON."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tooloop import (
    Agent,
    AssistantMessage,
    ModelResponse,
    RunResult,
    StopReason,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Transcript,
    Usage,
    UserMessage,
    tool,
)
from tooloop.errors import CorruptDataError
from tooloop.testing import ScriptedModel


@tool
def look(path: str) -> str:
    """Look at a file."""
    return f"saw {path}"


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _two_requests() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelResponse(
                "looking",
                [ToolCall("c1", "look", {"path": "a"}), ToolCall("c2", "look", {"path": "b"})],
                usage=Usage(120, 30, cost=Decimal("0.0015")),
                response_id="resp_1",
            ),
            ModelResponse(
                "both seen",
                usage=Usage(200, 12, reasoning_tokens=4, cost=Decimal("0.0021")),
                response_id="resp_2",
                stop_sequence="###",
            ),
        ]
    )


async def test_the_final_answer_carries_its_response_id_stop_sequence_and_usage() -> None:
    result = await Agent(_two_requests(), tools=[look]).run("look at a and b")
    final = result.final_message
    assert final is not None
    assert (final.response_id, final.stop_sequence) == ("resp_2", "###")
    assert final.usage == Usage(200, 12, requests=1, reasoning_tokens=4, cost=Decimal("0.0021"))


async def test_the_first_call_of_a_batch_carries_its_requests_usage() -> None:
    result = await Agent(_two_requests(), tools=[look]).run("look at a and b")
    first, second = result.tool_calls
    assert (first.response_id, first.usage) == ("resp_1", Usage(120, 30, requests=1, cost=Decimal("0.0015")))
    assert (second.response_id, second.usage) == (None, None)  # one request, counted once


async def test_the_requests_usages_add_up_to_the_runs() -> None:
    result = await Agent(_two_requests(), tools=[look]).run("look at a and b")
    per_request = [m.usage for m in result.transcript if isinstance(m, AssistantMessage | ToolCallMessage) and m.usage]
    total = sum(per_request, Usage())
    assert len(per_request) == result.usage.requests == 2
    assert (total.input_tokens, total.output_tokens, total.cost) == (320, 42, Decimal("0.0036"))
    assert total.cost == result.usage.cost


def test_response_id_stop_sequence_and_usage_survive_the_json_form() -> None:
    usage = Usage(5, 7, requests=1, cache_read_tokens=3, cost=Decimal("0.000012345"))
    transcript = Transcript(
        [
            UserMessage("hi"),
            ToolCallMessage(tool_name="look", tool_call_id="c1", response_id="r1", usage=usage),
            AssistantMessage("done", response_id="r2", stop_sequence="END", usage=usage),
        ]
    )
    data = json.loads(transcript.to_json())
    assert data["messages"][2]["usage"] == {
        "input_tokens": 5,
        "output_tokens": 7,
        "requests": 1,
        "cache_read_tokens": 3,
        "cost": "0.000012345",
    }
    back = Transcript.from_json(transcript.to_json())
    call, answer = back[1], back[2]
    assert isinstance(call, ToolCallMessage) and isinstance(answer, AssistantMessage)
    assert (call.response_id, call.usage) == ("r1", usage)
    assert (answer.response_id, answer.stop_sequence, answer.usage) == ("r2", "END", usage)


def test_a_transcript_written_before_per_request_usage_still_loads() -> None:
    old = {
        "version": 1,
        "messages": [
            {"kind": "user", "text": "hi"},
            {"kind": "tool_call", "tool_name": "look", "tool_call_id": "c", "arguments": {}, "status": "ok"},
            {"kind": "assistant", "text": "hello", "model": "m"},
        ],
    }
    back = Transcript.from_json(old)
    answer = back[2]
    assert isinstance(answer, AssistantMessage)
    assert (answer.response_id, answer.stop_sequence, answer.usage) == (None, None, None)
    assert back[1].usage is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("usage", "named"),
    [
        ({"input_tokens": "12"}, "input_tokens"),
        ({"output_tokens": 1.5}, "output_tokens"),
        ({"cost": "a lot"}, "cost"),
        ({"cost": "NaN"}, "cost"),
        ([1, 2], "usage"),
    ],
)
def test_a_damaged_usage_is_corrupt_data_naming_the_message(usage: object, named: str) -> None:
    data = {"messages": [{"kind": "user", "text": "hi"}, {"kind": "assistant", "text": "x", "usage": usage}]}
    with pytest.raises(CorruptDataError, match=rf"message 1 .*{named}") as caught:
        Transcript.from_json(data)
    assert list(caught.value.transcript or []) == [UserMessage("hi")]


def test_usage_and_response_id_do_not_change_what_a_message_equals() -> None:
    plain = AssistantMessage("same")
    measured = AssistantMessage("same", response_id="r", usage=Usage(1, 1, requests=1))
    assert plain == measured and hash(plain) == hash(measured)
    assert AssistantMessage("same", stop_sequence="END") != plain


async def test_final_tool_calls_are_the_batch_the_run_stopped_on() -> None:
    model = ScriptedModel(
        [ModelResponse("", [ToolCall("d1", "delete", {"path": "x"}), ToolCall("d2", "delete", {"path": "y"})])]
    )
    result = await Agent(model, tools=[delete]).run("clean up")
    assert result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [c.tool_call_id for c in result.final_tool_calls] == ["d1", "d2"]
    assert all(c.status is ToolCallStatus.PENDING for c in result.final_tool_calls)


async def test_final_tool_calls_are_empty_when_the_run_answered() -> None:
    result = await Agent(_two_requests(), tools=[look]).run("look at a and b")
    assert result.final_tool_calls == ()
    assert len(result.tool_uses_in_final_turn) == 2


def test_final_tool_calls_never_reach_into_the_history_before_the_run() -> None:
    old_call = ToolCallMessage(tool_name="look", tool_call_id="old", batch_id="b")
    new_call = ToolCallMessage(tool_name="look", tool_call_id="new", batch_id="b")
    result = RunResult(transcript=Transcript([old_call, new_call]), stop_reason=StopReason.MAX_TURN_REQUESTS, start=1)
    assert result.final_tool_calls == (new_call,)
    assert RunResult(transcript=Transcript([old_call]), stop_reason=StopReason.END_TURN, start=1).final_tool_calls == ()


async def test_run_result_to_json_for_a_web_framework() -> None:
    result = await Agent(_two_requests(), tools=[look]).run("look at a and b")
    data = json.loads(result.to_json())
    assert data["text"] == "both seen"
    assert data["stop_reason"] == "end_turn"
    assert data["usage"]["requests"] == 2 and data["usage"]["tool_calls"] == 2
    assert data["usage"]["cost"] == "0.0036"
    assert data["error"] is None and data["pending_approvals"] == []
    assert [m["kind"] for m in data["transcript"]] == ["user", "tool_call", "tool_call", "assistant"]
    assert data["transcript"][-1]["response_id"] == "resp_2"
    assert Transcript.from_json({"messages": data["transcript"]}) == result.transcript


async def test_run_result_to_dict_of_a_paused_and_of_a_failed_run() -> None:
    model = ScriptedModel([ModelResponse("", [ToolCall("d1", "delete", {"path": "x"})])])
    paused = (await Agent(model, tools=[delete]).run("clean up")).to_dict()
    assert paused["stop_reason"] == "approval_required"
    assert paused["pending_approvals"][0]["tool_call_id"] == "d1"
    assert paused["usage"]["cost"] is None

    def broken(_: object) -> ModelResponse:
        raise RuntimeError("the model fell over")

    from tooloop.testing import FunctionModel

    failed = await Agent(FunctionModel(broken)).run("hi", raise_errors=False)
    data = json.loads(failed.to_json())
    assert data["stop_reason"] == "error"
    assert data["error"]["type"] == type(failed.error).__name__ and "fell over" in data["error"]["message"]
