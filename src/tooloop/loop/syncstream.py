"""``agent.stream_sync()``: a run's events for code without an event loop (scripts, notebooks).

The run is driven by an event loop of its own in a worker thread, which hands each event over
through a thread-safe queue; so it works in a plain script and in a notebook whose thread
already runs an event loop.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from ..events import Event, TextDelta
from ..transport.perloop import close_loop_clients
from .frontdoors import EventStream, Steering
from .result import RunResult
from .run import Run

__all__ = ["SyncEventStream"]

_END = object()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


class SyncEventStream(Steering, Iterator[Event]):
    """Fine-grained events of a run for ``for`` loops; the last one is ``RunFinished``.

    The run starts on the first ``next()`` and runs in a worker thread while you handle events.
    Use ``with`` (or :meth:`close`) to stop the run when you leave early.
    """

    def __init__(self, run: Run):
        self._run = run
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._result: RunResult | None = None
        self._done = False

    def __iter__(self) -> SyncEventStream:
        return self

    def __next__(self) -> Event:
        if self._done:
            raise StopIteration
        if self._thread is None:
            self._thread = threading.Thread(
                target=asyncio.run, args=(self._pump(),), name="tooloop-stream", daemon=True
            )
            self._thread.start()
        item = self._queue.get()
        if item is _END:
            self._done = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._done = True
            raise item.error
        event: Event = item
        return event

    def _serve(self) -> None:
        asyncio.run(self._pump())

    async def _pump(self) -> None:
        stream = EventStream(self._run)
        try:
            async for event in stream:
                self._queue.put(event)
            self._result = stream.result
        except BaseException as exc:  # handed to the consumer, who sees it raised
            self._queue.put(_Failure(exc))
        finally:
            await stream.aclose()
            await close_loop_clients()
            self._queue.put(_END)

    def stream_text(self) -> Iterator[str]:
        """Only the answer's text, piece by piece as it arrives (``print(piece, end="")``)."""
        for event in self:
            if isinstance(event, TextDelta):
                yield event.text

    @property
    def result(self) -> RunResult | None:
        """The run's result once it finished, else None."""
        return self._result

    def cancel(self, reason: str | None = None) -> None:
        """Stop the run promptly; the stream ends with a ``RunFinished`` whose reason is ``CANCELLED``."""
        self._run.token.cancel(reason)

    def close(self) -> None:
        """Cancel the run if it is still going and wait for its thread to finish."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._run.token.cancel("the event stream was closed")
            thread.join()
        self._done = True

    def __enter__(self) -> SyncEventStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._run.token.cancel("the event stream was abandoned")
