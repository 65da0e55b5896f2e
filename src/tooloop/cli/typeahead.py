"""Lines the user types in ``tooloop chat`` while a turn runs (steering and follow-ups).

While a turn runs the terminal is put in cbreak mode: keys are read one by one without the
kernel echoing them (the turn's view draws the line being typed), and Ctrl-C still sends SIGINT,
so it keeps cancelling the turn. Enter hands the line over; Backspace, Ctrl-U and Ctrl-W edit it;
other control keys and escape sequences (arrows) are ignored. Reading pauses while a question is
asked (approvals, an MCP server's questions), so what is typed then answers the question.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Callable
from typing import Any

__all__ = ["LineEditor", "Typeahead", "restore_keyboard"]

_ENTER = frozenset("\r\n")
_BACKSPACE = frozenset("\x7f\x08")
_KILL_LINE = "\x15"  # Ctrl-U
_KILL_WORD = "\x17"  # Ctrl-W
_ESCAPE = "\x1b"


class LineEditor:
    """The line being typed: characters in, finished lines out."""

    __slots__ = ("_escape", "draft")

    def __init__(self, draft: str = ""):
        self.draft = draft
        self._escape = ""  # an escape sequence being skipped: "", ESC, ESC [ ..., ESC O

    def feed(self, text: str) -> list[str]:
        """Take typed characters; the lines they finished (blank lines are dropped)."""
        lines: list[str] = []
        for char in text:
            if self._escape:
                self._skip(char)
            elif char == _ESCAPE:
                self._escape = char
            elif char in _ENTER:
                if self.draft.strip():
                    lines.append(self.draft)
                self.draft = ""
            else:
                self._edit(char)
        return lines

    def _skip(self, char: str) -> None:
        if self._escape == _ESCAPE:
            self._escape = _ESCAPE + char if char in "[O" else ""  # ESC x (Alt-x): both dropped
        elif self._escape.endswith("O") and len(self._escape) == 2:
            self._escape = ""  # ESC O x: one final character
        elif "\x40" <= char <= "\x7e":
            self._escape = ""  # the final byte of ESC [ ...
        else:
            self._escape += char

    def _edit(self, char: str) -> None:
        if char in _BACKSPACE:
            self.draft = self.draft[:-1]
        elif char == _KILL_LINE:
            self.draft = ""
        elif char == _KILL_WORD:
            head, sep, _ = self.draft.rstrip().rpartition(" ")
            self.draft = head + sep
        elif char == "\t":
            self.draft += " "
        elif char.isprintable():
            self.draft += char


_ACTIVE: list[Typeahead] = []


def restore_keyboard() -> None:
    """Give the terminal back its own mode (before an immediate exit that runs no cleanup)."""
    for typeahead in list(_ACTIVE):
        typeahead.pause()


class Typeahead:
    """Reads the terminal ``fd`` from the event loop while a turn runs.

    ``on_line`` gets each finished line, ``on_draft`` the line being typed after each key.
    :meth:`pause` gives the terminal back (for a question, or for good), :meth:`resume` takes it
    again; what was typed but not finished stays in :attr:`draft`.
    """

    def __init__(self, fd: int, on_line: Callable[[str], None], on_draft: Callable[[str], None], draft: str = ""):
        self.fd = fd
        self.on_line = on_line
        self.on_draft = on_draft
        self.editor = LineEditor(draft)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._saved: list[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def available(fd: int) -> bool:
        """True when ``fd`` is a terminal whose keys can be read this way (not on Windows)."""
        try:
            import termios  # noqa: F401
        except ImportError:
            return False
        return os.isatty(fd)

    @property
    def draft(self) -> str:
        """What was typed and not yet finished with Enter."""
        return self.editor.draft

    @property
    def reading(self) -> bool:
        """True while keys are read here."""
        return self._saved is not None

    def resume(self) -> None:
        """Read keys here (cbreak mode, no echo); nothing when already reading."""
        if self._saved is not None:
            return
        import termios

        loop = asyncio.get_running_loop()
        try:
            saved = termios.tcgetattr(self.fd)
            cbreak = termios.tcgetattr(self.fd)
            cbreak[3] &= ~(termios.ECHO | termios.ICANON)  # ISIG stays: Ctrl-C is still SIGINT
            cbreak[6][termios.VMIN], cbreak[6][termios.VTIME] = 1, 0
            termios.tcsetattr(self.fd, termios.TCSANOW, cbreak)  # keys typed before stay to be read
            loop.add_reader(self.fd, self._readable)
        except (OSError, termios.error, NotImplementedError):
            return  # not a terminal we can drive: the line is typed after the turn, as before
        self._saved, self._loop = saved, loop
        _ACTIVE.append(self)

    def pause(self) -> None:
        """Give the terminal back its mode and stop reading; nothing when not reading."""
        if self._saved is None:
            return
        import termios

        saved, self._saved = self._saved, None
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self.fd)
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)
        except (OSError, termios.error):
            pass

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the terminal went away
            self.pause()
            return
        lines = self.editor.feed(self._decoder.decode(data))
        for line in lines:
            self.on_line(line)
        self.on_draft(self.editor.draft)
