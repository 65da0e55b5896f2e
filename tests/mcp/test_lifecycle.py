"""Starting, stopping, timeouts, cancellation, progress and faults of real MCP servers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tooloop import (
    Agent,
    CancelToken,
    ModelResponse,
    RunFinished,
    StopReason,
    ToolCall,
    ToolCallProgress,
    ToolCallStatus,
    ToolSourceError,
)
from tooloop.mcp import MCPServer
from tooloop.testing import ScriptedModel

from .peers import EVERYTHING, FAULT_SERVER, PEER_PYTHON, ROOT, TIME_SERVER, group_members, need, wait_gone


def long_call(duration: int = 30, steps: int = 30) -> ModelResponse:
    return ModelResponse(
        tool_calls=(ToolCall("call_long", "trigger-long-running-operation", {"duration": duration, "steps": steps}),)
    )


def recorded_everything(log: Path, **options: object) -> MCPServer:
    """server-everything with every message we send it copied to ``log`` on its way in."""
    script = 'tee -a "$0" | exec node "$1"'
    return MCPServer.stdio("sh", ["-c", script, str(log), need(EVERYTHING)], name="everything", **options)  # type: ignore[arg-type]


def cancellations(log: Path, seconds: float = 15.0) -> list[dict[str, object]]:
    """The ``notifications/cancelled`` messages in ``log`` (waiting a while for the first)."""
    deadline = time.monotonic() + seconds
    while True:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
        found = [m for m in lines if m.get("method") == "notifications/cancelled"]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def request_id(log: Path, method: str) -> object:
    for line in log.read_text().splitlines():
        message = json.loads(line)
        if message.get("method") == method:
            return message["id"]
    raise AssertionError(f"no {method} request in the log")


async def test_a_call_past_its_timeout_is_cancelled_on_the_server(tmp_path: Path) -> None:
    log = tmp_path / "to-server.jsonl"
    server = recorded_everything(log, timeout=1.5)
    model = ScriptedModel([long_call(), "gave up"])
    try:
        started = time.monotonic()
        result = await Agent(model, tools=[server]).run("go")
        elapsed = time.monotonic() - started
    finally:
        await server.aclose()
    (call,) = result.transcript.tool_invocations
    assert call.status is ToolCallStatus.ERROR and call.error_type == "ToolTimeoutError"
    assert elapsed < 20  # not the 30 seconds the operation takes
    (cancelled,) = cancellations(log)
    assert cancelled["params"]["requestId"] == request_id(log, "tools/call")  # type: ignore[index]


async def test_a_cancelled_run_cancels_its_call_on_the_server_and_progress_is_streamed(tmp_path: Path) -> None:
    log = tmp_path / "to-server.jsonl"
    server = recorded_everything(log)
    token = CancelToken()
    progress: list[ToolCallProgress] = []
    finished = None
    try:
        async for event in Agent(ScriptedModel([long_call()]), tools=[server]).stream("go", cancel=token):
            if isinstance(event, ToolCallProgress):
                progress.append(event)
                if len(progress) == 2:
                    token.cancel("the user pressed stop")
            elif isinstance(event, RunFinished):
                finished = event.result
    finally:
        await server.aclose()
    assert finished is not None and finished.stop_reason is StopReason.CANCELLED
    assert [p.progress for p in progress] == [1, 2] and progress[0].total == 30
    assert progress[0].tool_call_id == "call_long" and progress[0].tool_name == "trigger-long-running-operation"
    (call,) = finished.transcript.tool_invocations
    assert call.status is ToolCallStatus.CANCELLED
    (cancelled,) = cancellations(log)
    assert cancelled["params"]["requestId"] == request_id(log, "tools/call")  # type: ignore[index]


async def test_a_server_that_fails_to_start_names_itself_its_command_and_its_stderr() -> None:
    broken = MCPServer.stdio("sh", ["-c", "echo 'cannot open /var/db/tools' >&2; exit 3"], name="broken")
    with pytest.raises(ToolSourceError) as caught:
        await Agent(ScriptedModel(["never asked"]), tools=[broken]).run("go")
    message = str(caught.value)
    assert "MCP server 'broken'" in message
    assert "(command: sh)" in message and "exit status 3" in message
    assert "cannot open /var/db/tools" in message
    missing = MCPServer.stdio("no-such-mcp-server-program")
    with pytest.raises(ToolSourceError, match="'no-such-mcp-server-program' was not found"):
        await missing.start()


async def test_a_server_that_never_answers_the_handshake_times_out_and_is_stopped() -> None:
    mute = MCPServer.stdio("sh", ["-c", "echo waiting forever >&2; exec sleep 600"], name="mute", start_timeout=2)
    with pytest.raises(ToolSourceError, match="did not answer the MCP handshake within 2 seconds") as caught:
        await mute.start()
    assert "waiting forever" in str(caught.value)
    assert mute.pid is None


async def test_a_server_dying_mid_call_gives_an_error_result_and_restarts_on_the_next_call() -> None:
    server = MCPServer.stdio(need(PEER_PYTHON), [str(FAULT_SERVER)], name="faults")
    model = ScriptedModel(
        [
            ModelResponse(tool_calls=(ToolCall("c1", "crash", {}),)),
            ModelResponse(tool_calls=(ToolCall("c2", "hello", {}),)),
            "done",
        ]
    )
    try:
        await server.start()
        first_pid = server.pid
        assert first_pid is not None
        result = await Agent(model, tools=[server]).run("go")
        second_pid = server.pid
    finally:
        await server.aclose()
    crash, hello = result.transcript.tool_invocations
    assert crash.status is ToolCallStatus.ERROR and crash.error_type == "ToolSourceError"
    assert "MCP server 'faults'" in crash.content and "stopped during the call" in crash.content
    assert hello.status is ToolCallStatus.OK and hello.content == f"hello from pid {second_pid}"
    assert second_pid != first_pid and wait_gone(first_pid) == []


async def test_a_server_killed_during_a_long_call_is_restarted() -> None:
    server = MCPServer.stdio("node", [need(EVERYTHING)], name="everything")
    model = ScriptedModel([long_call(), ModelResponse(tool_calls=(ToolCall("c2", "echo", {"message": "back"}),)), "ok"])
    killed: list[int] = []
    try:
        async for event in Agent(model, tools=[server]).stream("go"):
            if isinstance(event, ToolCallProgress) and not killed:
                assert server.pid is not None
                killed.append(server.pid)
                os.kill(server.pid, signal.SIGKILL)
            elif isinstance(event, RunFinished):
                result = event.result
        restarted = server.pid
    finally:
        await server.aclose()
    long, echo = result.transcript.tool_invocations
    assert long.status is ToolCallStatus.ERROR and long.error_type == "ToolSourceError"
    assert echo.content == "Echo: back"
    assert restarted not in (None, killed[0])


async def test_async_with_starts_every_server_at_once_and_stops_them_all() -> None:
    servers = [MCPServer.stdio("node", [need(EVERYTHING)], name=f"everything{i}", prefix=f"e{i}_") for i in range(2)]
    servers.append(MCPServer.stdio(need(TIME_SERVER), name="time"))
    agent = Agent(ScriptedModel(["hi", "hi again"]), tools=servers)
    async with agent:
        pids = [s.pid for s in servers]
        assert None not in pids
        assert all(group_members(pid) for pid in pids if pid)
        await agent.run("go")
        await agent.run("again")
        assert [s.pid for s in servers] == pids  # shared by the runs
    for pid in pids:
        assert wait_gone(pid) == [], f"server {pid} outlived its agent"
    assert [s.pid for s in servers] == [None, None, None]


async def test_a_failed_start_in_async_with_stops_the_servers_that_started() -> None:
    good = MCPServer.stdio(need(TIME_SERVER), name="time")
    bad = MCPServer.stdio("sh", ["-c", "exit 1"], name="bad")
    agent = Agent(ScriptedModel([]), tools=[good, bad])
    with pytest.raises(ToolSourceError, match="MCP server 'bad'"):
        async with agent:
            pass
    assert good.pid is None


async def test_lazy_start_and_aclose() -> None:
    server = MCPServer.stdio(need(TIME_SERVER), name="time")
    agent = Agent(ScriptedModel(["hi"]), tools=[server])
    assert server.pid is None
    await agent.run("go")
    pid = server.pid
    assert pid is not None and group_members(pid)
    await agent.aclose()
    assert wait_gone(pid) == []


SCRIPT = """
import asyncio, sys
from tooloop import Agent
from tooloop.mcp import MCPServer
from tooloop.testing import ScriptedModel

