"""An MCP server's question to the user (elicitation) goes to the editor: the official ACP SDK client
talks to ``tooloop acp``, whose session runs the MCP server of ``tests/mcp/hostile_server.py``
(built with the official MCP SDK), given by the client or declared in the agent's ``tooloop.toml``."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp import schema

from tests.acp_agent.support import (
    ROOT,
    TIMEOUT,
    RecordingClient,
    agent_command,
    agent_env,
    prompt,
    text_reply,
    tool_reply,
)
from tests.mcp.peers import PEER_PYTHON, need
from tests.support.wire import WireServer

HOSTILE_SERVER = ROOT / "tests" / "mcp" / "hostile_server.py"


@dataclass
class FormClient(RecordingClient):
    """A client that shows elicitation forms and answers each with the next of ``forms``."""

    forms: list[dict[str, Any] | str] = field(default_factory=list)
    """Content to accept with, or the action ("decline", "cancel") to answer."""
    asked_forms: list[tuple[str, Any]] = field(default_factory=list)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.asked_forms.append((message, mode))
        answer = self.forms.pop(0)
        if isinstance(answer, str):
            return {"action": answer}
        return schema.AcceptElicitationResponse(action="accept", content=answer)


def _hostile() -> schema.McpServerStdio:
    return schema.McpServerStdio(name="host", command=need(PEER_PYTHON), args=[str(HOSTILE_SERVER)], env=[])


async def _run(
    client: RecordingClient, wire: WireServer, tool: str, *, elicitation: schema.ElicitationCapabilities | None
) -> str:
    """One prompt whose model calls ``host__<tool>``; the session's text answer."""
    wire.queue(tool_reply(("c1", f"host__{tool}", "{}")), text_reply("done"))
    client.answers = ["allow_always", *client.answers]  # the server's call itself is approved
    command = agent_command()
    capabilities = schema.ClientCapabilities(elicitation=elicitation)
    async with acp.spawn_agent_process(
        client, command[0], *command[1:], env=agent_env(wire), cwd=ROOT, use_unstable_protocol=True
    ) as (
        conn,
        _,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=capabilities), TIMEOUT)
        session = (
            await asyncio.wait_for(conn.new_session(cwd=str(ROOT), mcp_servers=[_hostile()]), TIMEOUT)
        ).session_id
        assert await prompt(conn, session, "go") == "end_turn"
    return session


def _tool_result(wire: WireServer) -> str:
    """What the model was told the MCP call returned."""
    (message,) = [m for m in wire.requests[1].json["messages"] if m["role"] == "tool"]
    content = message["content"]
    return content if isinstance(content, str) else json.dumps(content)


FORMS = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())


async def test_a_client_that_shows_forms_fills_the_servers_form(wire: WireServer) -> None:
    client = FormClient(forms=[{"name": "Ada"}])
    session = await _run(client, wire, "ask_name", elicitation=FORMS)
    assert _tool_result(wire) == "hello Ada"
    ((message, mode),) = client.asked_forms
    assert message == "What is your name?"
    assert isinstance(mode, schema.ElicitationFormSessionMode)
    assert mode.session_id == session and mode.tool_call_id == "c1"  # the call that asked
    assert "name" in (mode.requested_schema.properties or {}) and mode.requested_schema.required == ["name"]


async def test_a_declined_form_reaches_the_server_as_declined(wire: WireServer) -> None:
    client = FormClient(forms=["decline"])
    await _run(client, wire, "ask_name", elicitation=FORMS)
    assert _tool_result(wire) == "no name: decline"


async def test_without_elicitation_a_yes_or_no_question_is_a_permission_request(wire: WireServer) -> None:
    client = RecordingClient(answers=["accept"])
    session = await _run(client, wire, "ask_consent", elicitation=None)
    assert _tool_result(wire) == "consent: accept"
    question = client.permissions[-1]
    assert [o.option_id for o in question.options] == ["accept", "decline"]
    assert question.tool_call.title == "host asks: May I clear the cache?"
    # the question is shown as a call of its own, finished with the answer
    shown = [u for u in client.tool_updates(session) if u.tool_call_id == question.tool_call.tool_call_id]
    assert [u.status for u in shown] == ["pending", "completed"]


