"""Tool failures go back to the model and the loop continues; broken histories are repaired."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from tooloop import (
    Agent,
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ProviderError,
    RateLimitError,
    StopReason,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
    tool,
)
from tooloop.testing import FunctionModel, ScriptedModel

from ._support import assert_valid


class Query(BaseModel):
    text: str
    limit: int


@tool
def divide(a: float, b: float) -> float:
    return a / b


@tool
def search(query: Query) -> str:
    return query.text


@tool(timeout=0.05)
async def hang() -> str:
    await asyncio.Event().wait()
    return "never"


@tool(timeout=0.2)
async def busy_then_wait() -> str:
    time.sleep(0.3)  # past its whole time limit before it first waits
    await asyncio.sleep(0.1)
    return "late"


async def _one_call(call: ToolCall) -> tuple[ToolCallMessage, list[object]]:
    """Run one call; return its message and what the model received in the next request."""
    model = ScriptedModel([ModelResponse(tool_calls=[call]), "recovered"])
    result = await Agent(model, tools=[divide, search, hang, busy_then_wait]).run("go")
    assert result.text == "recovered"
    assert result.stop_reason is StopReason.END_TURN
    assert_valid(result.transcript)
    (message,) = result.tool_calls
    return message, list(model.requests[1].messages)


async def test_tool_raises() -> None:
    message, sent = await _one_call(ToolCall("c", "divide", {"a": 1, "b": 0}))
    assert message.status is ToolCallStatus.ERROR
    assert isinstance(message.error, ZeroDivisionError)
    assert message.content == "ZeroDivisionError: float division by zero"
    assert sent[-1] == message


async def test_unknown_tool() -> None:
    message, sent = await _one_call(ToolCall("c", "launch_rockets", {}))
    assert message.status is ToolCallStatus.ERROR
    assert message.error_type == "UnknownToolError"
    assert "unknown tool 'launch_rockets'" in message.content
    assert "divide, hang, search" in message.content
    assert sent[-1].content == message.content  # type: ignore[attr-defined]


async def test_arguments_not_valid_json() -> None:
    # complete but malformed; arguments that stop half way are a cut-off response (tests/core/test_guards.py)
    message, sent = await _one_call(ToolCall("c", "divide", '{"a": 1, "b": }'))
    assert message.status is ToolCallStatus.ERROR
    assert message.error_type == "ToolArgumentsError"
    assert message.content.startswith("ToolArgumentsError: arguments are not valid JSON")
    assert message.raw_arguments == '{"a": 1, "b": }'
    assert message.arguments == {}
    assert sent[-1] == message


async def test_arguments_that_are_json_but_not_an_object() -> None:
    message, _ = await _one_call(ToolCall("c", "divide", "[1, 2]"))
    assert message.status is ToolCallStatus.ERROR
    assert "must be a JSON object" in message.content


async def test_arguments_failing_validation() -> None:
    message, sent = await _one_call(ToolCall("c", "search", {"query": {"text": "x", "limit": "many"}}))
    assert message.status is ToolCallStatus.ERROR
    assert message.error_type == "ToolArgumentsError"
    assert "query.limit" in message.content
    assert "invalid arguments for search" in message.content
    assert sent[-1] == message


async def test_extra_arguments_are_refused() -> None:
    message, _ = await _one_call(ToolCall("c", "divide", {"a": 1, "b": 2, "c": 3}))
    assert message.status is ToolCallStatus.ERROR
    assert "c: Extra inputs are not permitted" in message.content


async def test_tool_timeout() -> None:
    message, sent = await asyncio.wait_for(_one_call(ToolCall("c", "hang", {})), 10)
    assert message.status is ToolCallStatus.ERROR
    assert message.error_type == "ToolTimeoutError"
    assert message.content == "ToolTimeoutError: tool 'hang' did not finish within 0.05 seconds"
    assert sent[-1] == message


async def test_a_tool_timeout_counts_from_the_call_start_not_from_its_first_wait() -> None:
    message, _ = await asyncio.wait_for(_one_call(ToolCall("c", "busy_then_wait", {})), 10)
    assert message.error_type == "ToolTimeoutError"
    assert message.content == "ToolTimeoutError: tool 'busy_then_wait' did not finish within 0.2 seconds"


async def test_a_failing_call_does_not_stop_the_others() -> None:
    calls = [ToolCall("1", "divide", {"a": 4, "b": 2}), ToolCall("2", "divide", {"a": 1, "b": 0})]
    result = await Agent(ScriptedModel([ModelResponse(tool_calls=calls), "ok"]), tools=[divide]).run("go")
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK, ToolCallStatus.ERROR]
    assert result.tool_calls[0].result == 2.0


# ---------------------------------------------------------------- history repair


async def test_history_with_unfinished_call_in_the_middle_is_repaired_before_sending() -> None:
    history = [
        UserMessage("first"),
        ToolCallMessage(
            tool_name="divide", tool_call_id="s", arguments={"a": 1, "b": 1}, status=ToolCallStatus.STARTED
        ),
        ToolCallMessage(
            tool_name="divide", tool_call_id="p", arguments={"a": 1, "b": 1}, status=ToolCallStatus.PENDING
        ),
        AssistantMessage("ok"),
    ]
    model = ScriptedModel(["fine"])
    result = await Agent(model, tools=[divide]).run("next", history=history)
    sent = [m for m in model.requests[0].messages if isinstance(m, ToolCallMessage)]
    assert [m.status for m in sent] == [ToolCallStatus.ERROR, ToolCallStatus.ERROR]
    assert all("interrupted" in m.content for m in sent)
    assert_valid(result.transcript)
    assert result.text == "fine"


async def test_duplicate_call_ids_are_made_unique() -> None:
    history = [
        UserMessage("q"),
        ToolCallMessage(tool_name="divide", tool_call_id="dup", content="1", batch_id="b1"),
        AssistantMessage("a"),
        UserMessage("q2"),
        ToolCallMessage(tool_name="divide", tool_call_id="dup", content="2", batch_id="b2"),
        AssistantMessage("a2"),
    ]
    model = ScriptedModel(["fine"])
    result = await Agent(model).run("next", history=history)
    ids = [m.tool_call_id for m in model.requests[0].messages if isinstance(m, ToolCallMessage)]
    assert len(set(ids)) == 2 and ids[0] == "dup"
    assert_valid(result.transcript)


# ---------------------------------------------------------------- model errors


async def test_model_error_is_raised_with_the_transcript_so_far() -> None:
    model = ScriptedModel(
        [ModelResponse(tool_calls=[ToolCall("c", "divide", {"a": 6, "b": 3})]), RateLimitError("slow down")]
    )
    with pytest.raises(RateLimitError) as caught:
        await Agent(model, tools=[divide]).run("go")
    error = caught.value
    assert error.transcript is not None
    assert [m.kind for m in error.transcript] == ["user", "tool_call"]
    assert error.transcript[1].result == 2.0  # type: ignore[union-attr]
    assert error.usage is not None and error.usage.requests == 1 and error.usage.tool_calls == 1


async def test_raise_errors_false_returns_the_error() -> None:
    def fail(request: ModelRequest) -> ModelResponse:
        raise ProviderError("provider down", status_code=503)

    result = await Agent(FunctionModel(fail)).run("go", raise_errors=False)
    assert result.has_error
    assert isinstance(result.error, ProviderError)
    assert result.stop_reason is StopReason.ERROR
    assert list(result.transcript) == [UserMessage("go")]
    assert result.text == ""


@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5"])
def test_a_refused_connection_from_run_sync_names_the_refusal_not_the_event_loop(spec: str) -> None:
    import socket

    from tooloop import ProviderConnectionError, get_model

    with socket.socket() as probe:  # a port nobody listens on: the connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = get_model(spec, base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test-refused", max_retries=0)
    with pytest.raises(ProviderConnectionError) as caught:
        Agent(model).run_sync("hello")
    message = str(caught.value)
    assert "event loop" not in message
    assert f"cannot reach {spec.partition(':')[0]} at http://127.0.0.1:{port}/v1/ (" in message
    assert "Connect call failed" in message or "refused" in message.lower()
    chain, seen = caught.value, []
    while chain is not None:
        seen.append(chain)
        chain = chain.__cause__ or chain.__context__  # type: ignore[assignment]
    assert not any(isinstance(e, RuntimeError) and "event loop" in str(e) for e in seen)
