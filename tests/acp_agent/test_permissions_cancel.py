"""Permissions through session/request_permission, and session/cancel at every stage of a turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

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


def _statuses(client: RecordingClient, session: str) -> list[tuple[str, str | None]]:
    return [(u.tool_call_id, u.status) for u in client.tool_updates(session)]


async def test_allow_once_runs_the_call_after_the_user_saw_it(wire: WireServer, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "/tmp/a"}')), text_reply("done"))
    client = RecordingClient(answers=["allow_once"])
    async with spawn(client, wire, ACP_TEST_LOG=str(log)) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "delete /tmp/a") == "end_turn"
        [asked] = client.permissions
        assert asked.tool_call.tool_call_id == "d1"
        assert asked.tool_call.kind == "delete"
        assert asked.tool_call.raw_input == {"path": "/tmp/a"}
        assert [(o.option_id, o.kind) for o in asked.options] == [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject_once", "reject_once"),
            ("reject_always", "reject_always"),
        ]
        assert _statuses(client, session) == [("d1", "pending"), ("d1", "in_progress"), ("d1", "completed")]
        assert log.read_text() == "deleted /tmp/a\n"


async def test_reject_is_reported_failed_the_tool_does_not_run_and_the_model_is_told(
    wire: WireServer, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "/etc"}')), text_reply("understood"))
    client = RecordingClient(answers=["reject_once"])
    async with spawn(client, wire, ACP_TEST_LOG=str(log)) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "delete /etc") == "end_turn"
        assert _statuses(client, session) == [("d1", "pending"), ("d1", "failed")]
        assert not log.exists()
        told = wire.requests[1].json["messages"][-1]
        assert told["role"] == "tool" and "rejected" in told["content"]


async def test_always_choices_are_remembered_for_the_session_only(wire: WireServer, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    wire.queue(
        tool_reply(("d1", "delete_file", '{"path": "a"}')),
        tool_reply(("d2", "delete_file", '{"path": "b"}')),
        text_reply("both done"),
        tool_reply(("d3", "delete_file", '{"path": "c"}')),
        text_reply("other session"),
    )
    client = RecordingClient(answers=["allow_always", "reject_always"])
    async with spawn(client, wire, ACP_TEST_LOG=str(log)) as (conn, _):
        first = await new_session(conn)
        assert await prompt(conn, first, "delete a and b") == "end_turn"
        assert len(client.permissions) == 1  # the second call was allowed by the remembered choice
        assert log.read_text() == "deleted a\ndeleted b\n"
        second = await new_session(conn)
        assert await prompt(conn, second, "delete c") == "end_turn"
        assert len(client.permissions) == 2  # a new session asks again
        assert _statuses(client, second) == [("d3", "pending"), ("d3", "failed")]


async def test_cancel_while_the_model_streams_answers_cancelled_and_the_session_goes_on(wire: WireServer) -> None:
    reply, gate = hanging_text_reply("Thinking about")
    wire.queue(reply, text_reply("fresh answer"))
    client = RecordingClient()
    try:
        async with spawn(client, wire) as (conn, _):
            session = await new_session(conn)
            running = asyncio.ensure_future(prompt(conn, session, "long question"))
            await asyncio.wait_for(asyncio.to_thread(gate.reached.wait, TIMEOUT), TIMEOUT)
            while client.text(session) != "Thinking about":
                await asyncio.sleep(0.01)
            await conn.cancel(session_id=session)
            assert await asyncio.wait_for(running, 10) == "cancelled"
            seen = len(client.of(session))
            assert await prompt(conn, session, "again") == "end_turn"
            assert client.text(session) == "Thinking aboutfresh answer"
            assert len(client.of(session)) > seen
    finally:
        gate.open()


async def test_cancel_while_a_tool_runs_marks_it_failed_and_answers_cancelled(wire: WireServer) -> None:
    wire.queue(tool_reply(("w1", "wait_forever", '{"label": "x"}')), text_reply("next turn"))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        running = asyncio.ensure_future(prompt(conn, session, "wait"))
        while ("w1", "in_progress") not in _statuses(client, session):
            await asyncio.sleep(0.01)
        await conn.cancel(session_id=session)
        assert await asyncio.wait_for(running, 10) == "cancelled"
        assert _statuses(client, session)[-1] == ("w1", "failed")
        count = len(client.of(session))
        await asyncio.sleep(0.5)
        assert len(client.of(session)) == count  # nothing after the answer
        assert await prompt(conn, session, "go on") == "end_turn"
        assert len(wire.requests) == 2


async def test_cancel_while_permission_is_pending(wire: WireServer, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "x"}')), text_reply("after"))
    client = RecordingClient(answers=[None], hold=asyncio.Event())
    async with spawn(client, wire, ACP_TEST_LOG=str(log)) as (conn, _):
        session = await new_session(conn)
        running = asyncio.ensure_future(prompt(conn, session, "delete x"))
        await asyncio.wait_for(client.asked.wait(), TIMEOUT)
        await conn.cancel(session_id=session)
        # the agent does not wait for the client to answer the permission request
        assert await asyncio.wait_for(running, 10) == "cancelled"
        assert client.hold is not None
        client.hold.set()  # the client now answers it cancelled, as the protocol asks; it is ignored
        assert _statuses(client, session) == [("d1", "pending"), ("d1", "failed")]
        assert not log.exists()
        assert await prompt(conn, session, "next") == "end_turn"


async def test_permission_answered_cancelled_ends_the_turn_cancelled(wire: WireServer, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "x"}')))
    client = RecordingClient(answers=[None])
    async with spawn(client, wire, ACP_TEST_LOG=str(log)) as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "delete x") == "cancelled"
        assert not log.exists()
        assert len(wire.requests) == 1


async def test_stop_reasons_max_tokens_refusal_and_max_turn_requests(wire: WireServer) -> None:
    wire.queue(
        text_reply("cut", finish="length"),
        text_reply("", finish="content_filter"),
        tool_reply(("a1", "add", '{"a": 1, "b": 1}')),
    )
    client = RecordingClient()
    async with spawn(client, wire, "--max-turns", "1") as (conn, _):
        session = await new_session(conn)
        assert await prompt(conn, session, "long") == "max_tokens"
        assert await prompt(conn, session, "bad") == "refusal"
        assert await prompt(conn, session, "loop") == "max_turn_requests"


async def test_two_sessions_prompting_at_once_keep_their_updates_apart(wire: WireServer) -> None:
    first_reply, gate = hanging_text_reply("from A")
    wire.queue(first_reply, text_reply("from B"))
    client = RecordingClient()
    try:
        async with spawn(client, wire) as (conn, _):
            a, b = await new_session(conn), await new_session(conn)
            assert a != b
            running_a = asyncio.ensure_future(prompt(conn, a, "A"))
            await asyncio.wait_for(asyncio.to_thread(gate.reached.wait, TIMEOUT), TIMEOUT)
            assert await prompt(conn, b, "B") == "end_turn"
            gate.open()
            assert await asyncio.wait_for(running_a, TIMEOUT) == "end_turn"
            assert client.text(a) == "from A"
            assert client.text(b) == "from B"
    finally:
        gate.open()


async def test_a_second_prompt_on_a_busy_session_is_refused(wire: WireServer) -> None:
    reply, gate = hanging_text_reply("busy")
    wire.queue(reply)
    client = RecordingClient()
    try:
        async with spawn(client, wire) as (conn, _):
            session = await new_session(conn)
            running = asyncio.ensure_future(prompt(conn, session, "first"))
            await asyncio.wait_for(asyncio.to_thread(gate.reached.wait, TIMEOUT), TIMEOUT)
            try:
                await prompt(conn, session, "second")
            except Exception as exc:
                assert getattr(exc, "code", None) == -32602
                assert "still answering" in str(getattr(exc, "data", ""))
            else:
                raise AssertionError("the second prompt was accepted")
            await conn.cancel(session_id=session)
            assert await asyncio.wait_for(running, 10) == "cancelled"
    finally:
        gate.open()
