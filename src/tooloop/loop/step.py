"""``StepRunner``: runs each step of a run under its cancel token and deadline.

A run advances in steps (resolving the tail, then one turn at a time). Only while a step runs
may the run's :class:`~tooloop.loop.cancel.CancelToken` interrupt the task, so a cancel that
arrives between steps never reaches the caller's code. Whatever escapes a step is translated
here: our own cancellation ends the run as cancelled, the deadline becomes
:class:`~tooloop.errors.RunTimeoutError`, any other exception a :class:`~tooloop.errors.RunError`
carrying the transcript, the usage and the text streamed so far.
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

__all__ = ["StepRunner"]

Step = Coroutine[Any, Any, None]


class StepRunner:
    """Owns the run's token, its deadline and the text a response streamed before it completed."""

    __slots__ = ("_partial", "_record", "deadline", "timeout", "token")

    def __init__(self, token: CancelToken, timeout: float | None, record: Recorder):
        self.token = token
        self.timeout = timeout
        self.deadline: float | None = None
        self._record = record
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

    async def run(self, step: Step) -> bool:
        """Run ``step`` and journal what it appended; False when the run was cancelled.

        Raises the step's error as a :class:`~tooloop.errors.ToolloopError` with the run's state.
        """
        task = asyncio.current_task()
        if self.token.cancelled:
            step.close()
            self._keep_partial()
            await self._record.flush()
            return False
        baseline = task.cancelling() if task is not None else 0
        self.token._attach(task)
        attached = True
        completed = True
        error: ToolloopError | None = None
        try:
            if self.deadline is None:
                await step
            else:
                async with asyncio.timeout_at(self.deadline):
                    await step
        except asyncio.CancelledError as exc:
            attached = False
            delivered = self.token._detach(task)
            if task is not None and not delivered and task.cancelling() <= baseline:
                error = _spurious(exc)  # raised from inside; nobody cancelled the run
            elif not _only_ours(task, delivered, baseline):
                # Not (only) ours: the caller's cancellation goes on, but first the journal learns
                # what the transcript now says (calls cut off are recorded as cancelled, not started).
                await _quietly(self._record.flush(quiet=True))
                raise
            else:
                self._keep_partial()
                completed = False
        except Exception as exc:
            error = self._as_error(exc)
        finally:
            if attached:
                self.token._detach(task)  # before the journal is written: a late cancel must not cut it
        if error is not None:
            raise await self._failed(error)
        if self._record.journal is not None:
            await self._record.flush()
        return completed

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
        await self._record.flush(quiet=True)
        if error.transcript is None:
            error.transcript = self._record.transcript
        if error.usage is None:
            error.usage = self._record.usage
        return error

    def _keep_partial(self) -> None:
        """Keep text a cancelled streaming response had already produced, as a cancelled answer."""
        if self._partial:
            text, self._partial = "".join(self._partial), None
            self._record.append([AssistantMessage(text, stop_reason=StopReason.CANCELLED)])


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
