"""Live pages: one watcher per watched session tells every open page when the session changes.

Another process may be writing the session, so the store cannot call us back: one task per
watched session (however many pages show it) reads the session's activity a few times a second
(its version, and when a running call last reported progress: one indexed single-row read) and
wakes the pages' event streams when it moves. What only this server knows about a session (the
state of a run it started) is part of the mark too, so a run that ends after its last message was
written still reaches the page.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from ..errors import SessionNotFoundError, StoreError
from ..store import BaseStore

__all__ = ["Watchers"]


class _Watch:
    def __init__(self) -> None:
        self.version = ""
        self.listeners: set[asyncio.Queue[str]] = set()
        self.task: asyncio.Task[None] | None = None


class Watchers:
    """Shared watchers of session versions."""

    def __init__(self, store: BaseStore, interval: float = 0.25, local: Callable[[str], str] = lambda sid: ""):
        self._store = store
        self._interval = interval
        self._local = local
        self._watches: dict[str, _Watch] = {}

    async def changes(self, session_id: str) -> AsyncIterator[str]:
        """A mark of the session's state (its version and its calls' latest progress) now and each
        time it changes, until the caller stops reading."""
        watch = self._watches.setdefault(session_id, _Watch())
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=1)
        if watch.version:  # already watched (another page, or the one this page replaces): the mark now
            queue.put_nowait(watch.version)
        watch.listeners.add(queue)
        if watch.task is None:
            watch.task = asyncio.create_task(self._watch(session_id, watch))
        try:
            while True:
                yield await queue.get()
        finally:
            watch.listeners.discard(queue)
            if not watch.listeners and watch.task is not None:
                watch.task.cancel()
                self._watches.pop(session_id, None)

    async def _watch(self, session_id: str, watch: _Watch) -> None:
        while True:
            with contextlib.suppress(SessionNotFoundError, StoreError):
                count, progressed = await self._store.activity(session_id)
                version = f"{count}" if progressed is None else f"{count}.{progressed:.6f}"
                if local := self._local(session_id):
                    version = f"{version}-{local}"
                if version != watch.version:
                    watch.version = version
                    for queue in watch.listeners:
                        _put_latest(queue, version)
            await asyncio.sleep(self._interval)

    async def close(self) -> None:
        """Stop every watcher."""
        tasks = [w.task for w in self._watches.values() if w.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._watches.clear()


def _put_latest(queue: asyncio.Queue[str], version: str) -> None:
    # A slow page needs only the newest version: drop the one it has not read yet.
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(version)
