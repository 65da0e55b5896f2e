"""MCP servers that misbehave: keys in their command lines, typos in filters, clashing names,
huge answers and huge stderr lines. Each against a real server built on the official SDK."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tooloop import (
    Agent,
    ConfigurationError,
    EmbeddedResource,
    ImageContent,
    Limits,
    ModelResponse,
    ToolCall,
    ToolCallStatus,
    ToolSourceError,
)
from tooloop.config import load_config
from tooloop.mcp import MCPServer
from tooloop.outcome import for_model, native_parts
from tooloop.testing import ScriptedModel

from .peers import FAULT_SERVER, PEER_PYTHON, HttpEverything, free_port, need

HOSTILE_SERVER = Path(__file__).with_name("hostile_server.py")
TOKEN = "ghp_SECRET0123456789abcdef"
WEB_KEY = "webkey-SECRET-42"


def calls(*calls: tuple[str, dict[str, object]]) -> ModelResponse:
    return ModelResponse(tool_calls=tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)))


def hostile(**options: object) -> MCPServer:
    return MCPServer.stdio(need(PEER_PYTHON), [str(HOSTILE_SERVER)], name="hostile", **options)  # type: ignore[arg-type]


@pytest.fixture
async def server() -> AsyncIterator[MCPServer]:
    started = hostile()
    yield started
    await started.aclose()


def config_file(tmp_path: Path, tables: str) -> Path:
    path = tmp_path / "tooloop.toml"
    path.write_text(tables)
    return path


# ------------------------------------------------------------------ secrets


async def test_a_token_in_a_servers_arguments_never_reaches_its_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    path = config_file(
        tmp_path,
        f"""
[mcp_servers.down]
command = "sh"
args = ["-c", "echo \\"cannot log in with $1\\" >&2; exit 3", "sh", "--token", "${{GH_TOKEN}}"]

[mcp_servers.crashing]
command = "{need(PEER_PYTHON)}"
args = ["{FAULT_SERVER}", "--token", "${{GH_TOKEN}}"]
""",
    )
    config = load_config(path)
    with pytest.raises(ToolSourceError) as caught:
        await config.mcp_server("down").start()
    message = str(caught.value)
    assert "MCP server 'down' (command: sh)" in message and "exit status 3" in message
    assert "cannot log in with" in message  # the stderr tail is still there...
    assert TOKEN not in message  # ...without the key it echoed

    crashing = config.mcp_server("crashing")
    model = ScriptedModel([calls(("crash", {})), "it crashed"])
    try:
        result = await Agent(model, tools=[crashing]).run("go")
    finally:
        await crashing.aclose()
    (call,) = result.transcript.tool_invocations
    assert call.error_type == "ToolSourceError" and "MCP server 'crashing'" in call.content
    assert TOKEN not in result.transcript.to_json()  # neither the model nor the stored session saw it
    assert TOKEN not in str(model.requests[1].messages)


async def test_a_key_in_a_servers_url_never_reaches_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_KEY", WEB_KEY)
    http = HttpEverything()
    closed = free_port()
    path = config_file(
        tmp_path,
        f"""
[mcp_servers.down]
url = "http://127.0.0.1:{closed}/mcp?key=${{WEB_KEY}}"

