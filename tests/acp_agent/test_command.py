"""``tooloop acp``: the CLI subcommand serves the same agent (driven by the Python SDK client)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import acp

from tests.acp_agent.support import (
    ROOT,
    TIMEOUT,
    TOOLS,
    RecordingClient,
    agent_env,
    new_session,
    prompt,
    text_reply,
    tool_reply,
)
from tests.support.wire import WireServer


async def test_tooloop_acp_serves_a_tool_turn(wire: WireServer) -> None:
    wire.queue(tool_reply(("c1", "add", '{"a": 20, "b": 22}')), text_reply("42"))
    command = [sys.executable, "-m", "tooloop", "acp", "--model", "openai:gpt-4.1-mini"]
    for path in TOOLS:
        command += ["--tool", path]
    client = RecordingClient()
    async with acp.spawn_agent_process(client, *command, env=agent_env(wire), cwd=ROOT) as (conn, _):
        answer = await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
        assert answer.agent_info is not None and answer.agent_info.name == "tooloop"
        session = await new_session(conn)
        assert await prompt(conn, session, "20 + 22?") == "end_turn"
        assert client.tool_updates(session)[-1].status == "completed"
        assert client.text(session) == "42"


def test_tooloop_help_lists_acp_and_its_options() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    listing = subprocess.run(
        [sys.executable, "-m", "tooloop", "--help"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert "acp" in listing.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "tooloop", "acp", "--help"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert helped.returncode == 0
    for option in ("--agent", "--model", "--tool", "--store", "--max-turns"):
        assert option in helped.stdout
