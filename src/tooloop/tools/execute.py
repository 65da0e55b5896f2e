"""Running the tool calls of one model response: concurrently, with caps, barriers and timeouts.

Slots (``max_concurrency``), barriers (``sequential``), threads and timeouts meet here. A sync
call that times out (or whose run is cancelled) cannot be stopped: its thread goes on until the
function returns, so its slot and its barrier are held until then (:class:`Lingering`), while
the caller gets its :class:`~tooloop.errors.ToolTimeoutError` at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from .._deadline import deadline
from ..errors import ToolTimeoutError
from .tool import Tool, ToolContext, finish_sync

__all__ = ["Lingering", "invoke", "run_concurrently"]

T = TypeVar("T")


class Lingering:
    """The threads of one run's sync calls that may still be running.

    A sequential call waits for all of them before it starts, and no call starts while the
    thread of a sequential call still runs (even after it timed out, in a later batch too).
    """

    __slots__ = ("_threads",)

    def __init__(self) -> None:
        self._threads: list[tuple[Future[Any], bool]] = []

    def add(self, thread: Future[Any], sequential: bool) -> None:
        """Track ``thread`` (of a ``sequential`` tool or not) until it ends."""
        self._threads.append((thread, sequential))

    async def wait(self, *, everything: bool) -> None:
        """Wait until the threads of sequential calls (``everything``: of all calls) have ended."""
        self._threads = [(t, s) for t, s in self._threads if not t.done()]
        pending = [asyncio.wrap_future(t) for t, s in self._threads if everything or s]
        if pending:
            await asyncio.wait(pending)


async def run_concurrently(
    items: Sequence[T],
    run_one: Callable[[T], Awaitable[None]],
    sequential: Callable[[T], bool],
    lingering: Lingering | None = None,
) -> None:
    """Run ``run_one`` over ``items`` at once, except that a sequential item runs alone.

    A sequential item waits for the items before it (and their threads, in ``lingering``) and
    holds back the items after it until its own thread ends. If this coroutine is cancelled,
    every item still running is cancelled before the cancellation goes on.
    """
    lingering = lingering if lingering is not None else Lingering()
    group: list[T] = []
    for item in items:
        if sequential(item):
            await _together(group, run_one, lingering)
            group = []
            await lingering.wait(everything=True)
            await run_one(item)
        else:
            group.append(item)
    await _together(group, run_one, lingering)


async def _together(group: Sequence[T], run_one: Callable[[T], Awaitable[None]], lingering: Lingering) -> None:
    if not group:
        return
    await lingering.wait(everything=False)  # a sequential call's thread may still run
    if len(group) == 1:
        await run_one(group[0])
        return
    tasks = [asyncio.ensure_future(run_one(item)) for item in group]
    try:
        for task in tasks:  # like gather (run_one records its own failures) without its futures
            await task
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


async def invoke(
    tool: Tool, kwargs: dict[str, Any], context: ToolContext, seconds: float | None, lingering: Lingering | None = None
) -> Any:
    """Call ``tool`` within its concurrency cap, giving up after ``seconds`` (None: no limit).

    A sync call keeps its slot until its thread ends, even when the caller gave up on it.
    """
    limiter = tool.limiter()
    if limiter is not None:
        await limiter.acquire()
    if tool.is_async:
        try:
            return await _timed(tool.name, tool.call(kwargs, context), seconds)
        finally:
            if limiter is not None:
                limiter.release()
    try:
        thread = tool.in_thread(kwargs, context)
    except BaseException:
        if limiter is not None:
            limiter.release()
        raise
    if limiter is not None:
        thread.add_done_callback(lambda _: limiter.release())
    if lingering is not None:
        lingering.add(thread, tool.sequential)
    return await _timed(tool.name, finish_sync(thread), seconds)


async def _timed(name: str, call: Awaitable[Any], seconds: float | None) -> Any:
    if seconds is None:
        return await call
    scope = deadline(seconds)
    try:
        with scope:
            return await call
    except TimeoutError:
        if scope.expired:
            raise ToolTimeoutError(f"tool {name!r} did not finish within {seconds:g} seconds") from None
        raise
