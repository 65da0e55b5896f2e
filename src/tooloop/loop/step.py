"""``StepRunner``: what a run needs to run each of its steps under its cancel token and deadline.

A run advances in steps (resolving the tail, then turns). Only while a step runs may the run's
:class:`~tooloop.loop.cancel.CancelToken` interrupt the task, so a cancel that arrives between
steps never reaches the caller's code. Whatever escapes a step is translated here: our own
cancellation ends the run as cancelled, the deadline becomes :class:`~tooloop.errors.RunTimeoutError`,
any other exception a :class:`~tooloop.errors.RunError` carrying the transcript, the usage and the
text streamed so far.

:class:`~tooloop.loop.run.Run` is a ``StepRunner``: its step (:meth:`Run._step`) awaits the model
itself, so a waiting run sits under as few coroutines as possible (each is an object kept while
the run waits, and a frame every wakeup of the run passes through).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Coroutine
from typing import Any

from ..errors import RunError, RunTimeoutError, ToolloopError
from ..messages import AssistantMessage, StopReason
from .cancel import CancelToken
from .record import Recorder

__all__ = ["Step", "StepRunner"]

Step = Coroutine[Any, Any, None]


class StepRunner:
    """Owns the run's token, its deadline and the text a response streamed before it completed."""

    __slots__ = ("_partial", "deadline", "timeout", "token")

    record: Recorder  # the run's (see Run)

    def __init__(self, token: CancelToken, timeout: float | None):
        self.token = token
        """The run's own cancel token (a child of the caller's)."""
        self.timeout = timeout
        self.deadline: float | None = None
        self._partial: list[str] | None = None

    def start_clock(self) -> None:
        """The run's time limit counts from now."""
        if self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    def hear(self, text: str) -> None:
        """Keep a streamed text delta until its response completes."""
        if self._partial is None:
            self._partial = []
        self._partial.append(text)

    def forget_partial(self) -> None:
        """The response completed (or is asked again): its streamed text is no longer partial."""
        self._partial = None

    async def _not_started(self, step: Step | None) -> bool:
        """A step the token cancelled before it began (``step`` is closed unrun): False, the run
        ends as cancelled."""
        if step is not None:
            step.close()
        self._keep_partial()
        await self.record.flush()
        return False

    def _attach(self) -> tuple[asyncio.Task[Any] | None, int]:
        """A step begins: the token may cancel the current task now. The task, and how many
        cancellations it had before the step."""
        task = asyncio.current_task()
        baseline = task.cancelling() if task is not None else 0
        self.token._attach(task)
        return task, baseline

    async def _escaped(self, task: asyncio.Task[Any] | None, baseline: int, exc: BaseException) -> ToolloopError | None:
        """What escaped a step (the token is detached here): None when the token alone cancelled
        it (the run ends as cancelled), else the error to raise; what is not ours to translate
        (the caller's cancellation, ``KeyboardInterrupt``...) goes on."""
        if isinstance(exc, asyncio.CancelledError):
            return await self._interrupted(task, baseline, exc)
        self.token._detach(task)  # before the journal is written: a late cancel must not cut it
        if isinstance(exc, Exception):
            return self._as_error(exc)
        raise exc

    async def _interrupted(
        self, task: asyncio.Task[Any] | None, baseline: int, exc: asyncio.CancelledError
    ) -> ToolloopError | None:
        """A step ended by ``CancelledError`` (the token is detached here): None when the token alone
        cancelled it (the run ends as cancelled), the error to raise when nobody cancelled the run;
        the ``CancelledError`` goes on when someone else cancelled the task."""
        delivered = self.token._detach(task)
        if task is not None and not delivered and task.cancelling() <= baseline:
            return _spurious(exc)  # raised from inside; nobody cancelled the run
        if not _only_ours(task, delivered, baseline):
            # Not (only) ours: the caller's cancellation goes on, but first the journal learns
            # what the transcript now says (calls cut off are recorded as cancelled, not started).
            await _quietly(self.record.flush(quiet=True))
            raise exc
        self._keep_partial()
        return None

    def _as_error(self, exc: Exception) -> ToolloopError:
        if isinstance(exc, TimeoutError):
            return self._timeout_error(exc)
        if isinstance(exc, ToolloopError):
            return exc
        error = RunError(f"the run failed: {exc!r}")
        error.__cause__ = exc
        return error

    def _timeout_error(self, exc: TimeoutError) -> RunError:
        expired = self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline
        if expired:
            error: RunError = RunTimeoutError(f"the run did not finish within {self.timeout:g} seconds")
        else:
            error = RunError(f"the run failed: {exc!r}")
        error.__cause__ = exc
        return error

    async def _failed(self, error: ToolloopError) -> ToolloopError:
        """``error``, carrying the partial text, the transcript and the usage; the journal is written."""
        if self._partial:
            error.partial_text = "".join(self._partial)
            self._partial = None
        await self.record.flush(quiet=True)
        if error.transcript is None:
            error.transcript = self.record.transcript
        if error.usage is None:
            error.usage = self.record.usage
        return error

    def _keep_partial(self) -> None:
        """Keep text a cancelled streaming response had already produced, as a cancelled answer."""
        if self._partial:
            text, self._partial = "".join(self._partial), None
            self.record.append([AssistantMessage(text, stop_reason=StopReason.CANCELLED)])


def _only_ours(task: asyncio.Task[Any] | None, delivered: bool, baseline: int) -> bool:
    """Whether the token alone cancelled the step (then the cancellation is absorbed).

    A ``task.cancel()`` from anyone else always goes on as ``CancelledError``, even when the
    token fired at the same moment.
    """
    return task is not None and delivered and task.uncancel() <= baseline


def _spurious(exc: asyncio.CancelledError) -> RunError:
    error = RunError(f"CancelledError was raised inside the run although nobody cancelled it: {exc!r}")
    error.__cause__ = exc
    return error


async def _quietly(write: Awaitable[None]) -> None:
    """Finish ``write`` even though the task is being cancelled (it is shielded from a second cancel)."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.shield(write)
