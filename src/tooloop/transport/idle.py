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
import time
from collections import deque

__all__ = ["Expiry"]

_COMPACT_AT = 256
"""Queued entries past which a queue whose oldest wait is still pending is rid of its settled ones."""


class Expiry:
    """Fails each watched future with ``TimeoutError`` ``seconds`` after it was watched, unless it is done by then.

    One per pool and event loop; it holds no reference to the pool. Its timer is armed only while a
    watched future is pending, and keeps it until then (at most ``seconds`` after the last wait).
    """

    __slots__ = ("_compact_at", "_dues", "_seconds", "_time", "_timer", "_waiters", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        """The event loop whose clock and timer it uses."""
        # asyncio's own clock is the monotonic one: read it without a call through the loop
        self._time = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        self._seconds = seconds
        # Two queues in step rather than one of pairs: no tuple made, and tracked, per wait.
        self._dues: deque[float] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._compact_at = _COMPACT_AT

    def watch(self, waiter: asyncio.Future[None]) -> None:
        """Fail ``waiter`` with ``TimeoutError`` if it is still pending when its time is up."""
        waiters = self._waiters
        while waiters and waiters[0].done():  # the usual case: the waits before it have ended
            waiters.popleft()
            self._dues.popleft()
        if len(waiters) >= self._compact_at:
            self._compact()
        due = self._time() + self._seconds
        self._dues.append(due)
        self._waiters.append(waiter)
        if self._timer is None:
            self._timer = self.loop.call_at(due, self._fire)

    def _compact(self) -> None:
        """Drop the settled entries kept behind a long wait (a quiet stream) at the head."""
        pending = [(due, waiter) for due, waiter in zip(self._dues, self._waiters, strict=True) if not waiter.done()]
        self._dues = deque(due for due, _ in pending)
        self._waiters = deque(waiter for _, waiter in pending)
        self._compact_at = max(_COMPACT_AT, 2 * len(pending))

    def _fire(self) -> None:
        self._timer = None
        dues, waiters = self._dues, self._waiters
        now = self._time()
        while waiters:
            waiter = waiters[0]
            if not waiter.done():
                if dues[0] > now:
                    self._timer = self.loop.call_at(dues[0], self._fire)
                    return
                waiter.set_exception(TimeoutError())
            waiters.popleft()
            dues.popleft()
