"""``auto_execute_tools=False``: the run pauses with every call pending, as for approvals, and a
pending call can be completed with a result computed elsewhere (``request.complete(result)``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooloop import (
    Agent,
    ApprovalDecision,
    ApprovalMismatchError,
    ApprovalRequest,
    ArgumentTypeError,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolCallStatus,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import assert_valid

ran: list[str] = []


@tool
def lookup(city: str) -> str:
    ran.append(city)
    return f"{city}: sun"


@tool(requires_approval=True)
def charge(amount: int) -> str:
    ran.append(f"charge {amount}")
    return "charged"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def _calls(*calls: tuple[str, str, dict[str, object]]) -> ModelResponse:
    return ModelResponse("", [ToolCall(i, name, args) for i, name, args in calls])


async def test_no_call_runs_by_itself_and_the_run_pauses_with_all_pending() -> None:
    model = ScriptedModel([_calls(("a", "lookup", {"city": "Paris"}), ("b", "lookup", {"city": "Oslo"})), "done"])
    asked: list[ApprovalRequest] = []
    agent = Agent(model, tools=[lookup], auto_execute_tools=False, approve=asked.append)
    paused = await agent.run("weather?")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [r.tool_call_id for r in paused.pending_approvals] == ["a", "b"]
    assert ran == [] and asked == []  # nothing ran, and no approver decides calls that need no approval
    assert [c.status for c in paused.final_tool_calls] == [ToolCallStatus.PENDING, ToolCallStatus.PENDING]

    first, second = paused.pending_approvals
    resumed = await agent.run(
        None, history=paused.transcript, approvals=[first.approve(), second.complete("Oslo: snow")]
    )
    assert ran == ["Paris"]  # the completed call did not run
    assert resumed.text == "done"
    results = [m for m in model.requests[1].messages if getattr(m, "tool_call_id", None) in ("a", "b")]
    assert [(m.tool_call_id, m.content) for m in results] == [("a", "Paris: sun"), ("b", "Oslo: snow")]  # type: ignore[union-attr]
    assert_valid(resumed.transcript)


async def test_a_call_that_needs_approval_can_be_completed_instead_of_run() -> None:
    model = ScriptedModel([_calls(("c", "charge", {"amount": 5})), "ok"])
    agent = Agent(model, tools=[charge])
    paused = await agent.run("pay")
    (request,) = paused.pending_approvals
    resumed = await agent.run(None, history=paused.transcript, approvals=[request.complete({"receipt": 17})])
    assert ran == []
    (call,) = resumed.tool_calls
    assert call.status is ToolCallStatus.OK and call.result == {"receipt": 17} and '"receipt": 17' in call.content


async def test_a_completed_decision_is_bound_to_its_call_and_survives_json() -> None:
    model = ScriptedModel([_calls(("c", "charge", {"amount": 5})), "ok"])
    agent = Agent(model, tools=[charge])
    paused = await agent.run("pay")
    (request,) = paused.pending_approvals
    decision = ApprovalDecision.from_dict(request.complete([1, 2]).to_dict())
    assert decision.completed and decision.result == [1, 2]
    forged = ApprovalRequest("c", "charge", {"amount": 500}).complete("charged 500")
    with pytest.raises(ApprovalMismatchError):
        await agent.run(None, history=paused.transcript, approvals=[forged])
    resumed = await agent.run(None, history=paused.transcript, approvals=[decision])
    assert list(resumed.tool_calls[0].result) == [1, 2]
    assert ran == []


async def test_a_paused_stored_session_is_completed_by_a_new_agent(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    first_model = ScriptedModel([_calls(("a", "lookup", {"city": "Rome"}))])
    paused = await Agent(first_model, tools=[lookup], auto_execute_tools=False, store=store, session_id="s1").run("go")
    (request,) = paused.pending_approvals
    later = ScriptedModel(["Rome is sunny"])
    agent = Agent(later, tools=[lookup], auto_execute_tools=False, store=store, session_id="s1")
    resumed = await agent.run(None, approvals=[request.complete("Rome: sun (cached)")])
    assert resumed.text == "Rome is sunny" and ran == []
    assert [m.content for m in resumed.transcript.tool_invocations] == ["Rome: sun (cached)"]


def test_auto_execute_tools_takes_a_bool() -> None:
    with pytest.raises(ArgumentTypeError, match="auto_execute_tools"):
        Agent("test:echo", auto_execute_tools="no")  # type: ignore[arg-type]
