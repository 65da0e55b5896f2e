"""MCP tools in full agent runs against real servers: listing, results, errors, names, approvals."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator

import pytest

from tooloop import (
    Agent,
    ImageContent,
    ModelRequest,
    ModelResponse,
    ResourceLink,
    StopReason,
    TextContent,
    ToolCall,
    ToolCallStatus,
    Transcript,
)
from tooloop.mcp import MCPServer
from tooloop.testing import FunctionModel, ScriptedModel

from .peers import EVERYTHING, FAULT_SERVER, PEER_PYTHON, TIME_SERVER, HttpEverything, need


def calls(*calls: tuple[str, dict[str, object]]) -> ModelResponse:
    return ModelResponse(tool_calls=tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)))


@pytest.fixture
async def time_server() -> AsyncIterator[MCPServer]:
    server = MCPServer.stdio(need(TIME_SERVER), name="time")
    yield server
    await server.aclose()


@pytest.fixture
async def everything() -> AsyncIterator[MCPServer]:
    server = MCPServer.stdio("node", [need(EVERYTHING)], name="everything")
    yield server
    await server.aclose()


@pytest.fixture
async def faults() -> AsyncIterator[MCPServer]:
    server = MCPServer.stdio(need(PEER_PYTHON), [str(FAULT_SERVER)], name="faults")
    yield server
    await server.aclose()


async def test_tools_keep_their_names_descriptions_and_schemas(time_server: MCPServer) -> None:
    tools = {t.name: t for t in await time_server.list_tools()}
    assert sorted(tools) == ["convert_time", "get_current_time"]
    schema = tools["get_current_time"].parameters
    assert schema["type"] == "object" and "timezone" in schema["properties"]
    assert schema["required"] == ["timezone"]
    assert "time" in tools["get_current_time"].description.lower()


async def test_structured_content_reaches_the_transcript(time_server: MCPServer) -> None:
    model = ScriptedModel([calls(("get_current_time", {"timezone": "Europe/Paris"})), "It is late."])
    result = await Agent(model, tools=[time_server]).run("What time is it in Paris?")
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.OK
    assert call.result["timezone"] == "Europe/Paris"
    assert set(call.result) == {"timezone", "datetime", "day_of_week", "is_dst"}
    assert json.loads(call.content) == call.result  # the server's text twin of the structured content
    assert model.requests[1].messages[-1] == call  # the model was told
    assert result.transcript.final_text == "It is late."


async def test_an_image_result_is_a_content_part_with_a_text_placeholder(everything: MCPServer) -> None:
    model = ScriptedModel([calls(("get-tiny-image", {})), "A logo."])
    result = await Agent(model, tools=[everything]).run("show me")
    (call,) = result.transcript.tool_invocations
    images = [p for p in call.parts if isinstance(p, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(b"\x89PNG")
    size = len(base64.b64decode(images[0].data))
    assert f"[image: image/png, {size} bytes]" in call.content
    assert any(isinstance(p, TextContent) for p in call.parts)
    again = Transcript.from_json(result.transcript.to_json())
    assert again == result.transcript and again.tool_invocations[0].parts == call.parts


async def test_resource_links_and_structured_content_of_the_node_server(everything: MCPServer) -> None:
    model = ScriptedModel(
        [calls(("get-resource-links", {"count": 2}), ("get-structured-content", {"location": "New York"})), "ok"]
    )
    result = await Agent(model, tools=[everything]).run("go")
    links, weather = result.transcript.tool_invocations
    found = [p for p in links.parts if isinstance(p, ResourceLink)]
    assert len(found) == 2 and all(p.uri.startswith("demo://resource/") for p in found)
    assert f"<{found[0].uri}>" in links.content
    assert set(weather.result) == {"temperature", "conditions", "humidity"}


async def test_a_failed_call_reaches_the_model_in_both_shapes(time_server: MCPServer, faults: MCPServer) -> None:
    model = ScriptedModel([calls(("get_current_time", {"timezone": "Mars/Olympus"}), ("fail_protocol", {})), "sorry"])
    result = await Agent(model, tools=[time_server, faults]).run("go")
    is_error, json_rpc = result.transcript.tool_invocations
    assert is_error.status is ToolCallStatus.ERROR and "Mars/Olympus" in is_error.content  # isError result
    assert json_rpc.status is ToolCallStatus.ERROR
    assert json_rpc.content == "ToolError: the database is unavailable (MCP error -32603)"  # JSON-RPC error
    assert result.stop_reason is StopReason.END_TURN
    assert list(model.requests[1].messages[-2:]) == [is_error, json_rpc]


async def test_structured_content_breaking_the_output_schema_is_a_tool_error(faults: MCPServer) -> None:
    model = ScriptedModel([calls(("bad_output", {})), "ok"])
    result = await Agent(model, tools=[faults]).run("go")
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.ERROR
    assert "'many' is not of type 'integer'" in call.content


async def test_prefix_include_and_exclude_shape_what_the_model_sees() -> None:
    time_server = MCPServer.stdio(need(TIME_SERVER), prefix="clock.", exclude=["convert_time"])
    everything = MCPServer.stdio("node", [need(EVERYTHING)], include=["echo", "get-sum"], prefix="ev_")
    model = ScriptedModel(
        [calls(("clock_get_current_time", {"timezone": "UTC"}), ("ev_get-sum", {"a": 2, "b": 3})), "ok"]
    )
    try:
        result = await Agent(model, tools=[time_server, everything]).run("go")
    finally:
        await time_server.aclose()
        await everything.aclose()
    offered = sorted(t.name for t in model.requests[0].tools)
    assert offered == ["clock_get_current_time", "ev_echo", "ev_get-sum"]  # '.' is not allowed by OpenAI
    clock, total = result.transcript.tool_invocations
    assert clock.status is ToolCallStatus.OK and clock.result["timezone"] == "UTC"
    assert total.status is ToolCallStatus.OK and "5" in total.content


async def test_a_plain_function_and_servers_side_by_side(time_server: MCPServer) -> None:
    def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedModel([calls(("add", {"a": 1, "b": 2}), ("get_current_time", {"timezone": "UTC"})), "ok"])
    result = await Agent(model, tools=[add, time_server]).run("go")
    assert [c.status for c in result.transcript.tool_invocations] == [ToolCallStatus.OK, ToolCallStatus.OK]
    assert result.transcript.tool_invocations[0].content == "3"


async def test_approval_policies() -> None:
    always = MCPServer.stdio("node", [need(EVERYTHING)], approve="always", name="always")
    untrusted = MCPServer.stdio("node", [need(EVERYTHING)], approve="destructive", name="untrusted")
    trusted = MCPServer.stdio("node", [need(EVERYTHING)], approve="destructive", trust_annotations=True, name="trusted")
    try:
        needs = {}
        for server in (always, untrusted, trusted):
            needs[server.name] = {t.name: t.requires_approval for t in await server.list_tools()}
        assert set(needs["always"].values()) == {True}
        # the server says echo is read-only; untrusted, that relaxes nothing
        assert set(needs["untrusted"].values()) == {True}
        assert needs["trusted"]["echo"] is False  # readOnlyHint, believed
        assert needs["trusted"]["toggle-simulated-logging"] is False  # destructiveHint false, believed
        model = ScriptedModel([calls(("echo", {"message": "hi"}))])
        result = await Agent(model, tools=[untrusted]).run("go")
        assert result.stop_reason is StopReason.APPROVAL_REQUIRED
        assert [r.tool_name for r in result.pending_approvals] == ["echo"]
    finally:
        for server in (always, untrusted, trusted):
            await server.aclose()


async def test_tools_list_changed_refreshes_the_tools_between_turns(faults: MCPServer) -> None:
    model = ScriptedModel([calls(("grow", {})), calls(("grown", {})), "ok"])
    result = await Agent(model, tools=[faults]).run("go")
    first, second = (sorted(t.name for t in r.tools) for r in model.requests[:2])
    assert "grown" not in first and "grown" in second  # both pages of the list were read
    assert result.transcript.tool_invocations[1].content.startswith("grown from pid")


async def test_streamable_http_server() -> None:
    http = HttpEverything()
    server = MCPServer.http(http.url, name="everything-http")
    try:
        model = ScriptedModel([calls(("echo", {"message": "over http"}), ("get-tiny-image", {})), "ok"])
        result = await Agent(model, tools=[server]).run("go")
        echo, image = result.transcript.tool_invocations
        assert echo.content == "Echo: over http"
        assert any(isinstance(p, ImageContent) for p in image.parts)
    finally:
        await server.aclose()
        http.close()


async def test_env_reaches_the_server_and_the_parent_environment_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOOP_TEST_PARENT_SECRET", "do-not-leak")
    server = MCPServer.stdio("node", [need(EVERYTHING)], env={"GREETING": "hello"})
    try:
        model = ScriptedModel([calls(("get-env", {})), "ok"])
        result = await Agent(model, tools=[server]).run("go")
    finally:
        await server.aclose()
    content = result.transcript.tool_invocations[0].content
    assert '"GREETING": "hello"' in content or '"GREETING":"hello"' in content
    assert "do-not-leak" not in content


async def test_sampling_requests_are_answered_by_the_given_model() -> None:
    asked: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        asked.append(request)
        return "sampled answer"

    server = MCPServer.stdio("node", [need(EVERYTHING)], sampling=FunctionModel(answer))
    try:
        model = ScriptedModel([calls(("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 20})), "ok"])
        result = await Agent(model, tools=[server]).run("go")
    finally:
        await server.aclose()
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.OK and "sampled answer" in call.content
    assert "Say hi" in asked[0].messages[-1].text  # type: ignore[union-attr]
    assert asked[0].settings.max_tokens == 20