server = MCPServer.stdio(sys.argv[1], name="time")
agent = Agent(ScriptedModel(["hi"]), tools=[server])

async def main():
    await agent.run("go")
    print(server.pid, flush=True)

if sys.argv[2] == "asyncio.run":
    asyncio.run(main())
else:  # a loop left open: only the exit handler can stop the server
    asyncio.new_event_loop().run_until_complete(main())
"""


@pytest.mark.parametrize("how", ["asyncio.run", "loop-left-open"])
def test_no_server_outlives_the_interpreter(how: str, tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, str(script), need(TIME_SERVER), how], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.strip())
    assert wait_gone(pid) == []


async def test_run_sync_stops_the_server_with_its_event_loop() -> None:
    server = MCPServer.stdio(need(PEER_PYTHON), [str(FAULT_SERVER)], name="faults")
    hello = ModelResponse(tool_calls=(ToolCall("c1", "hello", {}),))
    agent = Agent(ScriptedModel([hello, "one", hello, "two"]), tools=[server])
    pids = []
    for _ in range(2):
        result = await asyncio.to_thread(agent.run_sync, "go")  # a new event loop each time
        pids.append(int(result.transcript.tool_invocations[0].content.rsplit(" ", 1)[1]))
    assert pids[0] != pids[1]
    for pid in pids:
        assert wait_gone(pid) == []
