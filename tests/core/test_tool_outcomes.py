"""What the model and the caller learn about each tool call, whatever happened to it.

Every call the model asked for ends with exactly one ``ToolCallFinished`` event and one
``after_tool_call`` hook call: calls that ran, and calls that never ran (unknown tool, bad JSON,
invalid arguments, denied, not approved, over the per-turn limit, stopped, cut off, interrupted).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from tooloop import (
    Agent,
    ApprovalRequested,
    Event,
    Hooks,
    Limits,
    LoopControl,
    ModelResponse,
    StepContext,
    StopReason,
    ToolCall,
    ToolCallFinished,
    ToolCallMessage,
    ToolCallStarted,
    ToolCallStatus,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import assert_valid


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def blocked() -> str:
    """A tool the agent denies."""
    return "must not run"


class _Watch:
    """Collects the events of a stream and the calls the after hook saw."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.after: list[str] = []

    def hook(self, context: StepContext) -> None:
        assert context.result is not None and context.result.status.finished
        self.after.append(context.result.tool_call_id)

    def finished(self) -> Counter[str]:
        return Counter(e.message.tool_call_id for e in self.events if isinstance(e, ToolCallFinished))


async def _stream(agent: Agent, watch: _Watch, prompt: str | None = "go", **kwargs: Any) -> None:
    async with agent.stream(prompt, **kwargs) as events:
        async for event in events:
            watch.events.append(event)


async def test_every_call_that_never_ran_ends_with_one_finished_event_and_one_after_hook() -> None:
    calls = [
        ToolCall("ok", "add", {"a": 1, "b": 2}),
        ToolCall("unknown", "nope", {}),
        ToolCall("badjson", "add", "{not json"),
        ToolCall("invalid", "add", {"a": "x"}),
        ToolCall("denied", "blocked", {}),
        ToolCall("refused", "delete", {"path": "a"}),
        ToolCall("over", "add", {"a": 0, "b": 0}),
    ]
    watch = _Watch()
    agent = Agent(
        ScriptedModel([ModelResponse(tool_calls=calls), "done"]),
        tools=[add, delete, blocked],
        denied_tools="blocked",
        approve=lambda request: False,
        limits=Limits(max_tool_calls_per_turn=6),
        hooks=Hooks(after_tool_call=watch.hook),
    )
    await _stream(agent, watch)

    ids = [c.id for c in calls]
    assert watch.finished() == Counter(ids)
    assert Counter(watch.after) == Counter(ids)
    started = [e.tool_call_id for e in watch.events if isinstance(e, ToolCallStarted)]
    assert started == ["ok"]  # only a call that really runs is announced as started
    statuses = {e.message.tool_call_id: e.message.status for e in watch.events if isinstance(e, ToolCallFinished)}
    assert statuses["denied"] is ToolCallStatus.DENIED and statuses["refused"] is ToolCallStatus.DENIED
    assert statuses["over"] is ToolCallStatus.ERROR and statuses["ok"] is ToolCallStatus.OK


async def test_calls_stopped_by_a_hook_and_calls_cut_off_by_max_tokens_end_with_one_finished_event() -> None:
    def stop_first(context: StepContext) -> LoopControl | None:
        return LoopControl.stop() if context.call is not None and context.call.id == "s1" else None

    watch = _Watch()
    sequential_add = tool(add.function, name="seq_add", sequential=True)
    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[ToolCall("s1", "seq_add", {"a": 1, "b": 1}), ToolCall("s2", "add", {"a": 1, "b": 1})]
            )
        ]
    )
    agent = Agent(
        model, tools=[add, sequential_add], hooks=Hooks(before_tool_call=stop_first, after_tool_call=watch.hook)
    )
    await _stream(agent, watch)
    assert watch.finished() == Counter(["s1", "s2"]) and Counter(watch.after) == Counter(["s1", "s2"])

    watch = _Watch()
    cut = ModelResponse(tool_calls=[ToolCall("m1", "add", {"a": 1})], stop_reason=StopReason.MAX_TOKENS)
    agent = Agent(ScriptedModel([cut]), tools=[add], hooks=Hooks(after_tool_call=watch.hook))
    await _stream(agent, watch)
    assert watch.finished() == Counter(["m1"]) and watch.after == ["m1"]


