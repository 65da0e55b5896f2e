"""The command with MCP servers (real ones from PyPI and npm) and agents from ``tooloop.toml``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import MODEL, Cli, call_reply, sent_messages, text_reply
from tests.mcp.peers import TIME_SERVER, HttpEverything, need
from tests.support.wire import WireServer


@pytest.fixture
def time_server() -> str:
    return need(TIME_SERVER)


@pytest.fixture
def everything() -> Iterator[HttpEverything]:
    server = HttpEverything()
    try:
        yield server
    finally:
        server.close()


def test_run_with_a_stdio_server(cli: Cli, wire: WireServer, time_server: str) -> None:
    wire.queue(call_reply("get_current_time", {"timezone": "UTC"}), text_reply("It is some time in UTC."))
    done = cli("run", "What time is it in UTC?", "--model", MODEL, "--mcp", time_server, "--approve", "all")

    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is some time in UTC.\n"
    assert 'tool get_current_time({"timezone": "UTC"}) -> ok:' in done.stderr
    assert "get_current_time" in [t["function"]["name"] for t in wire.requests[0].json["tools"]]
    assert '"timezone": "UTC"' in sent_messages(wire, 1)[-1]["content"].replace('":"', '": "')


def test_servers_named_on_the_command_line_ask_before_calls(cli: Cli, wire: WireServer, time_server: str) -> None:
    wire.queue(call_reply("get_current_time", {"timezone": "UTC"}))
    done = cli("run", "What time is it?", "--model", MODEL, "--mcp", time_server, "--json")

    assert done.returncode == 4, done.stderr
    assert [p["tool_name"] for p in json.loads(done.stdout)["pending_approvals"]] == ["get_current_time"]


def test_tools_lists_mcp_tools_with_their_schemas(cli: Cli, time_server: str) -> None:
    done = cli("tools", "--mcp", time_server, "--json")
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)}
    assert set(tools) >= {"get_current_time", "convert_time"}
    assert "timezone" in tools["get_current_time"]["parameters"]["properties"]
    assert tools["get_current_time"]["requires_approval"] is True


def test_http_server_by_url(cli: Cli, wire: WireServer, everything: HttpEverything) -> None:
    listed = cli("tools", "--mcp-url", everything.url, "--json")
    assert listed.returncode == 0, listed.stderr
    assert "echo" in {t["name"] for t in json.loads(listed.stdout)}

    wire.queue(call_reply("echo", {"message": "hi"}), text_reply("It said hi back."))
    done = cli("run", "Echo hi", "--model", MODEL, "--mcp-url", everything.url, "--approve", "all")
    assert done.returncode == 0, done.stderr
    assert "-> ok: Echo: hi" in done.stderr


def test_agent_from_the_configuration_file(cli: Cli, wire: WireServer, time_server: str) -> None:
    (cli.cwd / "tooloop.toml").write_text(
        f"""
[mcp_servers.time]
command = "{time_server}"
approve = "never"

[agents.clock]
model = "{MODEL}"
system = "You tell the time."
mcp_servers = ["time"]
approve = "never"
""",
        encoding="utf-8",
    )
    wire.queue(call_reply("get_current_time", {"timezone": "Europe/Paris"}), text_reply("Paris time."))
    done = cli("run", "Time in Paris?", "--agent", "clock")

    assert done.returncode == 0, done.stderr
    assert "agent clock" in done.stderr
    assert sent_messages(wire, 0)[0] == {"role": "system", "content": "You tell the time."}
    assert "-> ok:" in done.stderr

    listed = json.loads(cli("tools", "--agent", "clock", "--json").stdout)
    assert {t["name"]: t["requires_approval"] for t in listed}["get_current_time"] is False

    wire.queue(call_reply("get_current_time", {"timezone": "UTC"}), text_reply("UTC time."))
    by_name = cli("run", "Time in UTC?", "--model", MODEL, "--mcp", "time")
    assert by_name.returncode == 0, by_name.stderr

    missing = cli("run", "hi", "--agent", "nobody")
    assert missing.returncode == 2
    assert "agents defined: clock" in missing.stderr


def test_a_server_that_cannot_start_is_a_short_error(cli: Cli, tmp_path: Path) -> None:
    done = cli("run", "hi", "--model", MODEL, "--mcp", str(tmp_path / "no-such-server"))
    assert done.returncode == 1
    assert "no-such-server" in done.stderr
    assert "Traceback" not in done.stderr
