"""``tooloop run`` asks the user on the terminal when an MCP server elicits input (a real pty)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from tests.cli.conftest import MODEL, base_env, call_reply, sent_messages, text_reply
from tests.support.wire import WireServer

from .peers import PEER_PYTHON, need

HOSTILE_SERVER = Path(__file__).with_name("hostile_server.py")


def run_in_terminal(wire: WireServer, tmp_path: Path, *extra: str) -> pexpect.spawn:
    env = {**base_env(tmp_path), "OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": wire.url + "/v1"}
    server = f"{need(PEER_PYTHON)} {HOSTILE_SERVER}"
    return pexpect.spawn(
        sys.executable,
        ["-m", "tooloop", "run", "What is my name?", "--model", MODEL, "--mcp", server, "--approve", "all", *extra],
        env={**env, "TERM": "xterm"},
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )


def test_a_servers_elicitation_is_asked_on_the_terminal_and_the_answer_reaches_the_server(
    wire: WireServer, tmp_path: Path
) -> None:
    wire.queue(call_reply("ask_name", {}), text_reply("Your name is Ada."))
    child = run_in_terminal(wire, tmp_path)
    try:
        child.expect("MCP server 'hostile_server' asks: What is your name\\?")
        child.expect("Name: ")
        child.sendline("Ada")
        child.expect("Your name is Ada.")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 0, child.before
    assert sent_messages(wire, 1)[-1]["content"].endswith("hello Ada")


def test_an_empty_answer_cancels_the_elicitation(wire: WireServer, tmp_path: Path) -> None:
    wire.queue(call_reply("ask_name", {}), text_reply("You did not say."))
    child = run_in_terminal(wire, tmp_path)
    try:
        child.expect("Name: ")
        child.sendline("")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 0, child.before
    assert sent_messages(wire, 1)[-1]["content"].endswith("no name: cancel")
