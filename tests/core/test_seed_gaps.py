"""Small gaps the design notes asked for: a hook's own stop text, what hooks see of the run, the
conversation driven as an async generator, and each message's role."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator

import pytest

from tooloop import (
    Agent,
    AssistantMessage,
    Hooks,
    LoopControl,
    ModelResponse,
    StepContext,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import assert_valid


@tool
def work(n: int) -> int:
    return n * 2


def _calls(*ns: int) -> ModelResponse:
    return ModelResponse("", [ToolCall(f"c{n}", "work", {"n": n}) for n in ns])


# ------------------------------------------------------------------ LoopControl.stop(text)


async def test_a_hook_stops_the_run_with_its_own_explanation() -> None:
    def on_response(ctx: StepContext) -> LoopControl:
        return LoopControl.stop("the daily budget of this user is spent")

    model = ScriptedModel([_calls(1), "never"])
    result = await Agent(model, tools=[work], hooks=Hooks(on_model_response=on_response)).run("go")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert result.stop_text == "the daily budget of this user is spent"
    assert result.to_dict()["stop_text"] == "the daily budget of this user is spent"
    assert "daily budget" in repr(result)
    assert_valid(result.transcript)


async def test_a_tool_hooks_stop_text_reaches_the_result_after_the_batch() -> None:
    def after(ctx: StepContext) -> LoopControl | None:
        return LoopControl.stop(StopReason.STOPPED_BY_HOOK, text=f"{ctx.call.name} said enough") if ctx.call else None

    model = ScriptedModel([_calls(1), "never"])
    result = await Agent(model, tools=[work], hooks=Hooks(after_tool_call=after)).run("go")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK and result.stop_text == "work said enough"
    assert result.tool_calls[0].status is ToolCallStatus.OK


async def test_a_stop_reason_given_by_name_stays_a_reason_without_text() -> None:
    control = LoopControl.stop("max_turn_requests")
    assert control.reason is StopReason.MAX_TURN_REQUESTS and control.text is None
    model = ScriptedModel(["hello"])
    result = await Agent(model).run("hi")
    assert result.stop_text is None and result.to_dict()["stop_text"] is None


def test_an_explanation_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="not a stop reason"):
        LoopControl.stop("budget spent", text="again")
    with pytest.raises(TypeError, match="text must be a string"):
        LoopControl.stop(StopReason.STOPPED_BY_HOOK, text=42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ StepContext.model / .tools


async def test_hooks_see_the_model_and_the_tools_offered() -> None:
    seen: list[StepContext] = []
    model = ScriptedModel([_calls(1), "done"])
    hooks = Hooks(on_model_response=seen.append, before_tool_call=seen.append)
    await Agent(model, tools=[work], hooks=hooks).run("go")
    assert [ctx.model for ctx in seen] == [model, model, model]
    assert all(set(ctx.tools) == {"work"} and ctx.tools["work"].name == "work" for ctx in seen)
    with pytest.raises(TypeError):
        seen[0].tools["other"] = work  # type: ignore[index]  # a view, not the run's own table


# ------------------------------------------------------------------ Conversation as an async generator


async def test_a_conversation_is_driven_with_asend() -> None:
    model = ScriptedModel([_calls(1), "done"])
    conversation = Agent(model, tools=[work]).conversation("go")
    assert isinstance(conversation, AsyncGenerator)
    first = await conversation.asend(None)
    assert isinstance(first, UserMessage) and first.text == "go"
    seen = [first]
    with pytest.raises(StopAsyncIteration):
        while True:
            seen.append(await conversation.asend(None))
    assert [type(m) for m in seen] == [UserMessage, ToolCallMessage, AssistantMessage]
    assert conversation.result is not None and conversation.result.text == "done"


async def test_asend_with_a_value_is_refused() -> None:
    conversation = Agent(ScriptedModel(["done"])).conversation("go")
    with pytest.raises(TypeError, match="takes no values"):
        await conversation.asend("more")  # type: ignore[arg-type]
    await conversation.aclose()


async def test_athrow_raises_inside_the_run_and_out_again() -> None:
    model = ScriptedModel([_calls(1), "done"])
    conversation = Agent(model, tools=[work]).conversation("go")
    await conversation.asend(None)
    with pytest.raises(KeyError, match="stop here"):
        await conversation.athrow(KeyError("stop here"))
    with pytest.raises(StopAsyncIteration):  # the run is over
        await conversation.asend(None)
    assert len(model.requests) == 0  # the model was never asked


# ------------------------------------------------------------------ Message.role


def test_every_message_says_its_role_and_it_cannot_be_set() -> None:
    messages = [
        SystemMessage("be brief"),
        UserMessage("hi"),
        AssistantMessage("hello"),
        ToolCallMessage(tool_name="work", tool_call_id="c1"),
    ]
    assert [m.role for m in messages] == ["system", "user", "assistant", "assistant"]
    for message in messages:
        with pytest.raises((AttributeError, TypeError)):  # frozen, slotted: no attribute can be set
            message.role = "user"  # type: ignore[misc]
    assert isinstance(inspect.getattr_static(UserMessage, "role"), property)
