"""``tooloop run`` and ``tooloop chat`` under a pseudo-terminal: what a person sees."""

from __future__ import annotations

import io
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pexpect
import pyte
import pytest

from tests.cli.conftest import MODEL, TERMINAL_SIZE, Cli, SlowChunks, in_terminal, text_reply
from tests.support.wire import Reply, WireServer


def _spawn(cli: Cli, *args: str) -> pexpect.spawn:
    """The command under a pseudo-terminal, every byte it writes kept in ``logfile_read``."""
    env = dict(cli.env)
    env.pop("NO_COLOR", None)
    child = in_terminal(env, cli.cwd, *args)
    child.logfile_read = io.StringIO()
    return child


ROWS, COLUMNS = TERMINAL_SIZE


def screen_of(output: str) -> list[str]:
    """The lines a terminal shows after ``output`` (cursor moves and erasures applied)."""
    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.Stream(screen)
    stream.feed(output.replace("\r\n", "\n").replace("\n", "\r\n"))
    return [line.rstrip() for line in screen.display if line.strip()]


def _all_output(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.logfile_read.getvalue())  # type: ignore[union-attr]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _slow(wire: WireServer, text: str, release: threading.Event) -> threading.Event:
    """The model streams the first half of ``text``, then waits for ``release``."""
    started = threading.Event()
    reply = text_reply(text)
    assert reply.chunks is not None

    def handler(_: object) -> Reply:
        started.set()
        chunks: Any = SlowChunks(reply.chunks[:2], reply.chunks[2:], release)  # type: ignore[index]
        return Reply(reply.status, reply.headers, chunks=chunks)

    wire.queue(handler)
    return started


def test_ctrl_c_mid_answer_shows_the_partial_answer_once(cli: Cli, wire: WireServer, release: threading.Event) -> None:
    started = _slow(wire, "PARTIALWORDS and the rest", release)
    child = _spawn(cli, "run", "Tell a story", "--model", MODEL)
    try:
        assert started.wait(60)
        child.expect("PARTIALWORD")
        child.kill(signal.SIGINT)
        seen = screen_of(_all_output(child))
    finally:
        release.set()
    assert child.exitstatus == 130
    assert any("cancelled; the session is kept" in line for line in seen), seen
    assert sum(line.count("PARTIALWORD") for line in seen) == 1, seen


def test_terminal_answer_keeps_single_line_breaks(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("first line\nsecond line\nthird line"))
    child = _spawn(cli, "run", "List three", "--model", MODEL)
    seen = screen_of(_all_output(child))
    assert child.exitstatus == 0, seen
    assert ["first line", "second line", "third line"] == [s for s in seen if s.endswith(" line")], seen
