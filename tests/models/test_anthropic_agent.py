"""End to end: ``tooloop.Agent`` on the Anthropic adapter against a scripted Messages API server."""

from __future__ import annotations

import json
from typing import Any

from tests.models import anthropic_wire as aw
from tests.support.wire import Recorded, Reply, WireServer
from tooloop import Agent, StopReason, ToolCallMessage
from tooloop.models.anthropic import create


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_agent_runs_a_tool_and_continues_over_two_turns(wire: WireServer) -> None:
    seen_results: list[Any] = []

    def answer_after_checking(request: Recorded) -> Reply:
        last = aw.uncached(request.json)["messages"][-1]
        seen_results.append(last)
        result = last["content"][0]
        if (
            result.get("type") != "tool_result"
            or result.get("tool_use_id") != "toolu_add"
            or result.get("content") != "5"
        ):
            return aw.error_reply(400, "invalid_request_error", f"unexpected tool result: {last}")
        return aw.streamed([{"type": "text", "text": "2 + 3 = 5."}], "end_turn", aw.usage(40, 6))

    call = {"type": "tool_use", "id": "toolu_add", "name": "add", "input": {"a": 2, "b": 3}}
    wire.queue(
        aw.streamed([{"type": "text", "text": "Adding."}, call], "tool_use", aw.usage(30, 12)),
        answer_after_checking,
        aw.streamed([{"type": "text", "text": "You're welcome."}], "end_turn", aw.usage(60, 3)),
    )
    model = create(aw.MODEL, provider="anthropic", base_url=wire.url, api_key="sk-test", settings=None)
    try:
        agent = Agent(model, system="You add numbers.", tools=[add])
        first = await agent.run("What is 2 + 3?")
        second = await agent.run("Thanks!", history=first.transcript)
    finally:
        await model.aclose()

    assert first.stop_reason is StopReason.END_TURN and first.text == "2 + 3 = 5."
    assert seen_results[0] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_add", "is_error": False, "content": "5"}],
    }
    calls = [m for m in first.transcript if isinstance(m, ToolCallMessage)]
    assert [(c.tool_name, dict(c.arguments), c.content) for c in calls] == [("add", {"a": 2, "b": 3}, "5")]
    assert first.usage.input_tokens == 70 and first.usage.output_tokens == 18
    assert second.text == "You're welcome."

    third = aw.uncached(wire.requests[2].json)
    assert third["system"] == "You add numbers."
    assert [m["role"] for m in third["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert third["messages"][1]["content"] == [{"type": "text", "text": "Adding."}, call]
    assert third["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}
    assert [t["name"] for t in third["tools"]] == ["add"]
    assert json.loads(json.dumps(third["tools"][0]["input_schema"]))["properties"].keys() == {"a", "b"}
