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

    __slots__ = ("_cancelled", "_lock", "_loop", "_reason", "_task")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason: str | None = None
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
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
            task, loop = self._task, self._loop
        if task is None or loop is None or task.done():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)

    def _attach(self, task: asyncio.Task[object] | None) -> None:
        """Point the token at the task now driving the run (the loop calls this)."""
        with self._lock:
            self._task = task
            self._loop = task.get_loop() if task is not None else None

    def _detach(self) -> None:
        with self._lock:
            self._task = None
            self._loop = None
