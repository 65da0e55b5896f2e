"""Where output goes: the answer (or JSON) on stdout, everything else on stderr.

Colour, spinners and live markdown only when the stream is a terminal; plain, stable lines when
it is piped or redirected.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console, RenderableType
from rich.text import Text

__all__ = ["Terminal"]


def _console(stream: TextIO) -> Console:
    if stream.isatty():
        return Console(file=stream, highlight=False)
    # Piped: no colour, no control codes, no wrapping at an imagined width.
    return Console(file=stream, highlight=False, no_color=True, soft_wrap=True, emoji=False)


@dataclass
class Terminal:
    """The two output streams of a command, and whether each is a terminal."""

    quiet: bool = False
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    def __post_init__(self) -> None:
        self.out = _console(self.stdout)
        self.err = _console(self.stderr)

    @property
    def out_live(self) -> bool:
        """True when the answer may be rendered live (stdout is a terminal)."""
        return self.stdout.isatty()

    @property
    def err_live(self) -> bool:
        """True when spinners and colour may go to stderr (a terminal)."""
        return self.stderr.isatty()

    def note(self, message: str | Text, style: str = "dim") -> None:
        """A progress or activity line on stderr (dropped with ``--quiet``)."""
        if not self.quiet:
            self.show(message, style)

    def show(self, message: RenderableType, style: str = "") -> None:
        """A line on stderr, even with ``--quiet`` (questions, /commands' output in chat)."""
        if isinstance(message, str):
            message = Text(message, style=style)
        self.err.print(message)

    def error(self, message: str) -> None:
        """An error on stderr: ``error: ...``."""
        line = Text("error: ", style="bold red")
        line.append(message)
        self.err.print(line)

    def answer(self, text: str) -> None:
        """Text of the answer on stdout, as it is."""
        self.stdout.write(text)
        self.stdout.flush()
