"""MCP servers passed by the client in session/new: real server-everything (npm), run by the agent."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from acp import RequestError, schema

from tests.acp_agent.support import (
    ROOT,
    TIMEOUT,
    RecordingClient,
    prompt,
    spawn,
    text_reply,
    tool_reply,
)
from tests.support.wire import WireServer

PEERS = Path(os.environ.get("TOOLOOP_PEERS", ROOT / ".peers"))
EVERYTHING = PEERS / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _everything(**env: str) -> schema.McpServerStdio:
    if not EVERYTHING.exists():
        pytest.fail(f"{EVERYTHING} is missing: run 'bash scripts/test_peers.sh'")
    node = shutil.which("node")
    assert node is not None
    return schema.McpServerStdio(
        name="every",
        command=node,
        args=[str(EVERYTHING)],
        env=[schema.EnvVariable(name=k, value=v) for k, v in env.items()],
    )


async def _session(conn: object, *servers: schema.McpServerStdio) -> str:
    response = await asyncio.wait_for(conn.new_session(cwd=str(ROOT), mcp_servers=list(servers)), TIMEOUT)  # type: ignore[attr-defined]
    session_id: str = response.session_id
    return session_id


async def test_client_servers_are_tools_of_their_session(wire: WireServer) -> None:
    wire.queue(
        tool_reply(("e1", "every__echo", '{"message": "hi"}'), ("e2", "every__get-env", "{}")),
        tool_reply(("e3", "every__echo", '{"message": "again"}')),
        text_reply("done"),
    )
    client = RecordingClient(answers=["allow_always", "allow_once"])
    async with spawn(client, wire) as (conn, _):
        session = await _session(conn, _everything(GREETING="from the client"))
        assert await prompt(conn, session, "echo hi") == "end_turn"
        offered = {t["function"]["name"] for t in wire.requests[0].json["tools"]}
        assert {"every__echo", "every__get-env", "add"} <= offered
        # an untrusted server's tools ask first; "always" covers that tool for the session
        assert [p.tool_call.tool_call_id for p in client.permissions] == ["e1", "e2"]
        done = {u.tool_call_id: u for u in client.tool_updates(session) if u.status in ("completed", "failed")}
        assert done["e1"].status == "completed"
        assert done["e1"].content[0].content.text == "Echo: hi"
        assert done["e3"].content[0].content.text == "Echo: again"
        assert done["e2"].status == "completed"
        assert "from the client" in done["e2"].content[0].content.text


async def test_a_server_that_cannot_start_is_a_clear_error(wire: WireServer) -> None:
    broken = schema.McpServerStdio(name="broken", command="/nonexistent/server", args=[], env=[])
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        with pytest.raises(RequestError) as error:
            await _session(conn, broken)
        assert error.value.code == -32602
        assert "broken" in json.dumps(error.value.data)


async def test_cancel_while_an_mcp_tool_runs(wire: WireServer) -> None:
    wire.queue(
        tool_reply(("l1", "every__trigger-long-running-operation", '{"duration": 30, "steps": 30}')),
        text_reply("after the cancel"),
    )
    client = RecordingClient(answers=["allow_once"])
    async with spawn(client, wire) as (conn, _):
        session = await _session(conn, _everything())
        running = asyncio.ensure_future(prompt(conn, session, "run long"))
        while not any(u.status == "in_progress" for u in client.tool_updates(session)):
            await asyncio.sleep(0.05)
        started = asyncio.get_running_loop().time()
        await conn.cancel(session_id=session)
        assert await asyncio.wait_for(running, 10) == "cancelled"
        assert asyncio.get_running_loop().time() - started < 10
        assert client.tool_updates(session)[-1].status == "failed"
        assert await prompt(conn, session, "next") == "end_turn"


async def test_streamable_http_servers_are_advertised_and_used(wire: WireServer) -> None:
    from tests.mcp.peers import HttpEverything

    server = HttpEverything()
    try:
        wire.queue(tool_reply(("h1", "web__echo", '{"message": "over http"}')), text_reply("done"))
        client = RecordingClient(answers=["allow_once"])
        async with spawn(client, wire) as (conn, _):
            answer = await conn.initialize(protocol_version=1)
            assert answer.agent_capabilities is not None and answer.agent_capabilities.mcp_capabilities is not None
            assert answer.agent_capabilities.mcp_capabilities.http is True
            spec = schema.HttpMcpServer(type="http", name="web", url=server.url, headers=[])
            response = await asyncio.wait_for(conn.new_session(cwd=str(ROOT), mcp_servers=[spec]), TIMEOUT)
            session = response.session_id
            assert await prompt(conn, session, "echo over http") == "end_turn"
            done = client.tool_updates(session)[-1]
            assert (done.tool_call_id, done.status) == ("h1", "completed")
            assert done.content[0].content.text == "Echo: over http"
    finally:
        server.close()
