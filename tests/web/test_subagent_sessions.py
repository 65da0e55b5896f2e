"""A subagent's session is one more session of the store: ``tooloop web`` lists it and shows it."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.web.conftest import WebServer
from tooloop import Agent, ModelRequest, ModelResponse, ToolCall, ToolCallMessage, tool
from tooloop.testing import FunctionModel


@tool
def look_up(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: the moon"


def child_model(request: ModelRequest) -> ModelResponse | str:
    done = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    return (
        f"found {done[0].content}"
        if done
        else ModelResponse(tool_calls=(ToolCall("r1", "look_up", {"topic": "tides"}),))
    )


def parent_model(request: ModelRequest) -> ModelResponse | str:
    done = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    return done[0].content if done else ModelResponse(tool_calls=(ToolCall("c1", "research", {"prompt": "tides"}),))


def page(server: WebServer, path: str) -> str:
    request = urllib.request.Request(server.base + path, headers={"x-tooloop-token": server.token or ""})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        return str(response.read().decode())


async def test_the_web_viewer_shows_a_subagents_session(
    web: Callable[..., WebServer], sqlite_url: str, tmp_path: Path
) -> None:
    research = Agent(FunctionModel(child_model), tools=[look_up]).as_tool(name="research", description="Research.")
    result = await Agent(FunctionModel(parent_model), tools=[research], store=sqlite_url, session_id="lead").run("go")
    assert result.transcript.tool_invocations[0].result["session_id"] == "lead.c1"
    server = web(sqlite_url)
    child = page(server, "/s/lead.c1")
    assert "look_up" in child and "tides: the moon" in child
    assert "lead.c1" in page(server, "/")
    assert '<a href="/s/lead.c1">lead.c1</a>' in page(server, "/s/lead")  # the parent's call links to it
