"""SIGTERM (how editors and process managers stop an agent) to ``tooloop run`` and ``tooloop acp``
leaves no MCP server process behind: real commands, real servers, a server that starts a child."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import acp
import pexpect
from acp import schema

from tests.acp_agent.support import TIMEOUT, RecordingClient, agent_env
from tests.cli.conftest import MODEL, base_env, in_terminal
from tests.models.openai_wire import chunk
from tests.support.wire import Reply, WireServer, sse_reply

from .peers import FAULT_SERVER, PEER_PYTHON, ROOT, group_members, need, wait_gone


def server_script(pid_file: Path) -> str:
    """A stdio server that first starts a child of its own (as ``npx`` and shell wrappers do)
    and writes its pid (the leader of its process group) to ``pid_file``."""
    return f"echo $$ > {pid_file}; sleep 600 & exec {need(PEER_PYTHON)} {FAULT_SERVER}"


def leader_of(pid_file: Path, seconds: float = 60) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the MCP server never started")


def hanging_model_reply() -> Reply:
    """The model starts answering and then says nothing for a minute."""
    head = sse_reply([chunk({"role": "assistant", "content": ""}), chunk({"content": "Thinking"})])
    return Reply(200, {"content-type": "text/event-stream"}, chunks=head.chunks, stall=60)


def test_sigterm_to_tooloop_run_stops_its_mcp_servers_and_their_children(wire: WireServer, tmp_path: Path) -> None:
    wire.queue(hanging_model_reply())
    pid_file = tmp_path / "server.pid"
    env = {**base_env(tmp_path), "OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": wire.url + "/v1"}
    command = [
        sys.executable,
        "-m",
        "tooloop",
        "run",
        "go",
        "--model",
        MODEL,
        "--mcp",
        f"sh -c '{server_script(pid_file)}'",
    ]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        leader = leader_of(pid_file)
        # the shell wrote its pid before it started its child: both are there a moment later
        deadline = time.monotonic() + 60
        while len(group_members(leader)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(group_members(leader)) == 2  # the server and its child
        deadline = time.monotonic() + 60
        while not wire.requests and time.monotonic() < deadline:  # the run is talking to the model
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr  # cancelled, as by Ctrl-C
    assert wait_gone(leader) == [], f"MCP server processes outlived tooloop run: {stderr}"


async def test_sigterm_to_tooloop_acp_stops_the_sessions_mcp_servers_and_their_children(
    wire: WireServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    server = schema.McpServerStdio(name="faults", command="sh", args=["-c", server_script(pid_file)], env=[])
    command = [sys.executable, "-m", "tooloop", "acp", "--model", MODEL]
    async with acp.spawn_agent_process(RecordingClient(), *command, env=agent_env(wire), cwd=ROOT) as (conn, process):
        await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
        await asyncio.wait_for(conn.new_session(cwd=str(ROOT), mcp_servers=[server]), TIMEOUT)
        leader = await asyncio.to_thread(leader_of, pid_file)
        assert len(group_members(leader)) == 2
        os.kill(process.pid, signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 60)
    assert code in (0, 130), code
    assert await asyncio.to_thread(wait_gone, leader) == [], "MCP server processes outlived tooloop acp"


def test_sigterm_to_tooloop_chat_at_its_prompt_ends_it_and_stops_its_mcp_servers(
    wire: WireServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    env = {**base_env(tmp_path), "OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": wire.url + "/v1"}
    child = in_terminal(env, tmp_path, "chat", "--model", MODEL, "--mcp", f"sh -c '{server_script(pid_file)}'")
    try:
        child.expect("you>")
        leader = leader_of(pid_file)
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 130, child.before  # as for Ctrl-C
    assert wait_gone(leader) == [], "MCP server processes outlived tooloop chat"
