"""The real MCP servers the tests run, installed by ``scripts/test_peers.sh`` into ``.peers/``.

A missing peer fails the test that needs it (with the command that installs it); it never skips.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("TOOLOOP_PEERS", ROOT / ".peers"))
TIME_SERVER = PEERS / "time-venv" / "bin" / "mcp-server-time"
PEER_PYTHON = PEERS / "time-venv" / "bin" / "python"  # has the official SDK (server side) too
EVERYTHING = PEERS / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
FAULT_SERVER = Path(__file__).with_name("fault_server.py")


def need(path: Path) -> str:
    """``path`` as a string, or a test failure saying how to install the peers."""
    if not path.exists():
        pytest.fail(f"MCP peer {path} is missing: run 'bash scripts/test_peers.sh' (scripts/test.sh does)")
    return str(path)


def group_members(leader: int) -> list[int]:
    """Live processes in the process group ``leader`` leads (zombies count as gone)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == leader and state != "Z":
            members.append(int(entry.name))
    return members


def wait_gone(leader: int, seconds: float = 15.0) -> list[int]:
    """Wait until no process of the group is left; return what is left after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := group_members(leader)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpEverything:
    """``server-everything`` in streamable HTTP mode on a loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            ["node", need(EVERYTHING), "streamableHttp"],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.close()
        pytest.fail("server-everything did not start listening in HTTP mode")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
