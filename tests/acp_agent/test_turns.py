"""The ACP agent driven by the official Python SDK client over pipes: handshake, turns, tools."""

from __future__ import annotations

from tests.acp_agent.support import RecordingClient, new_session, prompt, spawn, text_reply, tool_reply
from tests.support.wire import WireServer


async def test_handshake_advertises_only_what_works(wire: WireServer) -> None:
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        answer = await conn.initialize(protocol_version=99)
        assert answer.protocol_version == 1
        assert answer.agent_info is not None and answer.agent_info.name == "tooloop"
        assert answer.auth_methods == []
        capabilities = answer.agent_capabilities
        assert capabilities is not None
        assert capabilities.load_session is False  # no store configured
        assert capabilities.prompt_capabilities is not None
        assert capabilities.prompt_capabilities.image is True  # the model (gpt-4.1-mini) takes images
        assert capabilities.prompt_capabilities.embedded_context is True


async def test_plain_turn_streams_text_then_answers_end_turn(wire: WireServer) -> None:
    wire.queue(text_reply("Hello", ", ", "world"))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "Say hello") == "end_turn"
        assert client.text(session) == "Hello, world"
        kinds = client.kinds(session)
        assert kinds[-1] == "usage_update" and set(kinds[:-1]) == {"agent_message_chunk"}
        usage = client.of(session)[-1]
        assert (usage.used, usage.size) == (128, 1_047_576)  # gpt-4.1's context window
        sent = wire.requests[0].json
        assert sent["messages"][-1] == {"role": "user", "content": "Say hello"}


async def test_tool_loop_reports_each_call_from_pending_to_completed(wire: WireServer) -> None:
    wire.queue(tool_reply(("call_1", "add", '{"a": 2, "b": 40}'), text="Adding."), text_reply("It is 42."))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "What is 2 + 40?") == "end_turn"
        calls = client.tool_updates(session)
        assert [(u.session_update, u.status) for u in calls] == [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed"),
        ]
        assert {u.tool_call_id for u in calls} == {"call_1"}
        start, _, done = calls
        assert start.title == "Add numbers(a=2, b=40)"
        assert start.kind == "think"
        assert start.raw_input == {"a": 2, "b": 40}
        assert done.raw_output == 42
        assert [c.content.text for c in done.content] == ["42"]
        assert client.text(session) == "Adding.It is 42."
        # the result went back to the model
        tool_message = wire.requests[1].json["messages"][-1]
        assert tool_message == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


async def test_a_failing_tool_is_reported_failed_and_the_model_is_told(wire: WireServer) -> None:
    wire.queue(tool_reply(("call_x", "explode", '{"reason": "disk on fire"}')), text_reply("Sorry, it failed."))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "Try it") == "end_turn"
        last = client.tool_updates(session)[-1]
        assert (last.tool_call_id, last.status) == ("call_x", "failed")
        assert "boom: disk on fire" in last.content[0].content.text
        assert last.raw_output["status"] == "error"
        told = wire.requests[1].json["messages"][-1]
        assert told["role"] == "tool" and "boom: disk on fire" in told["content"]


async def test_unknown_tool_and_bad_arguments_end_failed(wire: WireServer) -> None:
    wire.queue(
        tool_reply(("c1", "no_such_tool", "{}"), ("c2", "add", '{"a": "x"}')),
        text_reply("ok"),
    )
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "go") == "end_turn"
        calls = client.tool_updates(session)
        by_id: dict[str, list[str]] = {}
        for update in calls:
            by_id.setdefault(update.tool_call_id, []).append(update.status)
        assert by_id == {"c1": ["pending", "failed"], "c2": ["pending", "failed"]}


async def test_history_carries_over_between_prompts(wire: WireServer) -> None:
    wire.queue(text_reply("first answer"), text_reply("second answer"))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        await prompt(conn, session, "one")
        await prompt(conn, session, "two")
        roles = [(m["role"], m.get("content")) for m in wire.requests[1].json["messages"]]
        assert roles == [("user", "one"), ("assistant", "first answer"), ("user", "two")]
