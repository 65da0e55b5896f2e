"""The idle timeout of a pool's reads: futures that fail with ``TimeoutError`` when their time is up.

Every read of every response waits on a future (:meth:`.http.Connection.waiter`) for at most the
idle timeout. A cancel scope around each wait (``asyncio.timeout``, or even the one timer per loop
of :func:`tooloop._deadline.deadline`) costs more than the wait itself at a thousand requests in
flight; here the future is the scope: it is queued with its due time, and one timer fails the
first due future that is still pending with ``TimeoutError``. The waits of one pool all last the
same, so the queue is in the order they expire.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Expiry"]

_COMPACT_AT = 256
"""Queued entries past which a queue whose oldest wait is still pending is rid of its settled ones."""


class Expiry:
    """Fails each watched future with ``TimeoutError`` ``seconds`` after it was watched, unless it is done by then.

    One per pool and event loop; it holds no reference to the pool. Its timer is armed only while a
    watched future is pending, and keeps it until then (at most ``seconds`` after the last wait).
    """

    __slots__ = ("_compact_at", "_queue", "_seconds", "_time", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        """The event loop whose clock and timer it uses."""
        self._time = loop.time
        self._seconds = seconds
        self._queue: deque[tuple[float, asyncio.Future[None]]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._compact_at = _COMPACT_AT

    def watch(self, waiter: asyncio.Future[None]) -> None:
        """Fail ``waiter`` with ``TimeoutError`` if it is still pending when its time is up."""
        queue = self._queue
        while queue and queue[0][1].done():  # the usual case: the waits before it have ended
            queue.popleft()
        if len(queue) >= self._compact_at:
            self._compact()
        due = self._time() + self._seconds
        queue.append((due, waiter))
        if self._timer is None:
            self._timer = self.loop.call_at(due, self._fire)

    def _compact(self) -> None:
        """Drop the settled entries kept behind a long wait (a quiet stream) at the head."""
        queue = self._queue = deque(entry for entry in self._queue if not entry[1].done())
        self._compact_at = max(_COMPACT_AT, 2 * len(queue))

    def _fire(self) -> None:
        self._timer = None
        queue = self._queue
        now = self._time()
        while queue:
            due, waiter = queue[0]
            if not waiter.done():
                if due > now:
                    self._timer = self.loop.call_at(due, self._fire)
                    return
                waiter.set_exception(TimeoutError())
            queue.popleft()
