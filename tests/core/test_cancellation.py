"""Cancellation: a run stops promptly from any task or thread and its transcript stays valid."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tooloop import Agent, CancelToken, ModelResponse, RunFinished, StopReason, ToolCall, ToolCallStatus, tool
from tooloop.testing import ScriptedModel

from ._support import assert_valid

SAFETY = 10  # seconds; a safety net only: every wait below ends long before it


def _hang_agent(started: asyncio.Event) -> Agent:
    @tool
    async def hang() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    @tool
    async def quick() -> str:
        return "quick"

    model = ScriptedModel(
        [ModelResponse("on it", [ToolCall("q", "quick", {}), ToolCall("h", "hang", {})]), "never asked"]
    )
    return Agent(model, tools=[hang, quick])


async def test_conversation_cancel_while_a_tool_hangs() -> None:
    started = asyncio.Event()
    conversation = _hang_agent(started).conversation("go")
    first = await conversation.__anext__()
    assert first.kind == "user"

    async def cancel_when_started() -> None:
        await started.wait()
        conversation.cancel("user pressed stop")

    canceller = asyncio.create_task(cancel_when_started())
    rest = [m async for m in conversation]
    await canceller
    result = conversation.result
    assert result is not None
    assert result.stop_reason is StopReason.CANCELLED
    statuses = {c.tool_call_id: c.status for c in result.tool_calls}
    assert statuses == {"q": ToolCallStatus.OK, "h": ToolCallStatus.CANCELLED}
    assert [m.kind for m in rest] == ["tool_call", "tool_call"]
    assert_valid(result.transcript)


async def test_cancel_token_from_another_task_in_run() -> None:
    started = asyncio.Event()
    token = CancelToken()
    agent = _hang_agent(started)

    async def cancel_when_started() -> None:
        await started.wait()
        token.cancel()

    canceller = asyncio.create_task(cancel_when_started())
    result = await asyncio.wait_for(agent.run("go", cancel=token), SAFETY)
    await canceller
    assert result.stop_reason is StopReason.CANCELLED
    assert token.cancelled
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK, ToolCallStatus.CANCELLED]
    assert_valid(result.transcript)


async def test_cancel_token_in_stream() -> None:
    started = asyncio.Event()
    token = CancelToken()
    events = []
    async for event in _hang_agent(started).stream("go", cancel=token):
        events.append(event)
        if event.kind == "tool_call_started" and event.tool_name == "hang":  # type: ignore[union-attr]
            await started.wait()
            token.cancel()
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.result.stop_reason is StopReason.CANCELLED
    assert_valid(last.result.transcript)


async def test_cancel_from_another_thread_while_a_sync_tool_blocks() -> None:
    entered = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    @tool
    def block() -> str:
        entered.set()
        release.wait(SAFETY)
        finished.set()
        return "late"

    token = CancelToken()
    canceller = threading.Thread(target=lambda: (entered.wait(SAFETY), token.cancel("from a thread")))
    canceller.start()
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("b", "block", {})]), "never"])
    try:
        result = await asyncio.wait_for(Agent(model, tools=[block]).run("go", cancel=token), SAFETY)
        assert not finished.is_set()  # the run ended while the thread was still blocked
        assert result.stop_reason is StopReason.CANCELLED
        assert result.tool_calls[0].status is ToolCallStatus.CANCELLED
        assert token.reason == "from a thread"
        assert_valid(result.transcript)
    finally:
        release.set()
        canceller.join(SAFETY)
    assert await asyncio.to_thread(finished.wait, SAFETY)


async def test_cancel_before_start() -> None:
    token = CancelToken()
    token.cancel()
    model = ScriptedModel(["never"])
    result = await Agent(model).run("go", cancel=token)
    assert result.stop_reason is StopReason.CANCELLED
    assert model.requests == []
    assert_valid(result.transcript)


async def test_cancel_while_the_model_is_answering() -> None:
    waiting = asyncio.Event()

    async def slow_model(request: object) -> str:
        waiting.set()
        await asyncio.Event().wait()
        return "never"

    token = CancelToken()
    model = ScriptedModel([slow_model])
    task = asyncio.create_task(Agent(model).run("go", cancel=token))
    await waiting.wait()
    token.cancel()
    result = await asyncio.wait_for(task, SAFETY)
    assert result.stop_reason is StopReason.CANCELLED
    assert [m.kind for m in result.transcript] == ["user"]


async def test_plain_task_cancellation_propagates() -> None:
    started = asyncio.Event()
    task = asyncio.create_task(_hang_agent(started).run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY)
    assert task.cancelled()


async def test_cancel_while_an_approver_waits_keeps_the_call() -> None:
    asked = asyncio.Event()

    @tool(requires_approval=True)
    def deploy() -> str:
        raise AssertionError("must not run")

    async def approver(request: object) -> bool:
        asked.set()
        await asyncio.Event().wait()
        return True

    token = CancelToken()
    model = ScriptedModel([ModelResponse("deploying", [ToolCall("d", "deploy", {})])])
    task = asyncio.create_task(Agent(model, tools=[deploy], approve=approver).run("go", cancel=token))
    await asked.wait()
    token.cancel()
    result = await asyncio.wait_for(task, SAFETY)
    assert result.stop_reason is StopReason.CANCELLED
    (call,) = result.tool_calls
    assert call.status is ToolCallStatus.CANCELLED and call.message == "deploying"
    assert_valid(result.transcript)


async def test_one_token_cancels_every_run_it_was_given_to() -> None:
    token = CancelToken()
    first_started, second_started = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(_hang_agent(first_started).run("one", cancel=token))
    second = asyncio.create_task(_hang_agent(second_started).run("two", cancel=token))
    await first_started.wait()
    await second_started.wait()
    token.cancel()
    results = await asyncio.wait_for(asyncio.gather(first, second), SAFETY)
    assert [r.stop_reason for r in results] == [StopReason.CANCELLED] * 2
    for result in results:
        assert_valid(result.transcript)


async def test_continue_after_a_cancelled_run() -> None:
    started = asyncio.Event()
    agent = _hang_agent(started)
    token = CancelToken()
    task = asyncio.create_task(agent.run("go", cancel=token))
    await started.wait()
    token.cancel()
    cancelled = await asyncio.wait_for(task, SAFETY)
    result = await agent.run("are you there?", history=cancelled.transcript)
    assert result.text == "never asked"
    assert result.stop_reason is StopReason.END_TURN
    assert_valid(result.transcript)


@pytest.mark.parametrize("token_first", [True, False])
async def test_task_cancel_propagates_even_when_a_cancel_token_fires_at_the_same_moment(token_first: bool) -> None:
    started = asyncio.Event()
    token = CancelToken()
    task = asyncio.create_task(_hang_agent(started).run("go", cancel=token))
    await started.wait()
    if token_first:
        token.cancel()
        task.cancel()
    else:
        task.cancel()
        token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY)
    assert task.cancelled()


async def test_a_cancel_token_alone_still_ends_the_run_as_cancelled_after_a_foreign_cancel_was_absorbed() -> None:
    """The caller's own earlier cancellation (caught and uncancelled) does not confuse the token."""
    started = asyncio.Event()
    token = CancelToken()

    async def caller() -> StopReason:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass  # the caller absorbs a cancellation without uncancel(): cancelling() stays 1
        result = await _hang_agent(started).run("go", cancel=token)
        return result.stop_reason

    task = asyncio.create_task(caller())
    await asyncio.sleep(0)
    task.cancel()
    await started.wait()
    token.cancel()
    assert await asyncio.wait_for(task, SAFETY) is StopReason.CANCELLED
