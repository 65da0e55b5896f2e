"""``tooloop chat`` asks about a subagent's call that needs approval at its own prompt (pseudo-terminal)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.cli.conftest import MODEL, TOOLS, Cli, call_reply, sent_messages, text_reply
from tests.support.wire import WireServer

PROMPT = "you>"
HELPER = TOOLS.replace(":TOOLS", ":HELPER")


@pytest.fixture
def spawn(cli: Cli) -> Iterator[pexpect.spawn]:
    env = dict(cli.env, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tooloop", "chat", "--model", MODEL, "--tool", HELPER],
        env=env,
        cwd=str(cli.cwd),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    try:
        child.expect(PROMPT)
        yield child
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_a_subagents_call_is_asked_about_at_the_chat_prompt(
    spawn: pexpect.spawn, wire: WireServer, tmp_path: Path
) -> None:
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("x")
    wire.queue(
        call_reply("helper", {"prompt": f"remove {doomed}"}, call_id="call_1"),
        call_reply("remove_file", {"path": str(doomed)}, call_id="call_9"),
        text_reply("Removed."),
        text_reply("The helper removed it."),
    )
    spawn.sendline("Tidy up")
    spawn.expect("remove_file")
    spawn.expect("allow?")
    spawn.sendline("y")
    spawn.expect("The helper removed it.")
    spawn.expect(PROMPT)
    assert not doomed.exists()
    assert sent_messages(wire, 1)[-1] == {"role": "user", "content": f"remove {doomed}"}
    assert sent_messages(wire, 3)[-1]["content"] == "Removed."
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)