async def test_without_elicitation_a_declined_permission_declines(wire: WireServer) -> None:
    client = RecordingClient(answers=["decline"])
    await _run(client, wire, "ask_consent", elicitation=None)
    assert _tool_result(wire) == "consent: decline"


async def test_without_elicitation_a_form_with_required_fields_is_refused_with_the_reason(wire: WireServer) -> None:
    client = RecordingClient()
    await _run(client, wire, "ask_name", elicitation=None)
    told = _tool_result(wire)
    assert "cannot show forms" in told and "name" in told  # the model learns why the call failed
    assert len(client.permissions) == 1  # only the call's own approval: nothing was asked


async def test_a_page_to_open_goes_to_a_client_that_opens_pages(wire: WireServer) -> None:
    client = FormClient(forms=[{}])
    await _run(
        client, wire, "ask_login", elicitation=schema.ElicitationCapabilities(url=schema.ElicitationUrlCapabilities())
    )
    assert _tool_result(wire) == "login: accept"
    ((message, mode),) = client.asked_forms
    assert message == "Sign in to continue"
    assert isinstance(mode, schema.ElicitationUrlSessionMode) and str(mode.url) == "https://example.com/login"


async def test_without_elicitation_a_page_to_open_is_a_permission_request_naming_it(wire: WireServer) -> None:
    client = RecordingClient(answers=["accept"])
    await _run(client, wire, "ask_login", elicitation=None)
    assert _tool_result(wire) == "login: accept"
    assert "https://example.com/login" in (client.permissions[-1].tool_call.title or "")


def _agent_file(folder: Path) -> None:
    """A ``tooloop.toml`` whose agent has the eliciting server as its own (no prefix on its tools)."""
    (folder / "tooloop.toml").write_text(
        "[mcp_servers.host]\n"
        f"command = {json.dumps(need(PEER_PYTHON))}\n"
        f"args = [{json.dumps(str(HOSTILE_SERVER))}]\n\n"
        "[agents.helper]\n"
        'model = "openai:gpt-4.1-mini"\n'
        'mcp_servers = ["host"]\n'
    )


async def _run_agent_of_file(
    client: RecordingClient, wire: WireServer, folder: Path, tool: str, *, elicitation: Any
) -> tuple[str, str]:
    """Two sessions of ``tooloop acp --agent helper``; a prompt in the second calls ``tool`` of
    the agent's own server. The two session ids."""
    _agent_file(folder)
    wire.queue(tool_reply(("c1", tool, "{}")), text_reply("done"))
    command = [sys.executable, "-m", "tooloop.acp", "--agent", "helper"]
    async with acp.spawn_agent_process(
        client, command[0], *command[1:], env=agent_env(wire), cwd=folder, use_unstable_protocol=True
    ) as (conn, _):
        capabilities = schema.ClientCapabilities(elicitation=elicitation)
        await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=capabilities), TIMEOUT)
        idle, calling = [
            (await asyncio.wait_for(conn.new_session(cwd=str(folder), mcp_servers=[]), TIMEOUT)).session_id
            for _ in range(2)
        ]
        assert await prompt(conn, calling, "go") == "end_turn"
    return idle, calling


async def test_a_server_of_the_agents_own_tooloop_toml_fills_its_form_in_the_session_calling_it(
    wire: WireServer, tmp_path: Path
) -> None:
    client = FormClient(forms=[{"name": "Ada"}])
    _, calling = await _run_agent_of_file(client, wire, tmp_path, "ask_name", elicitation=FORMS)
    assert _tool_result(wire) == "hello Ada"
    ((message, mode),) = client.asked_forms
    assert message == "What is your name?"
    assert isinstance(mode, schema.ElicitationFormSessionMode)
    assert mode.session_id == calling and mode.tool_call_id == "c1"


async def test_a_server_of_the_agents_own_tooloop_toml_asks_yes_or_no_as_a_permission_request(
    wire: WireServer, tmp_path: Path
) -> None:
    client = RecordingClient(answers=["accept"])
    idle, calling = await _run_agent_of_file(client, wire, tmp_path, "ask_consent", elicitation=None)
    assert _tool_result(wire) == "consent: accept"
    (question,) = client.permissions
    assert question.session_id == calling and question.tool_call.title == "host asks: May I clear the cache?"
    assert client.of(idle) == []  # nothing shown in the session that called nothing
