"""Driving the ACP agent as a subprocess with the official Python SDK's client side.

The model behind the agent is the scripted Chat Completions server of ``tests/support/wire.py``;
the helpers here write its replies (streamed text, tool calls, a stream that hangs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp import schema
from acp.client.connection import ClientSideConnection

from tests.models.openai_wire import call_start, chunk, usage, usage_chunk
from tests.support.wire import Reply, WireServer, sse_reply

ROOT = Path(__file__).resolve().parents[2]
TOOLS = [f"tests.acp_agent.agent_tools:{name}" for name in ("add", "explode", "wait_forever", "delete_file", "noisy")]
TIMEOUT = 60.0


# ---------------------------------------------------------------------- the scripted model


def text_reply(*pieces: str, finish: str = "stop") -> Reply:
    """A streamed answer in ``pieces``."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in pieces]
    chunks += [chunk({}, finish), usage_chunk(usage(120, 8))]
    return sse_reply(chunks, done=True)


def tool_reply(*calls: tuple[str, str, str], text: str = "") -> Reply:
    """A streamed response asking for ``(call id, tool name, JSON arguments)`` calls."""
    first: dict[str, Any] = {"role": "assistant", "content": text or None}
    chunks = [chunk(first)]
    chunks += [chunk({"tool_calls": [call_start(i, *call)]}) for i, call in enumerate(calls)]
    chunks += [chunk({}, "tool_calls"), usage_chunk(usage(100, 12))]
    return sse_reply(chunks, done=True)


class Gate:
    """Chunks of a stream that stop after the first ones until :meth:`open` (or forever)."""

    def __init__(self, before: list[bytes], after: list[bytes]):
        self._before = before
        self._after = after
        self.reached = threading.Event()
        self._open = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield from self._before
        self.reached.set()
        self._open.wait(TIMEOUT)
        yield from self._after

    def open(self) -> None:
        self._open.set()


def hanging_text_reply(first: str) -> tuple[Reply, Gate]:
    """A stream that sends ``first`` and then hangs until the gate opens: the model is still talking."""
    head = sse_reply([chunk({"role": "assistant", "content": ""}), chunk({"content": first})])
    tail = sse_reply([chunk({}, "stop"), usage_chunk(usage(50, 2))], done=True)
    gate = Gate(list(head.chunks or []), list(tail.chunks or []))
    return Reply(200, {"content-type": "text/event-stream"}, chunks=gate), gate  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the client


@dataclass
class RecordingClient:
    """An ACP client that records every update and answers permission requests from a script."""

    answers: list[str | None] = field(default_factory=list)
    """Option ids to choose, in order; None answers ``cancelled``."""
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[schema.RequestPermissionRequest] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    hold: asyncio.Event | None = None
    """When set, permission requests wait for it before answering."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, options: list[schema.PermissionOption], session_id: str, tool_call: schema.ToolCallUpdate, **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.permissions.append(
            schema.RequestPermissionRequest(options=options, session_id=session_id, tool_call=tool_call)
        )
        self.asked.set()
        if self.hold is not None:
            await self.hold.wait()
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=answer))

    def of(self, session_id: str) -> list[Any]:
        return [u for s, u in self.updates if s == session_id]

    def kinds(self, session_id: str) -> list[str]:
        return [u.session_update for u in self.of(session_id)]

    def text(self, session_id: str) -> str:
        return "".join(u.content.text for u in self.of(session_id) if u.session_update == "agent_message_chunk")

    def tool_updates(self, session_id: str) -> list[Any]:
        return [u for u in self.of(session_id) if u.session_update in ("tool_call", "tool_call_update")]


def agent_env(wire: WireServer, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=wire.url + "/v1",
        OPENAI_API_KEY="sk-test-key",
        PYTHONPATH=str(ROOT) + os.pathsep + str(ROOT / "src"),
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def agent_command(*options: str) -> list[str]:
    command = [sys.executable, "-m", "tooloop.acp", "--model", "openai:gpt-4.1-mini"]
    for path in TOOLS:
        command += ["--tool", path]
    return command + list(options)


@contextlib.asynccontextmanager
async def spawn(
    client: RecordingClient, wire: WireServer, *options: str, **env: str
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """The agent as a subprocess, connected to ``client`` and initialised."""
    command = agent_command(*options)
    async with acp.spawn_agent_process(client, command[0], *command[1:], env=agent_env(wire, **env), cwd=ROOT) as (
        conn,
        process,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
        yield conn, process


async def new_session(conn: ClientSideConnection) -> str:
    response = await asyncio.wait_for(conn.new_session(cwd=str(ROOT), mcp_servers=[]), TIMEOUT)
    return response.session_id


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> str:
    response = await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=text)]), TIMEOUT
    )
    return response.stop_reason