async def test_calls_cancelled_while_running_end_with_one_finished_event_and_one_after_hook() -> None:
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        """Hang."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    watch = _Watch()
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("h1", "hang", {}), ToolCall("h2", "hang", {})])])
    agent = Agent(model, tools=[hang], hooks=Hooks(after_tool_call=watch.hook))
    async with agent.stream("go") as events:
        async for event in events:
            watch.events.append(event)
            if isinstance(event, ToolCallStarted):
                await started.wait()
                events.cancel("stop")
    assert watch.finished() == Counter(["h1", "h2"]) and Counter(watch.after) == Counter(["h1", "h2"])
    assert {e.message.status for e in watch.events if isinstance(e, ToolCallFinished)} == {ToolCallStatus.CANCELLED}


async def test_an_approval_request_is_closed_by_an_approval_decided_event() -> None:
    from tooloop import ApprovalDecided

    watch = _Watch()
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("d1", "delete", {"path": "x"})]), "ok"])
    agent = Agent(model, tools=[delete], approve=lambda request: True, hooks=Hooks(after_tool_call=watch.hook))
    await _stream(agent, watch)
    kinds = [e.kind for e in watch.events if e.kind in ("approval_requested", "approval_decided", "tool_call_finished")]
    assert kinds == ["approval_requested", "approval_decided", "tool_call_finished"]
    requested = next(e for e in watch.events if isinstance(e, ApprovalRequested))
    decided = next(e for e in watch.events if isinstance(e, ApprovalDecided))
    assert decided.request == requested.request
    assert decided.decision is not None and decided.decision.approved


async def test_an_unserialisable_result_is_that_calls_error_and_the_run_goes_on() -> None:
    @tool
    def loop_data() -> dict[str, Any]:
        """Recursive data."""
        data: dict[str, Any] = {}
        data["self"] = data
        return data

    class Broken:
        def model_dump_json(self) -> str:
            raise ValueError("cannot dump")

    @tool
    def broken() -> Any:
        """A value whose dump raises."""
        return Broken()

    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall("r", "loop_data", {}),
                    ToolCall("b", "broken", {}),
                    ToolCall("a", "add", {"a": 1, "b": 1}),
                ]
            ),
            "fine",
        ]
    )
    result = await Agent(model, tools=[loop_data, broken, add]).run("go")
    assert result.stop_reason is StopReason.END_TURN and result.text == "fine"
    outcomes = {c.tool_call_id: c for c in result.tool_calls}
    for call_id in ("r", "b"):
        assert outcomes[call_id].status is ToolCallStatus.ERROR
        assert "the tool ran, but its result could not be serialised" in outcomes[call_id].content
    assert "cannot dump" in outcomes["b"].content
    assert outcomes["a"].content == "2"
    assert result.usage.tool_calls == 3
    assert_valid(result.transcript)
    result.transcript.to_json()  # the record stays serialisable


async def test_error_text_sent_to_the_model_is_bounded_by_max_tool_result_chars() -> None:
    @tool
    def shout() -> str:
        """Fail loudly."""
        raise RuntimeError("x" * 50_000)

    model = ScriptedModel(
        [ModelResponse(tool_calls=[ToolCall("s", "shout", {}), ToolCall("u", "nope" * 5000, {})]), "ok"]
    )
    result = await Agent(model, tools=[shout], limits=Limits(max_tool_result_chars=1_000)).run("go")
    for call in result.tool_calls:
        assert call.is_error
        assert len(call.content) < 1_100
        assert call.content.endswith("characters ...]")
    sent = model.requests[1].messages
    assert all(len(m.content) < 1_100 for m in sent if isinstance(m, ToolCallMessage))


async def test_a_tool_raising_cancelled_error_from_inside_is_that_calls_error_when_nobody_cancelled() -> None:
    @tool
    async def inner_cancelled() -> str:
        """An inner task of the tool gets cancelled."""
        inner = asyncio.ensure_future(asyncio.sleep(10))
        inner.cancel()
        return await inner

    @tool
    def sync_cancelled() -> str:
        """A sync tool raising CancelledError."""
        raise asyncio.CancelledError("inner")

    for name in ("inner_cancelled", "sync_cancelled"):
        calls = [ToolCall("c", name, {}), ToolCall("a", "add", {"a": 1, "b": 1})]
        for batch in (calls, calls[:1]):  # concurrently with another call, and alone
            model = ScriptedModel([ModelResponse(tool_calls=batch), "went on"])
            result = await Agent(model, tools=[inner_cancelled, sync_cancelled, add]).run("go")
            assert result.stop_reason is StopReason.END_TURN and result.text == "went on"
            failed = result.tool_calls[0]
            assert failed.status is ToolCallStatus.ERROR and "CancelledError" in failed.content
