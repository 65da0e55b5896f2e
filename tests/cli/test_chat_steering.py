"""Typing while a ``tooloop chat`` turn runs, under a pseudo-terminal (pexpect): steering reaches
the model's next request and the stored session in the order the model saw it; follow-ups start
the next turn; Ctrl-C still cancels; an approval question takes the keys while it is asked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pexpect

from tests.cli.conftest import CHAT_PROMPT, Cli, SlowChunks, call_reply, sent_messages, text_reply
from tests.support.wire import Recorded, Reply, WireServer


def held(reply: Reply, release: threading.Event, first: int = 1) -> Callable[[Recorded], Reply]:
    """``reply`` whose stream stops after ``first`` chunks until ``release`` is set."""
    chunks = list(reply.chunks or ())

    def handler(_: Recorded) -> Reply:
        return Reply(reply.status, reply.headers, chunks=SlowChunks(chunks[:first], chunks[first:], release))  # type: ignore[arg-type]

    return handler


def wait_for_requests(wire: WireServer, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(wire.requests) < count:
        assert time.monotonic() < deadline, f"the model got {len(wire.requests)} requests, not {count}"
        time.sleep(0.05)


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def stored(cli: Cli) -> list[dict[str, Any]]:
    """The messages of the chat's session, as the store keeps them."""
    listed = cli("sessions", "list", "--json")
    session_id = json.loads(listed.stdout)[0]["id"]
    shown = cli("sessions", "show", session_id, "--json")
    assert shown.returncode == 0, shown.stderr
    messages: list[dict[str, Any]] = json.loads(shown.stdout)["messages"]
    return messages


def test_a_line_typed_while_a_tool_call_is_prepared_reaches_the_next_request(
    spawn: pexpect.spawn, wire: WireServer, cli: Cli
) -> None:
    release = threading.Event()
    wire.queue(held(call_reply("add", {"a": 2, "b": 40}), release), text_reply("It is 0x2a."))
    try:
        spawn.sendline("What is 2 + 40?")
        wait_for_requests(wire, 1)  # the model is answering, slowly
        spawn.send("answer in hex\r")
        spawn.expect("queued: answer in hex")
        spawn.send("/session\r")  # a command waits for the end of the turn
        spawn.expect("after this turn: /session")
    finally:
        release.set()
    spawn.expect("ok: 42")
    spawn.expect("delivered: answer in hex")
    spawn.expect("It is 0x2a.")
    spawn.expect("continue it with 'tooloop chat --session")
    spawn.expect(CHAT_PROMPT)

    second = sent_messages(wire, 1)
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "user"]
    assert user_texts(second) == ["What is 2 + 40?", "answer in hex"]
    kinds = [(m["kind"], m.get("text")) for m in stored(cli)]
    assert kinds == [
        ("user", "What is 2 + 40?"),
        ("tool_call", None),  # the response was its call alone
        ("user", "answer in hex"),
        ("assistant", "It is 0x2a."),
    ]
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)


def test_a_line_typed_during_the_answer_and_one_after_it_are_not_lost(
    spawn: pexpect.spawn, wire: WireServer, cli: Cli
) -> None:
    release = threading.Event()
    story = text_reply("Once upon a time there was a model that talked and talked.")
    wire.queue(held(story, release, first=2), text_reply("Short story."), text_reply("You are welcome."))
    try:
        spawn.sendline("Tell me a story")
        spawn.expect("Once upon")
        spawn.send("make it short\r")
        spawn.expect("queued: make it short")
    finally:
        release.set()
    spawn.expect("delivered: make it short")  # the run goes on for one more request
    spawn.expect("Short story.")
    spawn.send("thanks\r")  # right after the answer, before the prompt is back
    spawn.expect("You are welcome.")
    spawn.expect(CHAT_PROMPT)

    assert len(wire.requests) == 3
    assert user_texts(sent_messages(wire, 1)) == ["Tell me a story", "make it short"]
    assert sent_messages(wire, 1)[-2]["content"].startswith("Once upon a time")
    assert user_texts(sent_messages(wire, 2)) == ["Tell me a story", "make it short", "thanks"]
    kinds = [(m["kind"], m.get("text")) for m in stored(cli)]
    assert kinds == [
        ("user", "Tell me a story"),
        ("assistant", "Once upon a time there was a model that talked and talked."),
        ("user", "make it short"),
        ("assistant", "Short story."),
        ("user", "thanks"),
        ("assistant", "You are welcome."),
    ]
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)


