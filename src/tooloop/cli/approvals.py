"""Approvals at the command line: ``--approve ask|all|none``, asked y/n/always on the terminal."""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import Awaitable, Callable
from typing import IO

from ..loop.result import ApprovalDecision, ApprovalRequest
from .view import TurnView

__all__ = ["Approve", "Asker", "CommandApprover", "read_line"]

Asker = Callable[[str], Awaitable[str | None]]
"""Asks a question and returns the answer line, or None when nobody can answer."""


class Approve(enum.StrEnum):
    """``--approve``: who decides on tool calls that need approval."""

    ASK = "ask"
    """Ask on the terminal (with no terminal the run stops, waiting for a decision)."""
    ALL = "all"
    """Allow every call."""
    NONE = "none"
    """Deny every call (the model is told it was denied)."""


async def read_line(stream: IO[str]) -> str | None:
    """One line from ``stream`` without blocking the event loop (None at end of input).

    The read runs in a daemon thread, so a question left unanswered never keeps the process alive.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def settle(line: str) -> None:
        if not future.done():
            future.set_result(line)

    def work() -> None:
        try:
            line = stream.readline()
        except (OSError, ValueError):
            line = ""
        try:
            loop.call_soon_threadsafe(settle, line)
        except RuntimeError:  # the loop closed while we waited
            pass

    threading.Thread(target=work, daemon=True, name="tooloop-read-line").start()
    line = await future
    return line.rstrip("\r\n") if line else None


class CommandApprover:
    """The approver a command passes to the agent: decides per ``--approve`` or asks.

    "always" allows every later call of that tool in this process.
    """

    def __init__(self, mode: Approve, view: TurnView, ask: Asker | None, on_interrupt: Callable[[], None]):
        self.mode = mode
        self.view = view
        self._ask = ask
        self._on_interrupt = on_interrupt
        self.always: set[str] = set()

    @property
    def can_decide(self) -> bool:
        """False when calls must wait: ``ask`` with nobody to ask."""
        return self.mode is not Approve.ASK or self._ask is not None

    async def __call__(self, request: ApprovalRequest) -> bool | ApprovalDecision:
        if self.mode is Approve.ALL or request.tool_name in self.always:
            return True
        if self.mode is Approve.NONE:
            return request.deny(f"calls to {request.tool_name!r} are not allowed in this session (--approve none)")
        return await self._question(request)

    async def _question(self, request: ApprovalRequest) -> bool | ApprovalDecision:
        assert self._ask is not None
        await self.view.begin_question(request)
        try:
            return await self._answer(request, self._ask)
        finally:
            self.view.end_question()

    async def _answer(self, request: ApprovalRequest, ask: Asker) -> bool | ApprovalDecision:
        while True:
            try:
                answer = await ask("  allow? [y]es / [n]o / [a]lways for this tool: ")
            except KeyboardInterrupt:
                self._on_interrupt()
                return request.deny("the user cancelled the turn")
            choice = (answer or "n").strip().lower()
            if choice in ("y", "yes"):
                return True
            if choice in ("a", "always"):
                self.always.add(request.tool_name)
                return True
            if choice in ("n", "no"):
                return request.deny(f"the user denied this call to {request.tool_name!r}")
            self.view.term.show("  please answer y, n or a")
