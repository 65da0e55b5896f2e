"""One client (a connection pool, or an SDK client) per event loop.

An SDK client's connection pool belongs to the event loop that opened its connections; using it
from another loop (``run_sync`` twice, or a worker thread with its own loop) fails with "Event
loop is closed". Adapters keep their client in a :class:`PerLoop`, which hands out the first
client on the first loop that asks and a fresh one, from the factory, on any other loop.
``run_sync`` closes the clients of its short-lived loop with :func:`close_loop_clients` before
the loop ends, so no connection is left open.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["PerLoop", "close_loop_clients"]

_ALL: weakref.WeakSet[PerLoop[Any]] = weakref.WeakSet()


class PerLoop(Generic[T]):
    """``first`` on the first loop that uses it; ``factory()`` once per other loop.

    Without a factory (a client the user built) the same client serves every loop and tooloop
    never closes it.
    """

    def __init__(
        self, first: T, factory: Callable[[], T] | None = None, closer: Callable[[T], Awaitable[None]] | None = None
    ):
        self.first = first
        self._factory = factory
        self._closer = closer
        self._unbound: T | None = first
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        # The client the last get() returned and its loop: one loop asks again and again.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop] | None, T | None] = (None, None)
        _ALL.add(self)

    def get(self) -> T:
        """The client for the running loop."""
        if self._factory is None:
            return self.first
        loop = asyncio.get_running_loop()
        last_loop, last_client = self._last
        if last_loop is not None and last_loop() is loop:
            return last_client  # type: ignore[return-value]
        client = self._clients.get(loop)
        if client is None:
            if self._unbound is not None:
                client, self._unbound = self._unbound, None
            else:
                client = self._factory()
            self._clients[loop] = client
        self._last = (weakref.ref(loop), client)
        return client

    def all(self) -> list[T]:
        """Every client handed out and not yet closed."""
        clients = list(self._clients.values())
        return clients if self._factory is not None else [self.first]

    async def aclose(self) -> None:
        """Close every client this object holds (the model's ``aclose``)."""
        if self._closer is None:
            return
        clients = {id(c): c for c in [self.first, *self._clients.values()]}
        self._clients.clear()
        self._last = (None, None)
        self._unbound = None
        for client in clients.values():
            await self._closer(client)

    async def close_for(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close the client bound to ``loop``, if this object made it."""
        if self._factory is None or self._closer is None:
            return
        client = self._clients.pop(loop, None)
        if self._last[1] is client:
            self._last = (None, None)
        if client is not None:
            await self._closer(client)


async def close_loop_clients() -> None:
    """Close every adapter client bound to the running loop (called before a private loop ends)."""
    loop = asyncio.get_running_loop()
    for holder in list(_ALL):
        await holder.close_for(loop)
