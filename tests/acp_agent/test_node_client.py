"""The agent driven by the official TypeScript SDK's client under node: a tool turn and a cancel."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.acp_agent.support import ROOT, TIMEOUT, agent_command, agent_env, hanging_text_reply, text_reply, tool_reply
from tests.support.wire import WireServer

PEERS = Path(os.environ.get("TOOLOOP_PEERS", ROOT / ".peers")) / "npm"
CLIENT = Path(__file__).with_name("node_client.mjs")


async def test_typescript_client_runs_a_tool_turn_and_cancels_a_turn(wire: WireServer, tmp_path: Path) -> None:
    assert (PEERS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(), "run scripts/test_peers.sh"
    hanging, gate = hanging_text_reply("Once upon")
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "notes.txt"}')), text_reply("Deleted."), hanging)
    env = agent_env(wire, ACP_TEST_LOG=str(tmp_path / "log.txt"), ACP_PEERS_DIR=str(PEERS), ACP_CWD=str(ROOT))
    try:
        node = await asyncio.create_subprocess_exec(
            "node",
            str(CLIENT),
            json.dumps(agent_command()),
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        out, _ = await asyncio.wait_for(node.communicate(), TIMEOUT * 2)
    finally:
        gate.open()
    assert node.returncode == 0
    summary = json.loads(out)
    assert summary["protocolVersion"] == 1 and summary["agentName"] == "tooloop"
    tool_turn = summary["toolTurn"]
    assert tool_turn["stopReason"] == "end_turn"  # with the turn's usage, which the TypeScript SDK accepts
    assert tool_turn["usage"]["totalTokens"] == tool_turn["usage"]["inputTokens"] + tool_turn["usage"]["outputTokens"]
    assert summary["cancelTurn"]["stopReason"] == "cancelled"
    assert summary["sessionIds"] == [summary["sessionId"]]
    calls = [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in summary["toolUpdates"]]
    assert [c for c in calls if c[0].startswith("tool_call")] == [
        ("tool_call", "d1", "pending"),
        ("tool_call_update", "d1", "in_progress"),
        ("tool_call_update", "d1", "completed"),
    ]
    [permission] = summary["permissions"]
    assert permission["toolCall"]["toolCallId"] == "d1"
    assert (tmp_path / "log.txt").read_text() == "deleted notes.txt\n"
    texts = [u["content"]["text"] for u in summary["cancelUpdates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["Once upon"]
    assert summary["updatesAfterAnswer"] == 0
