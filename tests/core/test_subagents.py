"""Subagents: ``agent.as_tool()`` runs a nested run as one call of the parent."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from tooloop import (
    Agent,
    ApprovalMismatchError,
    ApprovalRequest,
    ArgumentValueError,
    CancelToken,
    Limits,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    ToolContext,
    Usage,
    UserMessage,
    tool,
)
from tooloop.events import SubagentEvent, ToolCallFinished, ToolCallStarted
from tooloop.testing import FunctionModel

from ._support import assert_valid


def asks(*calls: tuple[str, str, dict[str, object]], cost: str | None = None) -> ModelResponse:
    usage = Usage(10, 5, cost=Decimal(cost) if cost else None)
    return ModelResponse(tool_calls=tuple(ToolCall(i, n, a) for i, n, a in calls), usage=usage)


def answer(text: str, cost: str | None = None) -> ModelResponse:
    return ModelResponse(text, usage=Usage(10, 5, cost=Decimal(cost) if cost else None))


def results(request: ModelRequest) -> list[ToolCallMessage]:
    return [m for m in request.messages if isinstance(m, ToolCallMessage)]


def researcher(ran: list[str], *, approval: bool = False, cost: str | None = None) -> Agent:
    """A child that looks a fact up with its own tool, then answers with it."""

    @tool(requires_approval=approval)
    def look_up(topic: str) -> str:
        """Look a topic up."""
        ran.append(f"look_up:{topic}")
        return f"{topic} facts"

    def respond(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            topic = next(m.text for m in request.messages if isinstance(m, UserMessage))
            return asks(("c1", "look_up", {"topic": topic}), cost=cost)
        return answer(f"found: {done[0].content}", cost)

    return Agent(FunctionModel(respond, name="child"), tools=[look_up])


def delegating(*prompts: str, cost: str | None = None) -> FunctionModel:
    """A parent that delegates each prompt to ``research`` in one parallel batch, then sums up."""

    def respond(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            calls = [(f"p{i}", "research", {"prompt": p}) for i, p in enumerate(prompts)]
            return asks(*calls, cost=cost)
        return answer(" + ".join(m.content for m in done), cost)

    return FunctionModel(respond, name="parent")


async def test_a_subagent_answers_as_one_call_with_its_transcript_and_usage() -> None:
    ran: list[str] = []
    research = researcher(ran).as_tool(name="research", description="Research a topic.")
    result = await Agent(delegating("tides"), tools=[research]).run("Tell me about tides")
    assert result.transcript.final_text == "found: tides facts"
    call = result.transcript.tool_invocations[0]
    assert call.status is ToolCallStatus.OK and call.content == "found: tides facts"
    child = call.result["transcript"]
    assert [m["kind"] for m in child] == ["user", "tool_call", "assistant"]
    assert child[1]["tool_name"] == "look_up" and child[1]["content"] == "tides facts"
    # two requests and one call of the parent, two requests and one call of the child
    assert (result.usage.requests, result.usage.tool_calls) == (4, 2)
    assert result.usage.input_tokens == 40
    assert ran == ["look_up:tides"]
    assert research.parameters["required"] == ["prompt"]


async def test_events_reach_the_parents_stream_tagged_with_the_path() -> None:
    research = researcher([]).as_tool(name="research", description="Research a topic.")
    events = []
    async with Agent(delegating("moon", "sun"), tools=[research]).stream("go") as stream:
        async for event in stream:
            events.append(event)
    nested = [e for e in events if isinstance(e, SubagentEvent)]
    started = {(e.path, e.event.tool_call_id) for e in nested if isinstance(e.event, ToolCallStarted)}
    assert started == {("p0", "c1"), ("p1", "c1")}
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(e.message.tool_call_id for e in finished) == ["p0", "p1"]
    assert stream.result is not None and stream.result.transcript.final_text == "found: moon facts + found: sun facts"


async def test_a_childs_limit_is_that_calls_error_not_the_parents_stop() -> None:
    child = researcher([]).with_limits(max_turns=1)
    research = child.as_tool(name="research", description="Research a topic.")
    result = await Agent(delegating("tides"), tools=[research]).run("go")
    call = result.transcript.tool_invocations[0]
    assert call.status is ToolCallStatus.ERROR
    assert "max_turn_requests" in call.content
    assert result.stop_reason is StopReason.END_TURN  # the parent went on and answered


async def test_cancelling_the_parent_cancels_the_child() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    @tool
    async def look_up(topic: str) -> str:
        """Hangs until cancelled."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    child = Agent(FunctionModel(lambda r: asks(("c1", "look_up", {"topic": "x"}))), tools=[look_up])
    token = CancelToken()
    parent = Agent(delegating("x"), tools=[child.as_tool(name="research", description="Research.")])
    running = asyncio.create_task(parent.run("go", cancel=token))
    await asyncio.wait_for(started.wait(), 5)
    token.cancel("the user left")
    result = await asyncio.wait_for(running, 5)
    assert result.stop_reason is StopReason.CANCELLED
    assert cancelled == [True]
    assert_valid(result.transcript)


