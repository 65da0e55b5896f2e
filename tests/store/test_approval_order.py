"""A batch with a call waiting for approval keeps the model's order through the store."""

from __future__ import annotations

from tooloop import Agent, ModelRequest, ModelResponse, StopReason, ToolCall, ToolCallMessage, ToolCallStatus, tool
from tooloop.store import open_store
from tooloop.testing import FunctionModel


@tool
def first() -> str:
    """The first step."""
    return "one"


@tool(requires_approval=True)
def second() -> str:
    """The step that needs approval."""
    return "two"


@tool
def third() -> str:
    """The third step."""
    return "three"


async def test_a_deferred_approval_resumed_from_a_store_keeps_the_models_order(store_url: str) -> None:
    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        if len(requests) == 1:
            return ModelResponse(
                tool_calls=[ToolCall("a", "first", {}), ToolCall("b", "second", {}), ToolCall("c", "third", {})]
            )
        return ModelResponse("all three done")

    tools = [first, second, third]
    paused = await Agent(FunctionModel(model), tools=tools, store=store_url).run("go", session_id="s")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [(c.tool_call_id, c.status) for c in stored.tool_invocations] == [
        ("a", ToolCallStatus.OK),
        ("b", ToolCallStatus.PENDING),
        ("c", ToolCallStatus.OK),
    ]

    # a new agent, as in another process, resumes from the store with the decision
    decision = paused.pending_approvals[0].approve()
    resumed = await Agent(FunctionModel(model), tools=tools, store=store_url).resume("s", approvals=[decision])

    assert resumed.text == "all three done"
    assert [c.tool_call_id for c in resumed.transcript.tool_invocations] == ["a", "b", "c"]
    sent = [m.tool_call_id for m in requests[-1].messages if isinstance(m, ToolCallMessage)]
    assert sent == ["a", "b", "c"]
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [(c.tool_call_id, c.content) for c in stored.tool_invocations] == [
        ("a", "one"),
        ("b", "two"),
        ("c", "three"),
    ]
    assert stored == resumed.transcript
