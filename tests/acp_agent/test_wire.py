"""The agent on the raw wire: JSON-RPC error codes, malformed input, and a stdout that carries only protocol."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.acp_agent.support import ROOT, TIMEOUT, agent_command, agent_env, text_reply, tool_reply
from tests.support.wire import WireServer


class Raw:
    """Newline-delimited JSON over the agent's pipes, every stdout line kept."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.lines: list[bytes] = []
        self._next_id = 100

    async def write(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.write(json.dumps(message))

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT)
        assert line, "the agent closed stdout"
        self.lines.append(line)
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request; return its response (notifications on the way are kept in ``lines``)."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(self._next_id)

    async def response(self, request_id: Any) -> dict[str, Any]:
        while True:
            message = await self.read()
            if "method" not in message and message.get("id") == request_id:
                return message


@pytest.fixture
async def raw(wire: WireServer) -> AsyncIterator[Raw]:
    command = agent_command()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(wire),
        cwd=ROOT,
    )
    driver = Raw(process)
    try:
        answer = await driver.request("initialize", {"protocolVersion": 1})
        assert answer["result"]["protocolVersion"] == 1
        yield driver
    finally:
        if process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _session(raw: Raw) -> str:
    answer = await raw.request("session/new", {"cwd": str(ROOT), "mcpServers": []})
    session_id: str = answer["result"]["sessionId"]
    return session_id


def _code(answer: dict[str, Any]) -> int:
    code: int = answer["error"]["code"]
    return code


async def test_unknown_methods_and_vendor_requests_get_method_not_found(raw: Raw) -> None:
    assert _code(await raw.request("session/teleport", {})) == -32601
    assert _code(await raw.request("_acme/frobnicate", {"x": 1})) == -32601
    assert _code(await raw.request("session/load", {"sessionId": "s", "cwd": str(ROOT), "mcpServers": []})) == -32601
    assert _code(await raw.request("authenticate", {"methodId": "x"})) == -32601
    await raw.send({"jsonrpc": "2.0", "method": "_acme/ping", "params": {}})  # ignored: no answer
    await raw.send({"jsonrpc": "2.0", "method": "session/unknown_note", "params": {}})
    assert "result" in await raw.request("session/new", {"cwd": str(ROOT), "mcpServers": []})


async def test_bad_params_and_unknown_sessions(raw: Raw) -> None:
    assert _code(await raw.request("session/new", {"cwd": "relative/dir", "mcpServers": []})) == -32602
    assert _code(await raw.request("session/new", {"mcpServers": []})) == -32602
    session = await _session(raw)
    assert _code(await raw.request("session/prompt", {"sessionId": session})) == -32602
    unknown = await raw.request("session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]})
    assert _code(unknown) == -32602 and "unknown session 'nope'" in unknown["error"]["data"]["details"]
    await raw.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
    video = [{"type": "video", "data": "AAAA", "mimeType": "video/mp4"}]
    assert _code(await raw.request("session/prompt", {"sessionId": session, "prompt": video})) == -32602
    assert process_alive(raw)


async def test_malformed_lines_are_answered_and_the_agent_goes_on(raw: Raw) -> None:
    await raw.write("{this is not json")
    parse = await raw.read()
    assert parse["id"] is None and _code(parse) == -32700
    await raw.write("[1, 2, 3]")
    assert _code(await raw.read()) == -32600
    await raw.write('{"jsonrpc": "2.0", "id": 7, "method": 12}')
    invalid = await raw.read()
    assert invalid["id"] == 7 and _code(invalid) == -32600
    assert "result" in await raw.request("session/new", {"cwd": str(ROOT), "mcpServers": []})


def process_alive(raw: Raw) -> bool:
    return raw.process.returncode is None


async def test_stdout_carries_only_protocol_messages(raw: Raw, wire: WireServer) -> None:
    wire.queue(tool_reply(("n1", "noisy", '{"text": "LEAK"}')), text_reply("quiet now"))
    session = await _session(raw)
    prompt = [{"type": "text", "text": "make noise"}, {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}]
    answer = await raw.request("session/prompt", {"sessionId": session, "prompt": prompt})
    assert answer["result"]["stopReason"] == "end_turn"
    assert answer["result"]["usage"] == {"inputTokens": 220, "outputTokens": 20, "totalTokens": 240}
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert raw.process.stdout is not None and raw.process.stderr is not None
    rest = await asyncio.wait_for(raw.process.stdout.read(), TIMEOUT)
    raw.lines += rest.splitlines(keepends=True)
    for line in raw.lines:
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
        assert ("method" in message) or ("result" in message) or ("error" in message)
    stderr = (await asyncio.wait_for(raw.process.stderr.read(), TIMEOUT)).decode()
    for leak in ("print: LEAK", "sys.stdout: LEAK", "fd 1: LEAK", "logged: LEAK", "child: LEAK"):
        assert leak in stderr
    sent = wire.requests[0].json["messages"][-1]["content"]
    assert sent == "make noise\n\n[resource link: file:///a.txt (a)]"
