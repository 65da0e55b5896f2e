"""One SDK client per event loop.

An SDK client's connection pool belongs to the event loop that opened its connections; using it
from another loop (``run_sync`` twice, or a worker thread with its own loop) fails with "Event
loop is closed". Adapters keep their client in a :class:`PerLoop`, which hands out the first
client on the first loop that asks and a fresh one, from the factory, on any other loop.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["PerLoop"]


class PerLoop(Generic[T]):
    """``first`` on the first loop that uses it; ``factory()`` once per other loop.

    Without a factory (a client the user built) the same client serves every loop.
    """

    def __init__(self, first: T, factory: Callable[[], T] | None = None):
        self.first = first
        self._factory = factory
        self._first_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._others: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()

    def get(self) -> T:
        """The client for the running loop."""
        if self._factory is None:
            return self.first
        loop = asyncio.get_running_loop()
        if self._first_loop is None:
            self._first_loop = weakref.ref(loop)
        if self._first_loop() is loop:
            return self.first
        client = self._others.get(loop)
        if client is None:
            client = self._others[loop] = self._factory()
        return client

    def all(self) -> list[T]:
        """Every client handed out so far."""
        return [self.first, *self._others.values()]
