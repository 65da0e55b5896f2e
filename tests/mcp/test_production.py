"""MCP in production: HTTP sessions that end under us, tool lists that change, prompts and
resources, and servers asking the user for input. Against the SDK-built hostile server."""

from __future__ import annotations

import base64
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooloop import (
    Agent,
    ConfigurationError,
    EmbeddedResource,
    ModelResponse,
    ResourceLink,
    ToolCall,
    ToolCallStatus,
    ToolOutput,
    ToolSourceError,
)
from tooloop.mcp import Elicitation, ElicitationAnswer, MCPPrompt, MCPPromptArgument, MCPServer
from tooloop.testing import ScriptedModel

from .peers import PEER_PYTHON, free_port, need

HOSTILE_SERVER = Path(__file__).with_name("hostile_server.py")


def calls(*calls: tuple[str, dict[str, object]]) -> ModelResponse:
    return ModelResponse(tool_calls=tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)))


class HostileHttp:
    """The hostile server over streamable HTTP on a loopback port that survives restarts."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        command = [need(PEER_PYTHON), str(HOSTILE_SERVER), "http", str(self.port)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("the hostile server did not start listening")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def restart(self) -> None:
        """A redeploy: the new process knows none of the old sessions (404 to their ids)."""
        self.stop()
        self.start()


@pytest.fixture
def http() -> Iterator[HostileHttp]:
    server = HostileHttp()
    try:
        yield server
    finally:
        server.stop()


def session_of(content: str) -> str:
    return content.split()[1]


# ------------------------------------------------------------------ sessions that end


async def test_an_ended_http_session_is_renewed_once_for_parallel_calls_and_the_calls_retried(
    http: HostileHttp,
) -> None:
    server = MCPServer.http(http.url, name="hostile")
    model = ScriptedModel([calls(("whoami", {})), "first", calls(("whoami", {}), ("whoami", {})), "second"])
    agent = Agent(model, tools=[server])
    try:
        first = await agent.run("go")
        http.restart()  # our session id now answers 404
        second = await agent.run("again")
    finally:
        await server.aclose()
    (before,) = first.transcript.tool_invocations
    after = second.transcript.tool_invocations
    assert before.status is ToolCallStatus.OK
    assert [c.status for c in after] == [ToolCallStatus.OK, ToolCallStatus.OK]  # retried, not failed
    renewed = {session_of(c.content) for c in after}
    assert len(renewed) == 1 and session_of(before.content) not in renewed  # one new session for both
    offered = [sorted(t.name for t in request.tools) for request in model.requests]
    assert offered[2] == offered[0] and "whoami" in offered[2]  # no tool dropped on the way


async def test_an_ended_http_session_is_renewed_when_listing_tools(http: HostileHttp) -> None:
    server = MCPServer.http(http.url, name="hostile")
    try:
        before = [t.name for t in await server.list_tools()]
        http.restart()
        server._connection.tools_changed = True  # type: ignore[union-attr]  # as a list_changed would
        after = [t.name for t in await server.list_tools()]
    finally:
        await server.aclose()
    assert after == before


async def test_a_server_that_went_away_fails_loudly_and_drops_no_tool_silently(http: HostileHttp) -> None:
    server = MCPServer.http(http.url, name="hostile", start_timeout=10)
    model = ScriptedModel([calls(("whoami", {})), "ok"])
    try:
        await server.list_tools()
        http.stop()
        result = await Agent(model, tools=[server]).run("go")
    except ToolSourceError as exc:
        assert "MCP server 'hostile'" in str(exc)
    else:
        (call,) = result.transcript.tool_invocations
        assert call.status is ToolCallStatus.ERROR and "MCP server 'hostile'" in call.content
    finally:
        await server.aclose()
    assert all("whoami" in {t.name for t in request.tools} for request in model.requests)


# ------------------------------------------------------------------ tool lists that change


async def test_tools_list_changed_over_http_offers_the_new_tool_from_the_next_model_request(http: HostileHttp) -> None:
    server = MCPServer.http(http.url, name="hostile")
    model = ScriptedModel([calls(("grow", {})), calls(("grown", {})), "ok"])
    try:
        result = await Agent(model, tools=[server]).run("go")
    finally:
        await server.aclose()
    first, second = ({t.name for t in request.tools} for request in model.requests[:2])
    assert "grown" not in first and "grown" in second
    assert result.transcript.tool_invocations[1].content == "the grown tool ran"


# ------------------------------------------------------------------ prompts and resources


def hostile(**options: object) -> MCPServer:
    return MCPServer.stdio(need(PEER_PYTHON), [str(HOSTILE_SERVER)], name="hostile", **options)  # type: ignore[arg-type]


async def test_prompts_are_listed_and_filled() -> None:
    server = hostile()
    try:
        (review,) = await server.prompts()
        messages = await server.get_prompt("review", {"code": "print(1)"})
    finally:
        await server.aclose()
    assert review == MCPPrompt("review", "Ask for a code review", (MCPPromptArgument("code", None, True),), None)
    assert [m.role for m in messages] == ["user"]
    assert messages[0].text == "Please review this code:\nprint(1)"


async def test_resources_are_listed_as_links_and_read_as_content_parts() -> None:
    server = hostile()
    model = ScriptedModel([calls(("attach", {"uri": "notes://today"})), "ok"])

    async def attach(uri: str) -> ToolOutput:
        """Attach a note."""
        return ToolOutput(parts=await server.read_resource(uri))

    try:
        links = {link.uri: link for link in await server.resources()}
        (logo,) = await server.read_resource("notes://logo")
        result = await Agent(model, tools=[attach]).run("go")
    finally:
        await server.aclose()
    assert set(links) == {"notes://today", "notes://logo", "notes://secret"}
    assert isinstance(links["notes://today"], ResourceLink) and links["notes://today"].mime_type == "text/plain"
    assert (
        logo.mime_type == "image/png" and logo.blob is not None and base64.b64decode(logo.blob).startswith(b"\x89PNG")
    )
    (call,) = result.transcript.tool_invocations
    assert call.parts == (EmbeddedResource(uri="notes://today", mime_type="text/plain", text="buy milk"),)
    assert call.content == "[resource <notes://today>]\nbuy milk"


async def test_include_and_exclude_per_component() -> None:
    server = hostile(
        include={"tools": ["whoami", "a_b"]},
        exclude={"prompts": ["review"], "resources": ["notes://secret"]},
    )
    try:
        tools = sorted(t.name for t in await server.list_tools())
        prompts = await server.prompts()
        links = sorted(link.uri for link in await server.resources())
        with pytest.raises(ConfigurationError, match="not offered"):
            await server.read_resource("notes://secret")
        with pytest.raises(ConfigurationError, match="excluded"):
            await server.get_prompt("review", {"code": "x"})
    finally:
        await server.aclose()
    assert tools == ["a_b", "whoami"]
    assert prompts == ()
    assert links == ["notes://logo", "notes://today"]


async def test_a_typo_in_a_component_filter_is_an_error_naming_it() -> None:
    server = hostile(exclude={"resources": ["notes://secrte"]})
    try:
        with pytest.raises(ConfigurationError, match=r"exclude= of MCP server 'hostile' names 'notes://secrte'"):
            await server.resources()
    finally:
        await server.aclose()
    with pytest.raises(ConfigurationError, match="the components are tools, prompts, resources"):
        hostile(exclude={"tool": ["delete_all"]})


# ------------------------------------------------------------------ elicitation


async def test_an_elicitation_request_goes_to_the_handler_and_its_answer_to_the_server() -> None:
    asked: list[Elicitation] = []

    async def answer(question: Elicitation) -> ElicitationAnswer:
        asked.append(question)
        return ElicitationAnswer("accept", {"name": "Ada"})

    server = hostile(elicitation=answer)
    model = ScriptedModel([calls(("ask_name", {})), "ok"])
    try:
        result = await Agent(model, tools=[server]).run("go")
    finally:
        await server.aclose()
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.OK and call.content == "hello Ada"
    (question,) = asked
    assert question.server == "hostile" and question.message == "What is your name?"
    assert question.schema is not None and "name" in question.schema["properties"]


async def test_a_declined_elicitation_and_no_handler_at_all() -> None:
    declining = hostile(elicitation=lambda question: ElicitationAnswer("decline"))
    unable = hostile()
    model = ScriptedModel([calls(("ask_name", {})), "ok", calls(("ask_name", {})), "ok"])
    try:
        declined = await Agent(model, tools=[declining]).run("go")
        refused = await Agent(model, tools=[unable]).run("go")
    finally:
        await declining.aclose()
        await unable.aclose()
    assert declined.transcript.tool_invocations[0].content == "no name: decline"
    assert refused.transcript.tool_invocations[0].status is ToolCallStatus.ERROR  # the server was told: not supported


async def test_a_server_given_an_elicitation_handler_later_asks_it_and_the_original_still_cannot() -> None:
    unable = hostile()
    answering = unable.with_elicitation(lambda question: ElicitationAnswer("accept", {"name": "Ada"}))
    assert unable.elicitation is None and answering.elicitation is not None
    model = ScriptedModel([calls(("ask_name", {})), "ok", calls(("ask_name", {})), "ok"])
    try:
        answered = await Agent(model, tools=[answering]).run("go")
        refused = await Agent(model, tools=[unable]).run("go")
        assert answering.pid != unable.pid  # a process of its own
    finally:
        await answering.aclose()
        await unable.aclose()
    assert answered.transcript.tool_invocations[0].content == "hello Ada"
    assert refused.transcript.tool_invocations[0].status is ToolCallStatus.ERROR
