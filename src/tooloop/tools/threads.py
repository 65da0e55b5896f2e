"""Threads for sync tools and the process-wide concurrency cap of a tool.

A sync tool runs in a thread, and Python cannot stop a thread: a call that timed out, or whose
run was cancelled, goes on until its function returns. So:

* :func:`start_in_thread` runs each call in a daemon worker thread. Idle workers are reused, and
  a new one starts whenever none is idle, so threads abandoned by timed-out calls never starve
  other tools; being daemons, they never hold up the interpreter's exit.
* :class:`Limiter` caps how many calls of a tool run at once across every thread and event loop
  of the process; the caller releases a sync call's slot only when its thread really ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by the first sync call: runs of async tools need no queue module
    import queue

__all__ = ["Limiter", "start_in_thread"]

_IDLE_SECONDS = 30.0
"""How long an idle worker waits for another call before its thread ends."""

_Work = tuple[Callable[[], Any], "Future[Any]"]


class _Workers:
    """Daemon worker threads, each with its own queue; one is started whenever none is idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Work]] = []

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            import queue

            inbox = queue.SimpleQueue()
            threading.Thread(target=self._work, args=(inbox,), name="tooloop-tool", daemon=True).start()
        inbox.put((fn, future))
        return future

    def _work(self, inbox: queue.SimpleQueue[_Work]) -> None:
        import queue

        while True:
            try:
                fn, future = inbox.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # not handed out meanwhile: retire
                        self._idle.remove(inbox)
                        return
                continue  # a submitter took this worker just now: its call is on the way
            _run(fn, future)
            del fn, future  # drop the result before waiting for the next call
            with self._lock:
                self._idle.append(inbox)


def _run(fn: Callable[[], Any], future: Future[Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn()
    except BaseException as exc:  # handed to the caller, whatever it is
        future.set_exception(exc)
    else:
        future.set_result(result)


_WORKERS = _Workers()


def start_in_thread(fn: Callable[[], Any]) -> Future[Any]:
    """Run ``fn`` in a daemon worker thread; the future completes when the thread is done with it."""
    return _WORKERS.submit(fn)


class Limiter:
    """At most ``limit`` holders at once, across every thread and event loop of the process.

    :meth:`acquire` is awaited on any event loop; :meth:`release` may be called from any thread
    (a worker thread releases the slot of a sync call when it ends). Waiters are served in order.
    """

    __slots__ = ("_held", "_limit", "_lock", "_waiters")

    def __init__(self, limit: int):
        self._limit = limit
        self._held = 0
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self) -> None:
        """Wait for a slot."""
        with self._lock:
            if self._held < self._limit and not self._waiters:
                self._held += 1
                return
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove((loop, waiter))
                    raise
                except ValueError:
                    pass  # a slot was handed to this waiter already
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted, but the task was cancelled before it could use it
            raise  # otherwise _grant finds the waiter cancelled and passes the slot on

    def release(self) -> None:
        """Give the slot back: to the next waiter (on its own loop), or to the pool."""
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, waiter)
                    return
                except RuntimeError:  # that waiter's loop is closed
                    continue
            self._held -= 1

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():
            self.release()
        else:
            waiter.set_result(None)