async def test_a_childs_approval_asks_the_parents_approver_by_path() -> None:
    ran: list[str] = []
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    research = researcher(ran, approval=True).as_tool(name="research", description="Research.")
    result = await Agent(delegating("tides"), tools=[research], approve=approve).run("go")
    assert [(r.tool_call_id, r.tool_name, dict(r.arguments)) for r in asked] == [
        ("p0/c1", "look_up", {"topic": "tides"})
    ]
    assert ran == ["look_up:tides"] and result.transcript.final_text == "found: tides facts"


async def test_a_deferred_child_approval_waits_with_the_parent_and_resumes_it(tmp_path: Path) -> None:
    ran: list[str] = []
    store = f"sqlite:///{tmp_path / 's.db'}"
    research = researcher(ran, approval=True).as_tool(name="research", description="Research.")
    parent = Agent(delegating("tides", "moon"), tools=[research], store=store, session_id="job")
    first = await parent.run("go")
    assert first.stop_reason is StopReason.APPROVAL_REQUIRED
    assert sorted(r.tool_call_id for r in first.pending_approvals) == ["p0/c1", "p1/c1"]
    assert ran == []
    decisions = [r.approve() if r.tool_call_id == "p0/c1" else r.deny("not now") for r in first.pending_approvals]
    second = await parent.resume(approvals=decisions)
    assert second.stop_reason is StopReason.END_TURN
    assert ran == ["look_up:tides"]
    assert second.transcript.final_text.startswith("found: tides facts + found: ")
    calls = second.transcript.tool_invocations
    assert [c.result["session_id"] for c in calls] == ["job.p0", "job.p1"]
    assert_valid(second.transcript)
    # the children's sessions are in the parent's store, whole
    viewer = Agent(FunctionModel(lambda r: "unused"), store=store)
    child = await viewer.with_session("job.p0").run(None)
    assert [type(m).__name__ for m in child.transcript] == ["UserMessage", "ToolCallMessage", "AssistantMessage"]


async def test_a_decision_that_does_not_match_the_childs_call_runs_nothing(tmp_path: Path) -> None:
    ran: list[str] = []
    research = researcher(ran, approval=True).as_tool(name="research", description="Research.")
    parent = Agent(delegating("tides"), tools=[research], store=f"sqlite:///{tmp_path / 's.db'}", session_id="j")
    first = await parent.run("go")
    (request,) = first.pending_approvals
    forged = ApprovalRequest(request.tool_call_id, "look_up", {"topic": "something else"}).approve()
    with pytest.raises(ApprovalMismatchError, match="does not match"):
        await parent.resume(approvals=[forged])
    assert ran == []
    # the call still waits: the right decision runs it
    again = await parent.resume()
    assert [r.tool_call_id for r in again.pending_approvals] == ["p0/c1"]
    done = await parent.resume(approvals=[again.pending_approvals[0].approve()])
    assert done.transcript.final_text == "found: tides facts" and ran == ["look_up:tides"]


async def test_without_a_session_a_deferred_child_approval_is_the_calls_error() -> None:
    research = researcher([], approval=True).as_tool(name="research", description="Research.")
    result = await Agent(delegating("tides"), tools=[research]).run("go")
    call = result.transcript.tool_invocations[0]
    assert call.status is ToolCallStatus.ERROR and "approver" in call.content


