"""The ``_tooloop/steer`` extension request: the official SDK client sends a message into a running turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from tests.acp_agent.support import (
    TIMEOUT,
    RecordingClient,
    hanging_text_reply,
    new_session,
    prompt,
    spawn,
    text_reply,
    tool_reply,
)
from tests.support.wire import WireServer


async def test_a_message_steered_while_the_model_answers_starts_one_more_turn(wire: WireServer) -> None:
    reply, gate = hanging_text_reply("Tides come from")
    wire.queue(reply, text_reply("In French: les marées"))
    client = RecordingClient()
    try:
        async with spawn(client, wire) as (conn, _):
            session = await new_session(conn)
            running = asyncio.ensure_future(prompt(conn, session, "Why are there tides?"))
            await asyncio.wait_for(asyncio.to_thread(gate.reached.wait, TIMEOUT), TIMEOUT)
            answer = await conn.ext_method("tooloop/steer", {"sessionId": session, "text": "answer in French"})
            assert answer == {"delivered": True}
            gate.open()
            assert await asyncio.wait_for(running, TIMEOUT) == "end_turn"
            # the model was asked again, with the steered message after its first answer
            sent = wire.requests[1].json["messages"]
            assert sent[-2] == {"role": "assistant", "content": "Tides come from"}
            assert sent[-1] == {"role": "user", "content": "answer in French"}
            assert client.text(session) == "Tides come fromIn French: les marées"
            # no turn runs now: nothing is delivered, the client sends a prompt instead
            idle = await conn.ext_method("tooloop/steer", {"sessionId": session, "text": "hello?"})
            assert idle == {"delivered": False}
            with pytest.raises(RequestError):
                await conn.ext_method("tooloop/steer", {"sessionId": session})
    finally:
        gate.open()


async def test_a_subagents_call_is_asked_about_through_the_editor_by_its_path(wire: WireServer, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    wire.queue(
        tool_reply(("p1", "delegate", '{"prompt": "delete /tmp/a"}')),
        tool_reply(("d1", "delete_file", '{"path": "/tmp/a"}')),
        text_reply("deleted it"),
        text_reply("done"),
    )
    client = RecordingClient(answers=["allow_once"])
    tools = ("--tool", "tests.acp_agent.agent_tools:delegate")
    async with spawn(client, wire, *tools, ACP_TEST_LOG=str(log)) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "clean up /tmp/a") == "end_turn"
        [asked] = client.permissions
        assert asked.tool_call.tool_call_id == "p1/d1"
        assert asked.tool_call.raw_input == {"path": "/tmp/a"}
        assert log.read_text() == "deleted /tmp/a\n"
        assert client.text(session).endswith("done")
        # the helper got the task; the lead got the helper's answer as the call's result
        assert wire.requests[1].json["messages"][-1] == {"role": "user", "content": "delete /tmp/a"}
        assert wire.requests[3].json["messages"][-1]["content"] == "deleted it"