[mcp_servers.wrong_path]
url = "http://user:${{WEB_KEY}}@127.0.0.1:{http.port}/no-such-path/${{WEB_KEY}}?key=${{WEB_KEY}}"
""",
    )
    config = load_config(path)
    try:
        for name in ("down", "wrong_path"):
            with pytest.raises(ToolSourceError) as caught:
                await config.mcp_server(name, start_timeout=20).start()
            message = str(caught.value)
            assert f"MCP server {name!r} (url: http://127.0.0.1:" in message
            assert WEB_KEY not in message and "user" not in message
    finally:
        http.close()
    unnamed = MCPServer.http(f"http://127.0.0.1:{closed}/mcp?key={WEB_KEY}")
    assert unnamed.name == "127.0.0.1"  # a default name is the host alone


# ------------------------------------------------------------------ names and filters


async def test_a_typo_in_exclude_is_an_error_naming_it_and_nothing_runs() -> None:
    server = hostile(exclude=["delete_al"])
    model = ScriptedModel([calls(("delete_all", {})), "done"])
    try:
        with pytest.raises(ConfigurationError) as caught:
            await Agent(model, tools=[server]).run("clean up")
    finally:
        await server.aclose()
    message = str(caught.value)
    assert "exclude= of MCP server 'hostile'" in message and "'delete_al'" in message
    assert "delete_all" in message  # the names it could have meant
    assert model.requests == []  # the model was never offered the tool


async def test_a_typo_in_include_is_an_error_naming_it() -> None:
    server = hostile(include=["big_text", "ask_nmae"])
    try:
        with pytest.raises(ConfigurationError, match=r"include= of MCP server 'hostile' names 'ask_nmae'"):
            await server.list_tools()
    finally:
        await server.aclose()


async def test_a_valid_tool_name_is_kept_and_only_the_invalid_one_is_renamed(server: MCPServer) -> None:
    model = ScriptedModel([calls(("a_b", {})), "ok"])
    result = await Agent(model, tools=[server]).run("go")
    offered = [t.name for t in model.requests[0].tools]
    assert "a_b" in offered and len(set(offered)) == len(offered)
    dotted = next(t for t in model.requests[0].tools if t.description == "The dotted tool")
    assert dotted.name.startswith("a_b_") and dotted.name != "a_b"
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.OK and call.content == "the underscored tool ran"


# ------------------------------------------------------------------ bounds


async def test_an_embedded_text_resource_is_bounded_like_text(server: MCPServer) -> None:
    limit = 100_000
    model = ScriptedModel([calls(("image_and_resource", {"size": 3_000_000})), "ok"])
    result = await Agent(model, tools=[server], limits=Limits(max_tool_result_chars=limit)).run("go")
    told = model.requests[1].messages[-1]
    (call,) = result.transcript.tool_invocations
    assert told == call and call.status is ToolCallStatus.OK
    assert len(call.content) < limit + 100
    resource = next(p for p in call.parts if isinstance(p, EmbeddedResource))
    assert resource.text is not None and len(resource.text) < limit + 100
    assert "truncated" in resource.text
    assert any(isinstance(p, ImageContent) for p in call.parts)  # the image is kept whole
    native = native_parts(for_model(call), frozenset({"image/png"}))  # what an image-taking provider is sent
    assert native is not None
    assert sum(len(p.text) for p in native if not isinstance(p, ImageContent)) < limit + 200


async def test_a_large_answer_is_read_in_linear_time(server: MCPServer) -> None:
    size = 15_000_000  # twice in the message (text and structured content): 30 MB, 14 s when read quadratically
    model = ScriptedModel([calls(("big_text", {"size": size})), "ok"])
    await server.start()
    started = time.monotonic()
    result = await Agent(model, tools=[server], limits=Limits(max_tool_result_chars=1000)).run("go")
    elapsed = time.monotonic() - started
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.OK and call.content.startswith("xxxx")
    assert f"truncated {size - 1000} characters" in call.content
    assert elapsed < 10, f"reading a {2 * size}-byte answer took {elapsed:.1f} s"


async def test_an_answer_over_the_maximum_message_size_fails_its_call_and_the_server_goes_on() -> None:
    server = hostile(max_message_size=1_000_000)
    model = ScriptedModel([calls(("big_text", {"size": 2_000_000})), calls(("big_text", {"size": 1000})), "ok"])
    try:
        await server.start()
        pid = server.pid
        result = await Agent(model, tools=[server]).run("go")
        assert server.pid == pid  # not restarted
    finally:
        await server.aclose()
    too_big, small = result.transcript.tool_invocations
    assert too_big.status is ToolCallStatus.ERROR and too_big.error_type == "ToolError"
    assert "larger than the maximum message size of 1000000 bytes" in too_big.content
    assert small.status is ToolCallStatus.OK and small.content.endswith("END") and len(small.content) == 1000


async def test_a_huge_stderr_line_gives_only_its_tail() -> None:
    script = "import sys; sys.stderr.write('x' * 5_000_000 + ' the database is locked\\n'); sys.exit(1)"
    failing = MCPServer.stdio(need(PEER_PYTHON), ["-c", script], name="noisy")
    with pytest.raises(ToolSourceError) as caught:
        await failing.start()
    message = str(caught.value)
    assert message.endswith("the database is locked")
    assert len(message) < 2000
