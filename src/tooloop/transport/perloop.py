"""One client (a connection pool, or an SDK client) per event loop.

An SDK client's connection pool belongs to the event loop that opened its connections; using it
from another loop (``run_sync`` twice, or a worker thread with its own loop) fails with "Event
loop is closed". Adapters keep their client in a :class:`PerLoop`, which hands out the first
client on the first loop that asks and a fresh one, from the factory, on any other loop.
``run_sync`` closes the clients of its short-lived loop with :func:`close_loop_clients` before
the loop ends, so no connection is left open; a loop that ``asyncio.run`` ends closes the clients
bound to it as it shuts down (through an async generator it finalizes then: the one hook asyncio
gives into a loop's end).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
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
        self,
        first: T,
        factory: Callable[[], T] | None = None,
        closer: Callable[[T], Awaitable[None]] | None = None,
        abandon: Callable[[T], None] | None = None,
    ):
        self.first = first
        self._factory = factory
        self._closer = closer
        self._abandon = abandon
        self._unbound: T | None = first
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = (
            weakref.WeakKeyDictionary()
        )
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
            self._watch(loop)
        self._last = (weakref.ref(loop), client)
        return client

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close the client of ``loop`` when the loop shuts its async generators down (``asyncio.run``'s end)."""
        if self._closer is None:
            return
        watcher = _until_shutdown(weakref.ref(self))
        try:
            watcher.asend(None).send(None)  # runs to its yield: the loop now holds it until its shutdown
        except StopIteration:
            pass
        self._watchers[loop] = watcher

    def all(self) -> list[T]:
        """Every client handed out and not yet closed."""
        clients = list(self._clients.values())
        return clients if self._factory is not None else [self.first]

    async def aclose(self) -> None:
        """Close every client this object holds (the model's ``aclose``).

        A client bound to another event loop (one ``asyncio.run`` already closed) cannot be
        closed from this one: it is let go, its sockets closed by ``abandon`` if one was given.
        """
        if self._closer is None:
            return
        running = asyncio.get_running_loop()
        here = [client for loop, client in self._clients.items() if loop is running]
        elsewhere = [client for loop, client in self._clients.items() if loop is not running]
        if self._unbound is not None:
            here.append(self._unbound)
        self._clients.clear()
        self._last = (None, None)
        self._unbound = None
        for client in elsewhere:
            if self._abandon is not None:
                self._abandon(client)
        for client in here:
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


async def _until_shutdown(holder: weakref.ref[PerLoop[Any]]) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        owner = holder()
        if owner is not None:
            await owner.close_for(asyncio.get_running_loop())


async def close_loop_clients() -> None:
    """Close every adapter client bound to the running loop (called before a private loop ends)."""
    loop = asyncio.get_running_loop()
    for holder in list(_ALL):
        await holder.close_for(loop)
