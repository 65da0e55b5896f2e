"""Approvals: calls that need a person's decision, decided now or after the run paused."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tooloop import (
    Agent,
    ApprovalDecision,
    ApprovalMismatchError,
    ApprovalRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Transcript,
    UserMessage,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import assert_valid

deleted: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@tool
def look(path: str) -> str:
    return f"saw {path}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    deleted.clear()


def _asks(*paths: str) -> ModelResponse:
    return ModelResponse("cleaning up", [ToolCall(f"d{i}", "delete", {"path": p}) for i, p in enumerate(paths)])


async def test_approver_allows() -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    model = ScriptedModel([_asks("a.txt"), "done"])
    result = await Agent(model, tools=[delete], approve=approve).run("go")
    assert deleted == ["a.txt"]
    assert [(r.tool_name, dict(r.arguments)) for r in seen] == [("delete", {"path": "a.txt"})]
    assert result.tool_calls[0].ok and result.text == "done"


async def test_approver_denies_and_the_model_sees_why() -> None:
    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        return request.deny("not on a Friday")

    model = ScriptedModel([_asks("a.txt"), "understood"])
    result = await Agent(model, tools=[delete], approve=deny).run("go")
    assert deleted == []
    (call,) = result.tool_calls
    assert call.status is ToolCallStatus.DENIED
    assert call.content == "ToolDeniedError: not on a Friday"
    assert model.requests[1].messages[-1] == call
    assert result.text == "understood"


async def test_approver_edits_arguments() -> None:
    model = ScriptedModel([_asks("/etc/passwd"), "done"])
    agent = Agent(model, tools=[delete], approve=lambda r: r.approve({"path": "/tmp/safe"}))
    result = await agent.run("go")
    assert deleted == ["/tmp/safe"]
    (call,) = result.tool_calls
    assert call.arguments == {"path": "/tmp/safe"}
    assert call.result == "deleted /tmp/safe"


async def test_without_approver_the_run_pauses_and_resumes_later() -> None:
    model = ScriptedModel(
        [
            ModelResponse(tool_calls=[ToolCall("d0", "delete", {"path": "a"}), ToolCall("l", "look", {"path": "b"})]),
            "all done",
        ]
    )
    agent = Agent(model, tools=[delete, look])
    paused = await agent.run("clean")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    assert paused.needs_approval
    assert deleted == []
    (request,) = paused.pending_approvals
    assert request.tool_name == "delete" and dict(request.arguments) == {"path": "a"}
    calls = paused.tool_calls
    assert [c.status for c in calls] == [ToolCallStatus.PENDING, ToolCallStatus.OK]

    # the request and the decision survive JSON, and so does the paused transcript
    wire = json.dumps(request.to_dict())
    restored = ApprovalRequest.from_dict(json.loads(wire))
    assert restored == request
    decision = ApprovalDecision.from_dict(json.loads(json.dumps(restored.approve().to_dict())))
    history = Transcript.from_json(paused.transcript.to_json())

    resumed = await agent.run(None, history=history, approvals=[decision])
    assert deleted == ["a"]
    assert resumed.stop_reason is StopReason.END_TURN
    assert resumed.text == "all done"
    assert [c.status for c in resumed.transcript.tool_invocations] == [ToolCallStatus.OK, ToolCallStatus.OK]
    assert len(model.requests) == 2
    sent = [m for m in model.requests[1].messages if isinstance(m, ToolCallMessage)]
    assert [m.content for m in sent] == ["deleted a", "saw b"]
    assert_valid(resumed.transcript)


async def test_decision_with_changed_arguments_is_refused() -> None:
    agent = Agent(ScriptedModel([_asks("a")]), tools=[delete])
    paused = await agent.run("go")
    (request,) = paused.pending_approvals
    pending = paused.transcript[-1]
    assert isinstance(pending, ToolCallMessage)
    tampered = paused.transcript[:-1] + replace(pending, arguments={"path": "/"})
    with pytest.raises(ApprovalMismatchError) as caught:
        await agent.run(None, history=tampered, approvals=[request.approve()])
    assert deleted == []
    # nothing is lost: the error carries the history, still waiting for a decision
    assert caught.value.transcript == tampered


async def test_decision_for_another_call_is_refused() -> None:
    agent = Agent(ScriptedModel([_asks("a", "b")]), tools=[delete])
    paused = await agent.run("go")
    first, second = paused.pending_approvals
    forged = ApprovalDecision(second.tool_call_id, first.digest, True)
    with pytest.raises(ApprovalMismatchError):
        await agent.run(None, history=paused.transcript, approvals=[first.approve(), forged])
    assert deleted == []


async def test_new_prompt_while_pending_denies_the_pending_call() -> None:
    model = ScriptedModel([_asks("a"), "ok, I won't"])
    agent = Agent(model, tools=[delete])
    paused = await agent.run("go")
    result = await agent.run("actually, never mind", history=paused.transcript)
    assert deleted == []
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.DENIED
    assert result.text == "ok, I won't"
    kinds = [m.kind for m in result.transcript]
    assert kinds == ["user", "tool_call", "user", "assistant"]
    assert result.transcript[2] == UserMessage("actually, never mind")
    assert_valid(result.transcript)
    assert_valid(model.requests[1].messages)


async def test_denied_tools_are_not_advertised_and_calls_are_denied() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("l", "look", {"path": "x"})]), "ok"])
    agent = Agent(model, tools=[look, delete], denied_tools=["look"])
    result = await agent.run("go")
    assert [t.name for t in model.requests[0].tools] == ["delete"]
    (call,) = result.tool_calls
    assert call.status is ToolCallStatus.DENIED
    assert "not allowed" in call.content


async def test_allowed_tools_limit_what_is_offered() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("d", "delete", {"path": "x"})]), "ok"])
    agent = Agent(model, tools=[look, delete], allowed_tools=["look"], approve=lambda r: True)
    result = await agent.run("go")
    assert [t.name for t in model.requests[0].tools] == ["look"]
    assert result.tool_calls[0].status is ToolCallStatus.DENIED
    assert deleted == []


async def test_approver_that_raises_keeps_the_calls_in_the_transcript() -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("approval service down")

    model = ScriptedModel([_asks("a")])
    with pytest.raises(Exception, match="approval service down") as caught:
        await Agent(model, tools=[delete], approve=broken).run("go")
    transcript = caught.value.transcript  # type: ignore[attr-defined]
    assert deleted == []
    assert [m.kind for m in transcript] == ["user", "tool_call"]
    assert transcript[1].status is ToolCallStatus.CANCELLED
    assert transcript[1].message == "cleaning up"
    assert_valid(transcript)


async def test_a_string_given_to_denied_tools_is_one_tool_name_not_its_letters() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("d", "delete", {"path": "x"})]), "ok"])
    agent = Agent(model, tools=[look, delete], denied_tools="delete", approve=lambda r: True)
    result = await agent.run("go")
    assert [t.name for t in model.requests[0].tools] == ["look"]
    assert result.tool_calls[0].status is ToolCallStatus.DENIED
    assert deleted == []
    only_look = Agent(ScriptedModel(["ok"]), tools=[look, delete], allowed_tools="look")
    assert [t.name for t in only_look.tools] == ["look"]


@pytest.mark.parametrize(
    ("option", "names"),
    [("allowed_tools", ["ad"]), ("denied_tools", ["look", "delete_file"]), ("denied_tools", "lok")],
)
def test_a_tool_list_naming_no_tool_of_the_agent_is_a_configuration_error(option: str, names: object) -> None:
    from tooloop import ConfigurationError

    with pytest.raises(ConfigurationError, match=rf"{option} names '(ad|delete_file|lok)'.*its tools: delete, look"):
        Agent(ScriptedModel(["ok"]), tools=[look, delete], **{option: names})  # type: ignore[arg-type]
