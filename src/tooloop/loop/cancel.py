"""``CancelToken``: ask a run to stop promptly, from any task or thread."""

from __future__ import annotations

import asyncio
import threading

__all__ = ["CancelToken"]


class CancelToken:
    """Cancels the run it is passed to.

    ``cancel()`` may be called from any task or thread, before or during the run. A running model
    request or tool call is interrupted at once; every started call gets a cancelled result and the
    run ends with ``StopReason.CANCELLED`` and a transcript valid for any provider.
    """

    __slots__ = ("_cancelled", "_lock", "_reason", "_tasks")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason: str | None = None
        # one token may be passed to several runs at once: every task driving one is interrupted
        self._tasks: set[asyncio.Task[object]] = set()
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason given to :meth:`cancel`."""
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Stop the run; idempotent."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            self._reason = reason
            tasks = list(self._tasks)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for task in tasks:
            if task.done():
                continue
            loop = task.get_loop()
            if running is loop:
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)

    def _attach(self, task: asyncio.Task[object] | None) -> None:
        """Register the task now driving a run (the loop calls this around each step)."""
        if task is not None:
            with self._lock:
                self._tasks.add(task)
                late = self._cancelled  # cancelled from another thread just before the step began
            if late:
                task.cancel()

    def _detach(self, task: asyncio.Task[object] | None) -> None:
        if task is not None:
            with self._lock:
                self._tasks.discard(task)
