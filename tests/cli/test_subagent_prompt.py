"""``tooloop chat`` asks about a subagent's call that needs approval at its own prompt (pseudo-terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.cli.conftest import CHAT_PROMPT, TOOLS, Cli, call_reply, chat_in_terminal, sent_messages, text_reply
from tests.support.wire import WireServer

HELPER = TOOLS.replace(":TOOLS", ":HELPER")


@pytest.fixture
def spawn(cli: Cli) -> Iterator[pexpect.spawn]:
    yield from chat_in_terminal(cli, HELPER)


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
    spawn.expect(CHAT_PROMPT)
    assert not doomed.exists()
    assert sent_messages(wire, 1)[-1] == {"role": "user", "content": f"remove {doomed}"}
    assert sent_messages(wire, 3)[-1]["content"] == "Removed."
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)