def test_ctrl_c_still_cancels_and_undelivered_steering_comes_back_in_the_prompt(
    spawn: pexpect.spawn, wire: WireServer
) -> None:
    release = threading.Event()
    wire.queue(held(text_reply("A very long answer that never ends."), release, first=2), text_reply("Noted."))
    try:
        spawn.sendline("Explain everything")
        spawn.expect("A very long")
        spawn.send("skip the history\r")
        spawn.expect("queued: skip the history")
        spawn.sendintr()
        spawn.expect("turn cancelled; the session goes on")
        spawn.expect("not delivered \\(the turn stopped\\), back in your prompt: skip the history")
        spawn.expect(CHAT_PROMPT)
        spawn.expect("skip the history")
    finally:
        release.set()
    spawn.send("\r")  # sends what came back in the prompt
    spawn.expect("Noted.")
    spawn.expect(CHAT_PROMPT)
    assert user_texts(sent_messages(wire, 1)) == ["Explain everything", "skip the history"]
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)


def test_keys_typed_at_an_approval_question_answer_it_and_a_draft_survives_it(
    spawn: pexpect.spawn, wire: WireServer, cli: Cli
) -> None:
    doomed = cli.cwd / "doomed.txt"
    doomed.write_text("x")
    first, second = threading.Event(), threading.Event()
    wire.queue(
        held(call_reply("remove_file", {"path": str(doomed)}), first),
        held(call_reply("add", {"a": 1, "b": 1}, call_id="call_2"), second),
        text_reply("Removed, logs next."),
    )
    try:
        spawn.sendline("Remove the doomed file")
        wait_for_requests(wire, 1)
        spawn.send("then check")  # not finished: still being typed when the question comes
        spawn.expect("steer> then check")
        first.set()
        spawn.expect("allow\\?")
        spawn.send("y\r")  # answers the question: not steering
        spawn.expect("ok: deleted")
        wait_for_requests(wire, 2)
        spawn.send(" the logs\r")  # the draft is still there after the question
        spawn.expect("queued: then check the logs")
    finally:
        first.set()
        second.set()
    spawn.expect("delivered: then check the logs")
    spawn.expect("Removed, logs next.")
    spawn.expect(CHAT_PROMPT)
    assert not doomed.exists()
    assert sent_messages(wire, 1)[-1]["content"] == f"deleted {doomed}"  # "y" was the answer, not a message
    assert user_texts(sent_messages(wire, 1)) == ["Remove the doomed file"]
    third = sent_messages(wire, 2)
    assert [m["role"] for m in third] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert user_texts(third) == ["Remove the doomed file", "then check the logs"]
    spawn.sendline("/exit")
    spawn.expect(pexpect.EOF)


def test_the_line_editor_of_keys_typed_during_a_turn() -> None:
    from tooloop.cli.typeahead import LineEditor

    editor = LineEditor("kept ")
    assert editor.feed("draft\r") == ["kept draft"]
    assert editor.feed("abc\x7fd\x1b[D\x1bOAe\x1b[1;5Cf") == []  # backspace; arrows (CSI, SS3) skipped
    assert editor.draft == "abdef"
    assert editor.feed(" two words\x17x\n") == ["abdef two x"]  # Ctrl-W drops the last word
    assert editor.feed("gone\x15\r\n  \rnew\tline\x01\n") == ["new line"]  # Ctrl-U; blank lines dropped
    assert editor.feed("é") == [] and editor.draft == "é"
