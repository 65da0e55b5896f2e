"""Usage and cost reported to the editor, the session methods (new, list, load, resume, close)
across restarts, and standard input and output that are files or close early."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import RequestError, schema

from tests.acp_agent.support import (
    ROOT,
    TIMEOUT,
    RecordingClient,
    agent_command,
    agent_env,
    new_session,
    spawn,
    text_reply,
    tool_reply,
)
from tests.support.wire import WireServer
from tooloop import AssistantMessage, ToolCallStatus, UserMessage
from tooloop.store import open_store


def _text(text: str) -> list[schema.TextContentBlock]:
    return [schema.TextContentBlock(type="text", text=text)]


async def test_a_turn_reports_its_usage_and_the_sessions_cumulative_cost(wire: WireServer) -> None:
    wire.queue(text_reply("one"), text_reply("two"))
    client = RecordingClient()
    async with spawn(client, wire) as (conn, _):
        session = await new_session(conn)
        first = await asyncio.wait_for(conn.prompt(session_id=session, prompt=_text("first")), TIMEOUT)
        second = await asyncio.wait_for(conn.prompt(session_id=session, prompt=_text("second")), TIMEOUT)
    for answer in (first, second):
        assert answer.usage is not None
        assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.total_tokens) == (120, 8, 128)
    costs = [u.cost for u in client.of(session) if u.session_update == "usage_update"]
    assert len(costs) == 2 and all(c is not None and c.currency == "USD" for c in costs)
    assert 0 < costs[0].amount < costs[1].amount  # type: ignore[union-attr]
    assert costs[1].amount == pytest.approx(2 * costs[0].amount)  # type: ignore[union-attr]


async def test_usage_is_reported_for_a_model_whose_context_window_is_unknown(wire: WireServer) -> None:
    wire.queue(text_reply("hi"))
    client = RecordingClient()
    command = [sys.executable, "-m", "tooloop.acp", "--model", "openai:a-model-nobody-knows"]
    async with acp.spawn_agent_process(client, *command, env=agent_env(wire), cwd=ROOT) as (conn, _):
        await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
        session = await new_session(conn)
        answer = await asyncio.wait_for(conn.prompt(session_id=session, prompt=_text("hello")), TIMEOUT)
    assert answer.usage is not None and answer.usage.total_tokens == 128
    (update,) = [u for u in client.of(session) if u.session_update == "usage_update"]
    assert (update.used, update.size) == (128, 32_768)  # the window the context policy assumes


async def test_a_new_session_without_a_prompt_is_listed_and_loaded_after_a_restart(
    wire: WireServer, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    wire.queue(text_reply("still here"))
    async with spawn(RecordingClient(), wire, "--store", store) as (conn, _):
        empty = await new_session(conn)

    client = RecordingClient()
    async with spawn(client, wire, "--store", store) as (conn, _):
        answer = await conn.initialize(protocol_version=1)
        capabilities = answer.agent_capabilities
        assert capabilities is not None and capabilities.session_capabilities is not None
        sessions = capabilities.session_capabilities
        assert sessions.list is not None and sessions.resume is not None and sessions.close is not None
        listed = await conn.list_sessions()
        assert [(s.session_id, s.cwd) for s in listed.sessions] == [(empty, str(ROOT))]
        assert (await conn.list_sessions(cwd=str(ROOT / "elsewhere"))).sessions == []
        await conn.load_session(cwd=str(ROOT), session_id=empty, mcp_servers=[])
        assert client.of(empty) == []  # nothing to replay
        answered = await asyncio.wait_for(conn.prompt(session_id=empty, prompt=_text("anyone?")), TIMEOUT)
        assert answered.stop_reason == "end_turn"
    async with open_store(store) as opened:
        stored = await opened.load(empty)
    assert [(m.kind, m.text) for m in stored] == [("user", "anyone?"), ("assistant", "still here")]  # type: ignore[union-attr]


async def test_a_session_can_be_resumed_without_replay_and_closed(wire: WireServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    wire.queue(text_reply("first answer"), text_reply("second answer"))
    async with spawn(RecordingClient(), wire, "--store", store) as (conn, _):
        session = await new_session(conn)
        await asyncio.wait_for(conn.prompt(session_id=session, prompt=_text("first")), TIMEOUT)

    client = RecordingClient()
    async with spawn(client, wire, "--store", store) as (conn, _):
        await conn.resume_session(cwd=str(ROOT), session_id=session, mcp_servers=[])
        assert client.of(session) == []  # resume does not replay: the client still shows the conversation
        await asyncio.wait_for(conn.prompt(session_id=session, prompt=_text("second")), TIMEOUT)
        assert [m["content"] for m in wire.requests[-1].json["messages"]] == ["first", "first answer", "second"]
        usage = [u for u in client.of(session) if u.session_update == "usage_update"]
        assert usage[-1].cost is not None and usage[-1].cost.amount > 0
        await conn.close_session(session_id=session)
        with pytest.raises(RequestError) as closed:
            await conn.prompt(session_id=session, prompt=_text("third"))
        assert closed.value.code == -32602
        with pytest.raises(RequestError) as unknown:
            await conn.resume_session(cwd=str(ROOT), session_id="never-stored", mcp_servers=[])
        assert unknown.value.code == -32602
    assert len(wire.requests) == 2


async def test_without_a_store_list_and_resume_are_not_offered(wire: WireServer) -> None:
    async with spawn(RecordingClient(), wire) as (conn, _):
        answer = await conn.initialize(protocol_version=1)
        sessions = answer.agent_capabilities.session_capabilities  # type: ignore[union-attr]
        assert sessions is not None and sessions.list is None and sessions.resume is None
        assert sessions.close is not None
        with pytest.raises(RequestError) as refused:
            await conn.list_sessions()
        assert refused.value.code == -32601


def _lines(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


def test_stdin_and_stdout_may_be_regular_files(wire: WireServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def stored_session() -> None:
        async with open_store(store) as opened:
            await opened.append("known", [UserMessage("hello"), AssistantMessage("hi")])

    asyncio.run(stored_session())
    wire.queue(text_reply("from a file"))
    given = tmp_path / "in.jsonl"
    given.write_text(
        _lines(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ROOT), "mcpServers": []}},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/load",
                "params": {"sessionId": "known", "cwd": str(ROOT), "mcpServers": []},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "session/prompt",
                "params": {"sessionId": "known", "prompt": [{"type": "text", "text": "and now?"}]},
            },
        )
    )
    out = tmp_path / "out.jsonl"
    with given.open("rb") as stdin, out.open("wb") as stdout:
        finished = subprocess.run(
            agent_command("--store", store),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=agent_env(wire),
            cwd=ROOT,
            timeout=TIMEOUT,
        )
    assert finished.returncode == 0, finished.stderr.decode()
    assert b"Traceback" not in finished.stderr
    answers = {m["id"]: m for m in map(json.loads, out.read_text().splitlines()) if "id" in m}
    assert sorted(answers) == [1, 2, 3, 4]
    assert all("result" in a for a in answers.values()), answers
    assert answers[4]["result"]["stopReason"] == "end_turn"
    assert [m["content"] for m in wire.requests[0].json["messages"]] == ["hello", "hi", "and now?"]


async def test_a_prompt_sent_just_before_stdin_closes_is_answered_and_stored(wire: WireServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    wire.queue(tool_reply(("c1", "add", '{"a": 2, "b": 3}')), text_reply("It is 5."))
    process = await asyncio.create_subprocess_exec(
        *agent_command("--store", store),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(wire),
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(
        _lines(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ROOT), "mcpServers": []}},
        ).encode()
    )
    await process.stdin.drain()
    session = None
    while session is None:
        message = json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT))
        if message.get("id") == 2:
            session = message["result"]["sessionId"]
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "2 + 3?"}]}
    process.stdin.write(_lines({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}).encode())
    await process.stdin.drain()
    process.stdin.close()  # at once: the client is done sending

    rest, errors = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode == 0, errors.decode()
    (answer,) = [m for m in map(json.loads, rest.decode().splitlines()) if m.get("id") == 3]
    assert answer["result"]["stopReason"] == "end_turn"
    async with open_store(store) as opened:
        stored = await opened.load(session)
    assert [m.kind for m in stored] == ["user", "tool_call", "assistant"]
    assert stored[1].status is ToolCallStatus.OK and stored[-1].text == "It is 5."  # type: ignore[union-attr]


def test_a_permission_a_file_cannot_answer_is_refused_and_the_prompt_answered(wire: WireServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def stored_session() -> None:
        async with open_store(store) as opened:
            await opened.append("known", [UserMessage("hello"), AssistantMessage("hi")])

    asyncio.run(stored_session())
    wire.queue(tool_reply(("d1", "delete_file", '{"path": "notes.txt"}')), text_reply("I could not delete it."))
    given = tmp_path / "in.jsonl"
    given.write_text(
        _lines(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/load",
                "params": {"sessionId": "known", "cwd": str(ROOT), "mcpServers": []},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": "known", "prompt": [{"type": "text", "text": "delete notes.txt"}]},
            },
        )
    )
    out = tmp_path / "out.jsonl"
    log = tmp_path / "log.txt"
    with given.open("rb") as stdin, out.open("wb") as stdout:
        finished = subprocess.run(
            agent_command("--store", store),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=agent_env(wire, ACP_TEST_LOG=str(log)),
            cwd=ROOT,
            timeout=TIMEOUT,
        )
    assert finished.returncode == 0, finished.stderr.decode()
    messages = [json.loads(line) for line in out.read_text().splitlines()]
    asked = [m for m in messages if m.get("method") == "session/request_permission"]
    assert len(asked) == 1
    (answer,) = [m for m in messages if m.get("id") == 3 and "method" not in m]
    assert answer["result"]["stopReason"] == "end_turn"
    assert not log.exists()  # the call was never run
    assert "the user could not be asked" in wire.requests[1].json["messages"][-1]["content"]
