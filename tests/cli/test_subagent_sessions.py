"""A subagent's session is one more session of the store: ``tooloop sessions`` lists, shows and exports it."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli
from tooloop import Agent, ModelRequest, ModelResponse, ToolCall, ToolCallMessage, UserMessage, tool
from tooloop.testing import FunctionModel


@tool
def look_up(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: the moon"


def child_model(request: ModelRequest) -> ModelResponse | str:
    done = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    if done:
        return f"found {done[0].content}"
    topic = next(m.text for m in request.messages if isinstance(m, UserMessage))
    return ModelResponse(tool_calls=(ToolCall("r1", "look_up", {"topic": topic}),))


def parent_model(request: ModelRequest) -> ModelResponse | str:
    done = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    return done[0].content if done else ModelResponse(tool_calls=(ToolCall("c1", "research", {"prompt": "tides"}),))


async def test_a_subagents_session_is_listed_shown_and_exported(bare_cli: Cli) -> None:
    research = Agent(FunctionModel(child_model), tools=[look_up]).as_tool(name="research", description="Research.")
    parent = Agent(FunctionModel(parent_model), tools=[research], store=bare_cli.env["TOOLOOP_STORE"])
    result = await parent.run("Why tides?", session_id="lead")
    assert result.transcript.final_text == "found tides: the moon"

    listed = bare_cli("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s["id"] for s in json.loads(listed.stdout)} == {"lead", "lead.c1"}

    # "lead" is a whole id and the start of its child's: the whole id wins
    parent_shown = bare_cli("sessions", "show", "lead")
    assert parent_shown.returncode == 0, parent_shown.stderr
    assert "tool research" in parent_shown.stdout and "(subagent session lead.c1)" in parent_shown.stdout

    shown = bare_cli("sessions", "show", "lead.c1")
    assert shown.returncode == 0, shown.stderr
    assert "look_up" in shown.stdout and "tides: the moon" in shown.stdout

    exported = bare_cli("sessions", "export", "lead.c1")
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert [m["kind"] for m in data["messages"]] == ["user", "tool_call", "assistant"]
    assert data["messages"][1]["content"] == "tides: the moon"
