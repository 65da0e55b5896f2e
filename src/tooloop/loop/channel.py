"""Where a run's events wait for the consumer of ``agent.stream()``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..events import Event

if TYPE_CHECKING:
    from .result import RunResult

__all__ = ["EventChannel"]


class EventChannel(list[Event]):
    """Events from the task that drives a run to the task that consumes them.

    The channel is the list of events the consumer has not taken yet (and, until it waits again,
    some it took), with at most one waiting future beside it: lighter than an ``asyncio.Queue``,
    and one object, not two, that a waiting stream keeps (at a thousand concurrent streams the
    garbage collector scans each). A run hands over a dozen events per request, and a streamed
    answer one per chunk. Producers append and call :meth:`wake` when :attr:`waiter` is set
    (:meth:`put` does both; the run's hot paths do it inline, one function call less per event).
    How the run ended (:attr:`ended`, :attr:`error`) is kept beside the events.
    """

    __slots__ = ("ended", "error", "parked", "result", "waiter")

    def __init__(self) -> None:  # list.__new__ made the empty list: no list.__init__ call to make
        self.waiter: asyncio.Future[None] | None = None
        """Set while the consumer waits for the next event."""
        self.result: RunResult | None = None
        self.ended = False
        self.error: BaseException | None = None
        """What the run raised, handed to the consumer once."""
        self.parked = False
        """True while a consumer waits (from its wait until it goes on, woken or cancelled)."""

    def put(self, event: Event) -> None:
        """Hand over ``event``."""
        self.append(event)
        if self.waiter is not None:
            self.wake()

    def end(self, error: BaseException | None) -> None:
        """No event follows; ``error`` is what the run raised, if it failed."""
        self.error = error
        self.ended = True
        if self.waiter is not None:
            self.wake()

    def wake(self) -> None:
        """Resume the waiting consumer."""
        waiter = self.waiter
        assert waiter is not None
        self.waiter = None
        if not waiter.done():
            waiter.set_result(None)
