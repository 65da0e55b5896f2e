"""``tooloop run`` asks the user on the terminal when an MCP server elicits input (a real pty),
whether the server came with ``--mcp`` or belongs to an agent of ``tooloop.toml``; with no
terminal the question is declined, and the user is told."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest

from tests.cli.conftest import MODEL, base_env, call_reply, in_terminal, sent_messages, text_reply
from tests.support.wire import WireServer

from .peers import PEER_PYTHON, need

HOSTILE_SERVER = Path(__file__).with_name("hostile_server.py")
QUESTION = "What is my name?"
SOURCES = ("--mcp", "tooloop.toml")


def command(source: str, folder: Path) -> tuple[str, list[str]]:
    """The server's name and ``tooloop run``'s arguments that give it (an agent of a
    ``tooloop.toml`` written in ``folder`` for ``tooloop.toml``)."""
    if source == "--mcp":
        server = f"{need(PEER_PYTHON)} {HOSTILE_SERVER}"
        return "hostile_server", ["run", QUESTION, "--model", MODEL, "--mcp", server, "--approve", "all"]
    (folder / "tooloop.toml").write_text(
        "[mcp_servers.host]\n"
        f"command = {json.dumps(need(PEER_PYTHON))}\n"
        f"args = [{json.dumps(str(HOSTILE_SERVER))}]\n\n"
        "[agents.helper]\n"
        f"model = {json.dumps(MODEL)}\n"
        'mcp_servers = ["host"]\n'
    )
    return "host", ["run", QUESTION, "--agent", "helper", "--approve", "all"]


def server_env(wire: WireServer, folder: Path) -> dict[str, str]:
    return {**base_env(folder), "OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": wire.url + "/v1"}


@contextmanager
def terminal_run(wire: WireServer, folder: Path, arguments: list[str]) -> Iterator[pexpect.spawn]:
    """``tooloop ARGUMENTS`` under a pseudo-terminal; at the end of the block it must end, with status 0."""
    child = in_terminal(server_env(wire, folder), folder, *arguments)
    try:
        yield child
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 0, child.before


@pytest.mark.parametrize("source", SOURCES)
def test_a_servers_elicitation_is_asked_on_the_terminal_and_the_answer_reaches_the_server(
    wire: WireServer, tmp_path: Path, source: str
) -> None:
    server, arguments = command(source, tmp_path)
    wire.queue(call_reply("ask_name", {}), text_reply("Your name is Ada."))
    with terminal_run(wire, tmp_path, arguments) as child:
        child.expect(f"MCP server '{server}' asks: What is your name\\?")
        child.expect("Name: ")
        child.sendline("Ada")
        child.expect("Your name is Ada.")
    assert sent_messages(wire, 1)[-1]["content"].endswith("hello Ada")


def test_an_empty_answer_cancels_the_elicitation(wire: WireServer, tmp_path: Path) -> None:
    _, arguments = command("--mcp", tmp_path)
    wire.queue(call_reply("ask_name", {}), text_reply("You did not say."))
    with terminal_run(wire, tmp_path, arguments) as child:
        child.expect("Name: ")
        child.sendline("")
    assert sent_messages(wire, 1)[-1]["content"].endswith("no name: cancel")


@pytest.mark.parametrize("source", SOURCES)
def test_without_a_terminal_the_question_is_declined_and_the_user_told(
    wire: WireServer, tmp_path: Path, source: str
) -> None:
    server, arguments = command(source, tmp_path)
    wire.queue(call_reply("ask_name", {}), text_reply("You declined."))
    done = subprocess.run(
        [sys.executable, "-m", "tooloop", *arguments],
        env=server_env(wire, tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "You declined."
    assert f"MCP server '{server}' asks: What is your name?\n  declined: no terminal to answer on" in done.stderr
    assert sent_messages(wire, 1)[-1]["content"].endswith("no name: decline")
