"""session/load: a stored conversation is replayed as updates before the answer, then continues."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from tests.acp_agent.support import ROOT, RecordingClient, new_session, prompt, spawn, text_reply, tool_reply
from tests.support.wire import WireServer


async def test_load_replays_the_whole_history_before_answering(wire: WireServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    wire.queue(
        tool_reply(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "explode", '{"reason": "no"}'), text="Let me add."),
        text_reply("It is 3."),
        text_reply("Still 3."),
    )
    first = RecordingClient()
    async with spawn(first, wire, "--store", store) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "1 + 2?") == "end_turn"

    second = RecordingClient()
    async with spawn(second, wire, "--store", store) as (conn, _):
        answer = await conn.initialize(protocol_version=1)
        assert answer.agent_capabilities is not None and answer.agent_capabilities.load_session is True
        await conn.load_session(cwd=str(ROOT), session_id=session, mcp_servers=[])
        replayed = [
            (u.session_update, getattr(u, "tool_call_id", None), getattr(u, "status", None)) for u in second.of(session)
        ]
        assert replayed == [
            ("user_message_chunk", None, None),
            ("agent_message_chunk", None, None),
            ("tool_call", "c1", "completed"),
            ("tool_call", "c2", "failed"),
            ("agent_message_chunk", None, None),
        ]
        updates = second.of(session)
        assert updates[0].content.text == "1 + 2?"
        assert [updates[1].content.text, updates[4].content.text] == ["Let me add.", "It is 3."]
        assert updates[2].raw_input == {"a": 1, "b": 2} and updates[2].raw_output == 3
        assert "boom: no" in updates[3].content[0].content.text

        assert await prompt(conn, session, "And now?") == "end_turn"
        sent = [m["role"] for m in wire.requests[-1].json["messages"]]
        assert sent == ["user", "assistant", "tool", "tool", "assistant", "user"]

        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(ROOT), session_id="never-stored", mcp_servers=[])
        assert unknown.value.code == -32602
