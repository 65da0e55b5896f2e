"""Running the tool calls of one model response: concurrently, with caps, barriers and timeouts.

Slots (``max_concurrency``), barriers (``sequential``), threads and timeouts meet here. A sync
call that times out (or whose run is cancelled) cannot be stopped: its thread goes on until the
function returns, so its slot and its barrier are held until then (:class:`Lingering`), while
the caller gets its :class:`~tooloop.errors.ToolTimeoutError` at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from concurrent.futures import Future
from types import CoroutineType
from typing import Any, TypeVar

from .._deadline import deadline
from ..errors import ToolTimeoutError
from .threads import Limiter
from .tool import Tool, ToolContext, finish_sync

__all__ = ["Lingering", "invoke", "run_concurrently", "start_async"]

T = TypeVar("T")


class Lingering:
    """The threads of one run's sync calls that may still be running.

    A sequential call waits for all of them before it starts, and no call starts while the
    thread of a sequential call still runs (even after it timed out, in a later batch too).
    """

    __slots__ = ("_threads",)

    def __init__(self) -> None:
        self._threads: tuple[tuple[Future[Any], bool], ...] = ()  # no object per run until a sync call

    @property
    def idle(self) -> bool:
        """No thread was left running (the usual case: then there is nothing to wait for)."""
        return not self._threads

    def add(self, thread: Future[Any], sequential: bool) -> None:
        """Track ``thread`` (of a ``sequential`` tool or not) until it ends."""
        self._threads = (*self._threads, (thread, sequential))

    async def wait(self, *, everything: bool) -> None:
        """Wait until the threads of sequential calls (``everything``: of all calls) have ended."""
        self._threads = tuple((t, s) for t, s in self._threads if not t.done())
        pending = [asyncio.wrap_future(t) for t, s in self._threads if everything or s]
        if pending:
            await asyncio.wait(pending)


Step = Coroutine[Any, Any, None]

RunOne = Callable[[T], Step | None]
"""Runs an item as far as it goes without waiting: None when it is done, else what finishes it."""


def run_concurrently(
    items: Sequence[T],
    run_one: RunOne[T],
    sequential: Callable[[T], bool],
    lingering: Lingering | None = None,
) -> Step | None:
    """Run ``run_one`` over ``items`` at once, except that a sequential item runs alone: None when
    every item is done already, else the coroutine that finishes them.

    ``run_one`` does what it can at once and returns None, or a coroutine that finishes the item
    (most items never wait: then no coroutine is made for them, nor for the batch). A sequential
    item waits for the items before it (and their threads, in ``lingering``) and holds back the
    items after it until its own thread ends. If the coroutine is cancelled, every item still
    running is cancelled before the cancellation goes on.
    """
    if (lingering is None or lingering.idle) and not any(map(sequential, items)):
        return _together_now(items, run_one)  # the usual batch: nothing to wait for first
    return _in_groups(items, run_one, sequential, lingering if lingering is not None else Lingering())


async def _in_groups(
    items: Sequence[T], run_one: RunOne[T], sequential: Callable[[T], bool], lingering: Lingering
) -> None:
    group: list[T] = []
    for item in items:
        if sequential(item):
            await _together(group, run_one, lingering)
            group = []
            if not lingering.idle:
                await lingering.wait(everything=True)
            step = run_one(item)
            if step is not None:
                await step
        else:
            group.append(item)
    await _together(group, run_one, lingering)


async def _whole(run_one: RunOne[T], item: T) -> None:
    """``run_one(item)`` as one coroutine (the task of an item that starts later)."""
    step = run_one(item)
    if step is not None:
        await step


async def _together(group: Sequence[T], run_one: RunOne[T], lingering: Lingering) -> None:
    if not group:
        return
    if not lingering.idle:
        await lingering.wait(everything=False)  # a sequential call's thread may still run
    step = _together_now(group, run_one)
    if step is not None:
        await step


def _together_now(group: Sequence[T], run_one: RunOne[T]) -> Step | None:
    """Start the items of ``group`` at once: None when all of them are done, else what finishes them."""
    if len(group) <= 1:
        return run_one(group[0]) if group else None
    # Each item starts here, in this task, in a context of its own as a task would give it. Most
    # finish without waiting (a tool that only computes, a call refused by a hook), and then need
    # no task: a task per call was a tenth of a K=4 conversation's CPU. The first item that waits
    # is finished in this task, once the items after it have started as tasks of their own.
    for index, item in enumerate(group):
        context = contextvars.copy_context()
        step = context.run(run_one, item)
        if step is None:
            continue
        try:
            waiting_on = context.run(step.send, None)
        except StopIteration:
            continue
        return _finish_together(step, context, waiting_on, group[index + 1 :], run_one)
    return None


async def _finish_together(
    step: Step, context: contextvars.Context, waiting_on: Any, rest: Sequence[T], run_one: RunOne[T]
) -> None:
    """Finish ``step`` (see :func:`_go_on`) while the items of ``rest`` start and run as tasks."""
    tasks: list[asyncio.Task[None]] = []
    try:
        tasks = [asyncio.ensure_future(_whole(run_one, item)) for item in rest]
        await _go_on(step, context, waiting_on)
        for task in tasks:  # like gather (run_one records its own failures) without its futures
            await task
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


@types.coroutine
def _go_on(step: Coroutine[Any, Any, None], context: contextvars.Context, waiting_on: Any) -> Generator[Any, Any, None]:
    """Drive ``step`` to its end in the current task and in ``context``: it already ran up to its
    first wait (for ``waiting_on``), which the task now waits for in its place."""
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            step.close()
            raise
        except BaseException as exc:  # a cancellation (or a timeout's) goes to where the item waits
            try:
                waiting_on = context.run(step.throw, exc)
            except StopIteration:
                return
        else:
            try:
                waiting_on = context.run(step.send, sent)
            except StopIteration:
                return


async def invoke(
    tool: Tool,
    kwargs: dict[str, Any],
    context: ToolContext | None,
    seconds: float | None,
    lingering: Lingering | None = None,
) -> Any:
    """Call ``tool`` within its concurrency cap, giving up after ``seconds`` (None: no limit).

    ``context`` may be None for a function that takes none. A sync call keeps its slot until
    its thread ends, even when the caller gave up on it.
    """
    limiter = tool.limiter()
    if limiter is not None:
        await limiter.acquire()
    if not tool.is_async:
        return await _in_thread(tool, kwargs, context, seconds, limiter, lingering)
    try:
        done, value = start_async(tool, kwargs, context, seconds)
        return value if done else await value
    finally:
        if limiter is not None:
            limiter.release()


def start_async(
    tool: Tool, kwargs: dict[str, Any], context: ToolContext | None, seconds: float | None
) -> tuple[bool, Any]:
    """Start a call of an async ``tool`` (without its concurrency cap: :func:`invoke` takes it)
    here, up to its first wait: ``(True, result)`` when it finished without waiting, else
    ``(False, rest)``, ``rest`` to be awaited for the result (within ``seconds`` of the start).

    A call that finishes without waiting (a tool that only computes) never needs its deadline,
    which only a wait can reach; no coroutine of ours is made for it either.
    """
    if seconds is None:
        return False, tool.start(kwargs, context)
    started = asyncio.get_running_loop().time()
    call = tool.start(kwargs, context)
    if type(call) is CoroutineType:
        try:
            waiting_on = call.send(None)
        except StopIteration as done:
            return True, done.value
        call = _resume(call, waiting_on)
    return False, _timed(tool.name, call, seconds, started)


@types.coroutine
def _resume(call: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """Drive ``call``, which already ran up to its first wait (for ``waiting_on``), to its end."""
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            call.close()
            raise
        except BaseException as exc:  # a cancellation (the deadline's) goes to where the call waits
            try:
                waiting_on = call.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = call.send(sent)
            except StopIteration as done:
                return done.value


async def _in_thread(
    tool: Tool,
    kwargs: dict[str, Any],
    context: ToolContext | None,
    seconds: float | None,
    limiter: Limiter | None,
    lingering: Lingering | None,
) -> Any:
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


async def _timed(name: str, call: Awaitable[Any], seconds: float | None, started: float | None = None) -> Any:
    if seconds is None:
        return await call
    scope = deadline(seconds, started=started)  # counted from the call's start, when it began earlier
    try:
        with scope:
            return await call
    except TimeoutError:
        if scope.expired:
            raise _timed_out(name, seconds) from None
        raise


def _timed_out(name: str, seconds: float) -> ToolTimeoutError:
    return ToolTimeoutError(f"tool {name!r} did not finish within {seconds:g} seconds")