async def test_the_parents_max_cost_bounds_its_children() -> None:
    model = delegating("tides", cost="0.01")
    model.provider, model._name = "openai", "gpt-4.1-mini"  # a priced name, so max_cost may be set
    research = researcher([], cost="0.02").as_tool(name="research", description="Research.")
    result = await Agent(model, tools=[research], limits=Limits(max_cost="0.025")).run("go")
    call = result.transcript.tool_invocations[0]
    # parent 0.01, then the child's first request 0.02: the child's next one would pass 0.025
    assert call.status is ToolCallStatus.ERROR and "cost_limit" in call.content
    assert result.usage.cost == Decimal("0.03")
    assert result.stop_reason is StopReason.COST_LIMIT


async def test_deps_are_inherited_or_given() -> None:
    seen: list[object] = []

    @tool
    def where(ctx: ToolContext[str]) -> str:
        """Where am I."""
        seen.append(ctx.deps)
        return "here"

    def child_model(request: ModelRequest) -> ModelResponse:
        return answer("done") if results(request) else asks(("c1", "where", {}))

    child = Agent(FunctionModel(child_model), tools=[where])
    for as_tool, expected in (
        (child.as_tool(name="research", description="R."), "parent-deps"),
        (child.as_tool(name="research", description="R.", deps="own"), "own"),
    ):
        await Agent(delegating("x"), tools=[as_tool]).run("go", deps="parent-deps")
        assert seen.pop() == expected


async def test_a_new_prompt_to_the_parent_denies_the_childs_waiting_call(tmp_path: Path) -> None:
    ran: list[str] = []
    research = researcher(ran, approval=True).as_tool(name="research", description="Research.")
    parent = Agent(delegating("tides"), tools=[research], store=f"sqlite:///{tmp_path / 's.db'}", session_id="j")
    first = await parent.run("go")
    assert first.stop_reason is StopReason.APPROVAL_REQUIRED
    moved_on = await parent.run("never mind that")
    assert moved_on.stop_reason is StopReason.END_TURN and ran == []
    call = moved_on.transcript.tool_invocations[0]
    assert call.status is ToolCallStatus.OK and "no decision was given" in call.content
    assert isinstance(moved_on.transcript[-2], UserMessage) and moved_on.transcript[-2].text == "never mind that"
    assert_valid(moved_on.transcript)


async def test_the_tool_is_named_after_the_agent_unless_named() -> None:
    named = Agent(FunctionModel(lambda r: "ok"), name="scout")
    assert named.as_tool(description="Scouts.").name == "scout"
    assert named.as_tool(name="other", description="Scouts.").name == "other"
    with pytest.raises(ArgumentValueError, match="name="):
        Agent(FunctionModel(lambda r: "ok")).as_tool(description="Nameless.")


async def test_two_levels_deep_paths_and_deferred_approvals_reach_the_grandchild(tmp_path: Path) -> None:
    ran: list[str] = []
    inner = researcher(ran, approval=True).as_tool(name="research", description="Research.")

    def middle_model(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if done:
            return answer(f"middle: {done[0].content}")
        return asks(("q0", "research", {"prompt": "tides"}))

    middle = Agent(FunctionModel(middle_model), tools=[inner]).as_tool(name="manage", description="Manage.")

    def top_model(request: ModelRequest) -> ModelResponse:
        done = results(request)
        return answer(f"top: {done[0].content}") if done else asks(("p0", "manage", {"prompt": "go"}))

    top = Agent(FunctionModel(top_model), tools=[middle], store=f"sqlite:///{tmp_path / 's.db'}", session_id="t")
    events = []
    async with top.stream("start") as stream:
        async for event in stream:
            events.append(event)
    first = stream.result
    assert first is not None and first.stop_reason is StopReason.APPROVAL_REQUIRED
    (request,) = first.pending_approvals
    assert request.tool_call_id == "p0/q0/c1"
    paths = {e.path for e in events if isinstance(e, SubagentEvent)}
    assert paths == {"p0", "p0/q0"}
    done = await top.resume(approvals=[request.approve()])
    assert done.transcript.final_text == "top: middle: found: tides facts"
    assert ran == ["look_up:tides"]
