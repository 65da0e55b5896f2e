"""Timeouts on hot paths without a timer per scope.

``asyncio.timeout()`` schedules a timer handle when it is entered and cancels it when it is left;
on the paths that run for every read of every HTTP response and every tool call, at thousands of
concurrent conversations, that is a measurable share of the loop's CPU. :func:`deadline` keeps
the same promise (the task is cancelled when the time is up and the scope raises
``TimeoutError``) with one timer per event loop: the scopes of one duration sit in a queue in the
order they were entered, which is also the order in which they expire, and a single timer is
armed for the earliest deadline of all queues.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from types import TracebackType

__all__ = ["Scope", "deadline"]

_LIVE, _LEFT, _EXPIRED = 0, 1, 2
_COMPACT_AT = 64  # finished scopes a queue may hold behind a live head before it is rebuilt


class Scope:
    """One ``with deadline(seconds):`` block; :attr:`expired` once its time ran out."""

    __slots__ = ("_cancelling", "_queue", "_state", "_task", "deadline")

    def __init__(self, deadline: float, task: asyncio.Task[object], queue: _Queue) -> None:
        self.deadline = deadline
        self._task = task
        self._cancelling = task.cancelling()
        self._queue = queue
        self._state = _LIVE

    @property
    def expired(self) -> bool:
        """True when the time ran out while the block was running."""
        return self._state == _EXPIRED

    def __enter__(self) -> Scope:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._state == _LIVE:
            self._state = _LEFT
            self._queue.left()
        elif self._state == _EXPIRED:
            # Our cancel is taken back even when the block swallowed it; the CancelledError is
            # ours to turn into TimeoutError only if no other cancellation is pending (the same
            # rules as asyncio.timeout).
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def _expire(self) -> None:
        self._state = _EXPIRED
        self._task.cancel()


class _Queue:
    """The scopes of one duration, in the order they expire."""

    __slots__ = ("finished", "scopes")

    def __init__(self) -> None:
        self.scopes: deque[Scope] = deque()
        self.finished = 0  # scopes that left but are still queued

    def left(self) -> None:
        self.finished += 1
        scopes = self.scopes
        while scopes and scopes[0]._state != _LIVE:  # the usual case: the oldest scope left first
            scopes.popleft()
            self.finished -= 1
        if self.finished > _COMPACT_AT and self.finished * 2 > len(scopes):
            self.scopes = deque(s for s in scopes if s._state == _LIVE)
            self.finished = 0

    def expire_until(self, now: float) -> float:
        """Expire every live scope due by ``now``; the next deadline (inf when empty)."""
        scopes = self.scopes
        while scopes:
            head = scopes[0]
            if head._state == _LIVE:
                if head.deadline > now:
                    return head.deadline
                head._expire()
            else:
                self.finished -= 1
            scopes.popleft()
        return math.inf


class _Wheel:
    """Every deadline of one event loop, behind one timer."""

    __slots__ = ("_armed", "_loop", "_queues", "_time", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # asyncio's own clock is the monotonic one: read it without a call through the loop
        self._time = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        self._queues: dict[float, _Queue] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._armed = math.inf

    def enter(self, seconds: float, task: asyncio.Task[object], started: float | None = None) -> Scope:
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = _Queue()
        scope = Scope((self._time() if started is None else started) + seconds, task, queue)
        scopes = queue.scopes
        if started is not None and scopes and scopes[-1].deadline > scope.deadline:
            _insert_in_order(scopes, scope)
        else:
            scopes.append(scope)
        if scope.deadline < self._armed:
            self._arm(scope.deadline)
        return scope

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed = when
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer, self._armed = None, math.inf
        now = self._time()
        upcoming = math.inf
        for seconds, queue in list(self._queues.items()):
            due = queue.expire_until(now)
            if due == math.inf:
                del self._queues[seconds]
            upcoming = min(upcoming, due)
        if upcoming != math.inf:
            self._arm(upcoming)


_last: tuple[asyncio.AbstractEventLoop | None, _Wheel | None] = (None, None)
_wheels: dict[asyncio.AbstractEventLoop, _Wheel] = {}


def _insert_in_order(scopes: deque[Scope], scope: Scope) -> None:
    """Put ``scope`` (whose time started before it was entered) before the scopes expiring later."""
    at = len(scopes)
    while at and scopes[at - 1].deadline > scope.deadline:
        at -= 1
    scopes.insert(at, scope)


def deadline(seconds: float, *, started: float | None = None) -> Scope:
    """A scope that cancels the current task after ``seconds`` and then raises ``TimeoutError``.

    Use it as ``with deadline(30):`` around awaits, where ``asyncio.timeout(30)`` would go.
    ``started``: the time counts from this reading of the event loop's clock instead of from now
    (work that began earlier in the same task, entered only once it first waits).
    """
    global _last
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("deadline() needs a running task")
    loop = task.get_loop()
    seen_loop, wheel = _last
    if seen_loop is not loop or wheel is None:
        wheel = _wheel_of(loop)
        _last = (loop, wheel)
    return wheel.enter(seconds, task, started)


def _wheel_of(loop: asyncio.AbstractEventLoop) -> _Wheel:
    wheel = _wheels.get(loop)
    if wheel is None:
        for closed in [other for other in list(_wheels) if other.is_closed()]:  # loops that ended (run_sync's)
            _wheels.pop(closed, None)  # another thread may have dropped it already
        wheel = _wheels[loop] = _Wheel(loop)
    return wheel
