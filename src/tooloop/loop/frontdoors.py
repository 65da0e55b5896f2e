"""The iterators behind ``agent.conversation()`` and ``agent.stream()``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from types import TracebackType
from typing import Any, NoReturn

from ..events import Event, RunFinished, TextDelta
from ..messages import Message
from ..transcript import Transcript
from .channel import EventChannel
from .result import RunResult
from .run import Run

__all__ = ["Conversation", "EventStream"]

_NOTHING: Iterator[Event] = iter(())
"""An exhausted iterator: no event to hand out until the consumer waited for some."""


class Steering:
    """Steering the run behind a front door (a conversation, an event stream, a thread's stream)."""

    __slots__ = ()
    _run: Run

    def steer(self, text: str) -> bool:
        """Send a user message into the running run; safe from any task or thread.

        The model sees it at the next safe boundary: after the current response and all its tool
        results are recorded, before the next request. Sent while the model gives its final
        answer, it starts another turn. It is recorded in the transcript in the order the model
        saw it (a ``MessageAdded`` event on a stream). Returns False when the run has already
        ended: nothing was sent, start a new run with the text instead.
        """
        return self._run.steer(text)

    @property
    def undelivered(self) -> tuple[str, ...]:
        """Steering messages the run ended before delivering (it stopped for approval, a limit...)."""
        return self._run.undelivered


class Conversation(Steering, AsyncGenerator[Message, None]):
    """Each message of a run as it happens; after exhaustion :attr:`result` is the ``RunResult``.

    Python's async generators cannot return a value, so the result lives on this object instead.
    The run advances only while you iterate: stop iterating and no further model request is made.
    It is an async generator too: ``asend(None)`` is the next message, ``athrow(exc)`` raises
    ``exc`` inside the run where it waits (calls that did not finish are recorded as not run, a
    stored session is closed) and then out of ``athrow``.
    """

    def __init__(self, run: Run):
        self._run = run
        self._messages = run.messages()
        self._result: RunResult | None = None

    def __aiter__(self) -> Conversation:
        return self

    def __iter__(self) -> NoReturn:
        raise TypeError(
            "a Conversation is asynchronous: use 'async for message in agent.conversation(...)', "
            "or agent.run_sync(...) in code without an event loop"
        )

    async def __anext__(self) -> Message:
        try:
            return await self._messages.__anext__()
        except StopAsyncIteration:
            self._result = self._run.result()
            raise

    async def asend(self, value: None) -> Message:
        """The next message, as :meth:`__anext__`; a run takes no values, so ``value`` must be None."""
        if value is not None:
            raise TypeError(f"a Conversation takes no values: asend(None) gives the next message, got {value!r}")
        return await self.__anext__()

    async def athrow(self, typ: Any, val: Any = None, tb: TracebackType | None = None) -> Message:
        """Raise an exception inside the run where it waits; it ends the run and is raised here."""
        error = typ if isinstance(typ, BaseException) else typ() if val is None else val
        if tb is not None:
            error = error.with_traceback(tb)
        return await self._messages.athrow(error)

    @property
    def result(self) -> RunResult | None:
        """The run's result once the iteration is exhausted, else None."""
        return self._result

    @property
    def transcript(self) -> Transcript:
        """The transcript so far."""
        return self._run.transcript

    def cancel(self, reason: str | None = None) -> None:
        """Stop the run promptly, even while a tool hangs; the next step ends it as ``CANCELLED``."""
        self._run.token.cancel(reason)

    async def aclose(self) -> None:
        """Abandon the run without finishing it."""
        await self._messages.aclose()

    async def __aenter__(self) -> Conversation:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _drive(run: Run, channel: EventChannel) -> None:
    # The task holds the channel, never the stream: a stream dropped without closing is collected
    # (and cancels its run).
    error: BaseException | None = None
    try:
        await run.finish()  # the events come through the channel; nobody takes the messages here
        channel.result = run.result()
        channel.put(RunFinished(channel.result))
    except BaseException as exc:  # handed to the consumer, who sees it raised
        error = exc
    finally:
        channel.end(error)


class EventStream(Steering, AsyncIterator[Event]):
    """Fine-grained events of a run; the last one is :class:`~tooloop.events.RunFinished`.

    The run is driven by a task of its own from the first ``__anext__``, so events keep flowing
    while you handle them, and waiting for the next event with a timeout (a heartbeat) does not
    disturb it. Use ``async with`` (or :meth:`aclose`) to stop the run when you leave; a stream
    dropped without closing (its consumer task was cancelled, say) cancels its run when it is
    garbage collected.
    """

    __slots__ = ("__weakref__", "_channel", "_pending", "_run", "_task")

    def __init__(self, run: Run):
        self._run = run
        self._channel = EventChannel()
        self._pending: Iterator[Event] = _NOTHING
        """The events not handed out yet: an iterator over the channel, which the run appends to
        while the consumer waits; made when the wait ends, and the channel is emptied before the
        next one (a step of an iterator per event: an index costs several bytecodes more)."""
        self._task: asyncio.Task[None] | None = None
        run.send_events_to(self._channel)

    def __aiter__(self) -> EventStream:
        return self

    def __iter__(self) -> NoReturn:
        raise TypeError(
            "an EventStream is asynchronous: use 'async for event in agent.stream(...)', "
            "or 'for event in agent.stream_sync(...)' in code without an event loop"
        )

    async def stream_text(self) -> AsyncIterator[str]:
        """Only the answer's text, piece by piece as it arrives (``print(piece, end="")``)."""
        async for event in self:
            if isinstance(event, TextDelta):
                yield event.text

    async def __anext__(self) -> Event:
        for event in self._pending:  # the usual case: an event is waiting; a few bytecodes
            return event
        channel = self._channel
        while not channel.ended:  # every event so far was handed out: wait for more
            task = self._task
            if task is None:
                task = self._task = asyncio.get_running_loop().create_task(_drive(self._run, channel))
            elif channel.parked:
                raise RuntimeError("another task is already waiting for this stream's next event")
            channel.clear()
            self._pending = _NOTHING  # the exhausted iterator goes: a waiting stream keeps none
            channel.parked = True
            waiter = channel.waiter = asyncio.Future(loop=task.get_loop())  # create_future, one call less
            try:
                await waiter
            finally:
                channel.waiter = None
                channel.parked = False
                pending = self._pending = iter(channel)
            for event in pending:
                return event
        error, channel.error = channel.error, None
        if error is not None:  # raised once; every later call ends the iteration
            raise error
        raise StopAsyncIteration

    @property
    def result(self) -> RunResult | None:
        """The run's result once it finished, else None."""
        return self._channel.result

    def __del__(self) -> None:
        # A consumer that stopped iterating without closing the stream must not leave the run
        # (and a tool that may hang) going forever.
        if self._task is not None and not self._task.done():
            self._run.token.cancel("the event stream was abandoned")

    def cancel(self, reason: str | None = None) -> None:
        """Stop the run promptly; the stream ends with a ``RunFinished`` whose reason is ``CANCELLED``."""
        self._run.token.cancel(reason)

    async def aclose(self) -> None:
        """Cancel the run if it is still going and wait for it to wind down."""
        if self._task is not None and not self._task.done():
            self._run.token.cancel("the event stream was closed")
            await asyncio.gather(self._task, return_exceptions=True)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
