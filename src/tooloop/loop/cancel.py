"""``CancelToken``: ask a run to stop promptly, from any task or thread."""

from __future__ import annotations

import asyncio
import itertools
import threading
import weakref

__all__ = ["CancelToken"]

_generations = itertools.count(1)

_LOCK = threading.RLock()
"""One lock for every token: a thousand concurrent runs would otherwise keep a thousand locks.
Reentrant: the garbage collector may run a finalizer that cancels another token (an abandoned
event stream) while this thread holds it."""


class CancelToken:
    """Cancels the runs it is passed to.

    ``cancel()`` may be called from any task or thread, before or during a run. A running model
    request or tool call is interrupted at once; every started call gets a cancelled result and the
    run ends with ``StopReason.CANCELLED`` and a transcript valid for any provider.

    The interruption is delivered through the event loop, and only while the run is inside one
    of its own steps: a cancel that arrives after a step finished never reaches the caller's code.
    Each run gets a child token linked to the one you pass, so a run that stops (or a stream that
    is closed) never cancels the other runs sharing your token.
    """

    __slots__ = ("__weakref__", "_cancelled", "_children", "_generation", "_reason", "_task")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason: str | None = None
        # The step running under this token: a run's own token has one at a time (a thousand
        # waiting runs keep no dict each for it). The generation tells a later step of the same
        # task from the one a cancel was meant for.
        self._task: asyncio.Task[object] | None = None
        self._generation = 0
        self._children: weakref.WeakSet[CancelToken] | None = None  # made with the first child

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason given to :meth:`cancel`."""
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Stop the runs using this token (and its children); idempotent, thread-safe."""
        with _LOCK:
            if self._cancelled:
                return
            self._cancelled = True
            self._reason = reason
            task, generation = self._task, self._generation
            children = list(self._children) if self._children is not None else []
        for child in children:
            child.cancel(reason)
        if task is not None:
            self._deliver_soon(task, generation)

    def child(self) -> CancelToken:
        """A new token cancelled whenever this one is (but not the other way round)."""
        child = CancelToken()
        with _LOCK:
            cancelled, reason = self._cancelled, self._reason
            if not cancelled:
                if self._children is None:
                    self._children = weakref.WeakSet()
                self._children.add(child)
        if cancelled:
            child.cancel(reason)
        return child

    def _deliver_soon(self, task: asyncio.Task[object], generation: int) -> None:
        loop = task.get_loop()
        try:
            loop.call_soon_threadsafe(self._deliver, task, generation)
        except RuntimeError:  # the loop is closed: nothing is running there any more
            pass

    def _deliver(self, task: asyncio.Task[object], generation: int) -> None:
        with _LOCK:
            current = self._task is task and self._generation == generation
            if current:
                self._task = None
        if current and not task.done():
            task.cancel()

    def _attach(self, task: asyncio.Task[object] | None) -> None:
        """The loop calls this when ``task`` starts one step of a run (one step at a time)."""
        if task is None:
            return
        generation = next(_generations)
        with _LOCK:
            self._task, self._generation = task, generation
            late = self._cancelled  # cancelled from another thread just before the step began
        if late:
            self._deliver_soon(task, generation)

    def _detach(self, task: asyncio.Task[object] | None) -> bool:
        """The loop calls this when the step ends; a cancel still in flight is dropped.

        Returns True when this token cancelled ``task`` during the step (called once per step).
        """
        if task is None:
            return False
        with _LOCK:
            delivered = self._task is not task
            if not delivered:
                self._task = None
            return delivered
