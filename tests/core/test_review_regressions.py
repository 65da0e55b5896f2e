"""Behaviour a review found broken once: each test is the reproducer, kept so it stays fixed."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.support.scripted import calls_then
from tooloop import (
    Agent,
    CancelToken,
    Limits,
    ModelRequest,
    ModelResponse,
    OutputValidationError,
    ProviderConnectionError,
    StopReason,
    ToolCall,
    ToolCallStatus,
    ToolContext,
    Transcript,
    Usage,
    tool,
)
from tooloop.testing import FunctionModel, ScriptedModel, TruncatedStream, inject


async def test_a_tool_cancelling_its_own_run_does_not_leak_a_cancel_into_the_caller() -> None:
    @tool
    async def stop_now(ctx: ToolContext) -> str:
        """Stop the run."""
        assert ctx.cancel_token is not None
        ctx.cancel_token.cancel("the tool asked")
        return "stopping"

    result = await Agent(calls_then("never", ToolCall("c1", "stop_now", {})), tools=[stop_now]).run("go")
    assert result.stop_reason is StopReason.CANCELLED
    await asyncio.sleep(0)  # would raise CancelledError if the cancel had leaked into this task
    await asyncio.sleep(0.01)


async def test_a_cancel_from_another_thread_after_the_step_ended_never_reaches_the_caller() -> None:
    token = CancelToken()

    def slow_answer(request: ModelRequest) -> ModelResponse:
        threading.Thread(target=token.cancel).start()
        time.sleep(0.05)  # the cancel lands while the model step is busy on the loop
        return ModelResponse("done")

    result = await Agent(FunctionModel(slow_answer)).run("hi", cancel=token)
    assert result.text == "done"
    await asyncio.sleep(0.01)  # no CancelledError here


async def test_closing_one_stream_does_not_cancel_other_runs_sharing_the_token() -> None:
    @tool
    async def slow() -> str:
        """Take a moment."""
        await asyncio.sleep(0.05)
        return "ok"

    shared = CancelToken()
    agent = Agent(calls_then("final", ToolCall("c1", "slow", {})), tools=[slow])
    first, second = agent.stream("A", cancel=shared), agent.stream("B", cancel=shared)

    async def drain() -> StopReason | None:
        async for _ in second:
            pass
        return second.result.stop_reason if second.result else None

    other = asyncio.create_task(drain())
    async with first:
        await first.__anext__()
    assert await other is StopReason.END_TURN
    assert not shared.cancelled


async def test_a_stream_dropped_by_its_cancelled_consumer_stops_its_run() -> None:
    ran: list[str] = []

    @tool
    async def charge_card() -> str:
        """A side effect that must not happen once the client left."""
        await asyncio.sleep(0.2)
        ran.append("charged")
        return "ok"

    model = calls_then("final", ToolCall("c1", "charge_card", {}))
    agent = Agent(model, tools=[charge_card])

    async def consume() -> None:  # holds the only reference to the stream, like a request handler
        async for _ in agent.stream("go"):
            pass

    consumer = asyncio.create_task(consume())
    while not model.requests:  # the model was asked: the tool is about to run
        await asyncio.sleep(0.01)
    consumer.cancel()  # e.g. the HTTP client disconnected
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await asyncio.sleep(0.4)
    assert ran == [] and len(model.requests) == 1


async def test_waiting_for_the_next_event_with_a_timeout_does_not_disturb_the_run() -> None:
    @tool
    async def slow() -> str:
        """Take a while."""
        await asyncio.sleep(0.2)
        return "done"

    events = Agent(calls_then("final", ToolCall("c1", "slow", {})), tools=[slow]).stream("go")
    heartbeats = 0
    async with events:
        while True:
            try:
                await asyncio.wait_for(events.__anext__(), 0.05)
            except TimeoutError:
                heartbeats += 1
            except StopAsyncIteration:
                break
    assert heartbeats >= 2
    assert events.result is not None and events.result.text == "final"


async def test_repeated_call_ids_stay_stable_so_a_pending_approval_can_be_given_after_a_reload() -> None:
    @tool
    def look() -> str:
        """Look around."""
        return "a repo"

    @tool(requires_approval=True)
    def delete_repo(name: str) -> str:
        """Delete a repository."""
        return f"deleted {name}"

    model = ScriptedModel(
        [
            ModelResponse(tool_calls=[ToolCall("call_0", "look", {})]),
            ModelResponse(tool_calls=[ToolCall("call_0", "delete_repo", {"name": "x"})]),  # the same id again
            "Deleted.",
        ]
    )
    agent = Agent(model, tools=[look, delete_repo])
    paused = await agent.run("clean up")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    reloaded = Transcript.from_json(paused.transcript.to_json())
    resumed = await agent.run(history=reloaded, approvals=[paused.pending_approvals[0].approve()])
    assert resumed.text == "Deleted."
    assert [c.status for c in resumed.transcript.tool_invocations] == [ToolCallStatus.OK, ToolCallStatus.OK]
    assert len({c.tool_call_id for c in resumed.transcript.tool_invocations}) == 2


def test_run_sync_returns_at_the_timeout_even_while_a_sync_tool_blocks() -> None:
    release = threading.Event()

    @tool
    def hang() -> str:
        """Block until released."""
        release.wait(10)
        return "late"

    agent = Agent(calls_then("never", ToolCall("c1", "hang", {})), tools=[hang], limits=Limits(timeout=0.2))
    started = time.monotonic()
    from tooloop import RunTimeoutError

    with pytest.raises(RunTimeoutError):
        agent.run_sync("go")
    assert time.monotonic() - started < 3
    release.set()


async def test_the_loop_alone_counts_tool_calls_whatever_the_adapter_reports() -> None:
    @tool
    def f() -> str:
        """F."""
        return "x"

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c", "f", {})], usage=Usage(tool_calls=1)), "done"])
    result = await Agent(model, tools=[f]).run("go")
    assert result.usage.tool_calls == 1 and result.usage.requests == 2


async def test_the_final_answer_forced_by_a_limit_is_validated_against_the_output_type() -> None:
    class Answer(BaseModel):
        city: str

    @tool
    def f() -> str:
        """F."""
        return "x"

    limits = Limits(max_turns=1, final_answer_on_limit=True)
    ok = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c", "f", {})]), '{"city": "Paris"}'])
    result = await Agent(ok, tools=[f], output_type=Answer, limits=limits).run("go")
    assert result.stop_reason is StopReason.MAX_TURN_REQUESTS and result.output == Answer(city="Paris")

    bad = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c", "f", {})]), "Paris, I think"])
    with pytest.raises(OutputValidationError):
        await Agent(bad, tools=[f], output_type=Answer, limits=limits).run("go")


async def test_a_stream_cut_mid_answer_leaves_the_session_unfinished_so_resume_asks_again(tmp_path: Path) -> None:
    model = inject(ScriptedModel(["The full answer is forty-two.", "Forty-two."]), TruncatedStream(on=1, after_chars=8))
    agent = Agent(model, store=f"sqlite:///{tmp_path / 's.db'}", session_id="s1")
    with pytest.raises(ProviderConnectionError) as caught:
        async for _ in agent.stream("question"):
            pass
    assert caught.value.partial_text == "The full"
    resumed = await agent.resume("s1")
    assert resumed.text == "Forty-two." and resumed.usage.requests == 1


async def test_a_decision_for_a_call_that_is_not_waiting_is_refused() -> None:
    from tooloop import ApprovalMismatchError, ApprovalRequest

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    agent = Agent(ScriptedModel([ModelResponse(tool_calls=[ToolCall("d1", "delete", {"path": "a"})])]), tools=[delete])
    paused = await agent.run("clean")
    stray = ApprovalRequest("zzz", "delete", {"path": "a"}).approve()
    with pytest.raises(ApprovalMismatchError, match="zzz"):
        await agent.run(history=paused.transcript, approvals=[stray])
    finished = await Agent(ScriptedModel(["hi"])).run("hello")
    with pytest.raises(ApprovalMismatchError):
        await Agent(ScriptedModel(["x"])).run(history=finished.transcript, approvals=[stray])


async def test_a_hook_stop_on_an_invalid_structured_answer_leaves_no_unsent_retry_prompt() -> None:
    from tooloop import Hooks, LoopControl

    class Invoice(BaseModel):
        total: int

    agent = Agent(
        ScriptedModel(["not json"]),
        output_type=Invoice,
        hooks=Hooks(on_model_response=lambda context: LoopControl.stop()),
    )
    result = await agent.run("extract")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK and result.output is None
    assert [type(m).__name__ for m in result.transcript] == ["UserMessage", "AssistantMessage"]


async def test_a_run_cancelled_before_it_began_keeps_and_stores_its_prompt(tmp_path: Path) -> None:
    from tooloop import UserMessage, open_store

    token = CancelToken()
    token.cancel()
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = await Agent(ScriptedModel(["never"]), store=url).run("keep me", session_id="s", cancel=token)
    assert result.stop_reason is StopReason.CANCELLED
    assert list(result.transcript) == [UserMessage("keep me")]
    async with open_store(url) as store:
        assert list(await store.load("s")) == [UserMessage("keep me")]


async def test_plain_task_cancellation_still_journals_what_the_transcript_says(tmp_path: Path) -> None:
    from tooloop import open_store

    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Take long."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    url = f"sqlite:///{tmp_path / 's.db'}"
    agent = Agent(calls_then("never", ToolCall("c1", "slow", {})), tools=[slow], store=url)
    task = asyncio.ensure_future(agent.run("go", session_id="w"))
    await asyncio.wait_for(started.wait(), 30)  # cancel once the tool runs, however loaded the machine
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with open_store(url) as store:
        stored = await store.load("w")
    assert [c.status for c in stored.tool_invocations] == [ToolCallStatus.CANCELLED]
