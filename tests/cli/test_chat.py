"""``tooloop chat`` driven under a pseudo-terminal (pexpect), against the scripted server."""

from __future__ import annotations

import threading
from pathlib import Path

import pexpect

from tests.cli.conftest import CHAT_PROMPT, SlowChunks, call_reply, sent_messages, text_reply
from tests.support.wire import Recorded, Reply, WireServer


def test_tool_call_approvals_yes_and_no_then_exit(spawn: pexpect.spawn, wire: WireServer, tmp_path: Path) -> None:
    doomed, kept = tmp_path / "doomed.txt", tmp_path / "kept.txt"
    doomed.write_text("x")
    kept.write_text("y")
    wire.queue(
        call_reply("add", {"a": 2, "b": 40}),
        text_reply("The sum is 42."),
        call_reply("remove_file", {"path": str(doomed)}, call_id="call_2"),
        text_reply("Removed it."),
        call_reply("remove_file", {"path": str(kept)}, call_id="call_3"),
        text_reply("Left it alone."),
    )

    spawn.sendline("What is 2 + 40?")
    spawn.expect("add")
    spawn.expect('"a": 2, "b": 40')
    spawn.expect("ok: 42")
    spawn.expect("The sum is 42.")
    spawn.expect("2 requests · 1 tool call")
    spawn.expect(CHAT_PROMPT)

    spawn.sendline("Remove the doomed file")
    spawn.expect("needs approval")
    spawn.expect("allow?")
    spawn.sendline("y")
    spawn.expect("ok: deleted")
    spawn.expect("Removed it.")
    spawn.expect(CHAT_PROMPT)
    assert not doomed.exists()

    spawn.sendline("Remove the other one")
    spawn.expect("allow?")
    spawn.sendline("n")
    spawn.expect("denied")
    spawn.expect("Left it alone.")
    spawn.expect(CHAT_PROMPT)
    assert kept.exists()
    assert "denied" in sent_messages(wire, 5)[-1]["content"]
    # one session: the last request carries the whole conversation
    assert [m["role"] for m in sent_messages(wire, 5) if m["role"] == "user"] == ["user"] * 3

    spawn.sendline("/usage")
    spawn.expect("session [0-9a-f]{12}: ")
    spawn.expect(CHAT_PROMPT)
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)
    spawn.close()
    assert spawn.exitstatus == 0


def test_ctrl_c_cancels_the_turn_and_the_session_goes_on(spawn: pexpect.spawn, wire: WireServer) -> None:
    release = threading.Event()
    slow = text_reply("Once upon a time, in a land far away, there lived a slow model.")
    assert slow.chunks is not None

    def handler(_: Recorded) -> Reply:
        return Reply(slow.status, slow.headers, chunks=SlowChunks(slow.chunks[:2], slow.chunks[2:], release))  # type: ignore[arg-type]

    wire.queue(handler, text_reply("Fine, a short one."))
    try:
        spawn.sendline("Tell me a long story")
        spawn.expect("Once upon")
        spawn.sendintr()
        spawn.expect("turn cancelled; the session goes on")
        spawn.expect(CHAT_PROMPT)
    finally:
        release.set()

    spawn.sendline("A short one then")
    spawn.expect("Fine, a short one.")
    spawn.expect(CHAT_PROMPT)
    messages = sent_messages(wire, 1)
    assert messages[0] == {"role": "user", "content": "Tell me a long story"}
    assert messages[-1] == {"role": "user", "content": "A short one then"}

    spawn.sendintr()  # at the prompt: once warns, twice quits
    spawn.expect("Ctrl-C again")
    spawn.expect(CHAT_PROMPT)  # the prompt is back (reading keys again), so Ctrl-C is a key, not a signal
    spawn.sendintr()
    spawn.expect(pexpect.EOF)
    spawn.close()
    assert spawn.exitstatus == 0


def test_slash_commands(spawn: pexpect.spawn, wire: WireServer) -> None:
    spawn.sendline("/help")
    spawn.expect("/model")
    spawn.expect(CHAT_PROMPT)
    spawn.sendline("/tools")
    spawn.expect("remove_file \\(needs approval\\)")
    spawn.expect(CHAT_PROMPT)
    spawn.sendline("/model nonsense")
    spawn.expect("must look like 'provider:model'")
    spawn.expect(CHAT_PROMPT)
    spawn.sendline("/model openai:gpt-other")
    spawn.expect("model: openai:gpt-other")
    spawn.expect(CHAT_PROMPT)
    wire.queue(text_reply("Hi from the other model."))
    spawn.sendline("hello")
    spawn.expect("Hi from the other model.")
    spawn.expect(CHAT_PROMPT)
    assert wire.requests[0].json["model"] == "gpt-other"
    spawn.sendline("/new")
    spawn.expect("new session [0-9a-f]{12}")
    spawn.expect(CHAT_PROMPT)
    spawn.sendline("/quit")
    spawn.expect(pexpect.EOF)
