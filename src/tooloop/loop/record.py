"""The run's record: its transcript and usage, and where each new message goes.

Every message a run appends goes to four places: the transcript, the outbox that
``conversation()`` yields from, a :class:`~tooloop.events.MessageAdded` event for ``stream()``,
and the journal (a stored session), which is written once per step by :meth:`Recorder.flush`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from ..events import Event, MessageAdded, RunningTotal, ToolCallProgress
from ..messages import Message, ToolCallMessage, Usage, recounted, summed
from ..transcript import Transcript
from .channel import EventChannel

__all__ = ["Journal", "Recorder", "request_usage"]


_new = object.__new__
_set_added: Callable[[MessageAdded, Message], None] = MessageAdded.__dict__["message"].__set__
"""The event's slot, filled directly (a frozen dataclass refuses ``setattr``): a fifth cheaper than its constructor."""


class Journal(Protocol):
    """Where a run writes each message as soon as it exists (a session in a store).

    A journal may also have ``note_progress(event)`` (a plain, non-blocking method): running tool
    calls' :class:`~tooloop.events.ToolCallProgress` go there too, for the session's viewers.
    """

    async def record(self, messages: Sequence[Message]) -> None:
        """Persist ``messages``; a tool call recorded again replaces its earlier record."""
        ...


def request_usage(usage: Usage) -> Usage:
    """One model request's usage as the loop counts it: one request, no tool calls."""
    global _last_request
    if usage.requests == 1 and not usage.tool_calls:
        return usage
    last = _last_request
    if last[0] is usage:  # a response's usage is asked for twice: counted, and kept on its message
        return last[1]
    counted = recounted(usage, 1, 0)
    _last_request = (usage, counted)
    return counted


_last_request: tuple[Usage | None, Usage] = (None, Usage())

_NOTHING_YET = Usage()
"""Every run's usage before its first request (usages are frozen: one for all runs)."""
"""The last usage :func:`request_usage` was given, and its answer (usages are frozen)."""


class Recorder:
    """Appends messages to the transcript, the outbox, the event stream and the journal."""

    __slots__ = (
        "_calls",
        "_last_total",
        "_outbox",
        "_requests",
        "_unrecorded",
        "_usage",
        "events",
        "journal",
        "keep_outbox",
        "transcript",
        "upstream",
    )

    def __init__(self, transcript: Transcript, journal: Journal | None):
        self.transcript = transcript
        self._usage = _NOTHING_YET
        self._calls = 0  # executed calls not yet in _usage: a Usage per call is made only when asked
        # requests' usages not yet in _usage, summed when asked: the first alone, a list from the second
        self._requests: Usage | list[Usage] | None = None
        self.journal = journal
        self.events: EventChannel | None = None
        """Where events go when someone streams the run (else none is made)."""
        # A thousand runs at once each keep one: lists are made when something goes in them.
        self._outbox: list[Message] | None = None
        self.keep_outbox = True
        """False when nobody takes the messages (``run()``): :meth:`drain` then has none."""
        self._unrecorded: list[Message] | None = None
        self._last_total: RunningTotal | None = None
        self.upstream: Recorder | None = None
        """A subagent's parent run: each request and call counts there too (usage rolls up)."""

    @property
    def usage(self) -> Usage:
        """The run's usage so far: its requests' tokens and cost, and the calls it executed."""
        calls = self._calls
        if not calls:
            return self.spent
        self._calls = 0
        requests, self._requests = self._requests, None
        if requests is None:
            total = recounted(self._usage, self._usage.requests, self._usage.tool_calls + calls)
        else:  # the requests and the calls in one sum
            total = summed(self._usage, requests if isinstance(requests, list) else (requests,), calls)
        self._usage = total
        return total

    @property
    def spent(self) -> Usage:
        """The usage so far, except perhaps for the latest executed calls (they are counted when
        :attr:`usage` is asked): its tokens and cost are exact, what the limits check."""
        requests = self._requests
        if requests is not None:
            self._requests = None
            self._usage = summed(self._usage, requests if isinstance(requests, list) else (requests,))
        return self._usage

    def running_total(self) -> RunningTotal:
        """The usage so far (:attr:`usage`), summed when it is first read: what a stream's
        :class:`~tooloop.events.ModelRequestFinished` holds."""
        requests = self._requests
        count = 0 if requests is None else len(requests) if requests.__class__ is list else 1
        total = self._last_total = [self._usage, requests, count, self._calls, self._last_total, None]
        return total

    def emit(self, event: Event) -> None:
        """Send an event to the stream consumer, if there is one."""
        channel = self.events
        if channel is not None:
            channel.append(event)  # EventChannel.put, inline
            if channel.waiter is not None:
                channel.wake()

    def progress(self, event: ToolCallProgress) -> None:
        """A running call reported progress: to the stream consumer, and to the journal's viewers."""
        self.emit(event)
        note: Callable[[ToolCallProgress], None] | None = getattr(self.journal, "note_progress", None)
        if note is not None:
            note(event)

    def append(self, messages: Sequence[Message]) -> None:
        """Add ``messages`` to the transcript and the outbox; the journal gets them at :meth:`flush`."""
        self.transcript = self.transcript.extend(messages)
        if self.keep_outbox:
            if self._outbox is None:
                self._outbox = list(messages)
            else:
                self._outbox.extend(messages)
        if self.journal is not None:
            if self._unrecorded is None:
                self._unrecorded = list(messages)
            else:
                self._unrecorded.extend(messages)
        channel = self.events
        if channel is not None:  # EventChannel.put, inline: one wake for all of them
            for message in messages:  # MessageAdded(message) without its constructor's call
                event = _new(MessageAdded)
                _set_added(event, message)
                channel.append(event)
            if channel.waiter is not None:
                channel.wake()

    async def add(self, *messages: Message) -> None:
        """Append ``messages`` and journal them at once."""
        self.append(messages)
        if self.journal is not None:
            await self.flush()

    async def flush(self, *, quiet: bool = False) -> None:
        """Write appended messages to the journal (``quiet``: while another error is on its way)."""
        if self.journal is None or not self._unrecorded:
            return
        pending, self._unrecorded = self._unrecorded, None
        try:
            await self.journal.record(pending)
        except Exception:
            if not quiet:
                raise

    async def record_started(self, calls: Iterable[ToolCallMessage]) -> None:
        """Journal calls about to run, so a resumed session knows which may have started."""
        started = list(calls)
        if self.journal is not None and started:
            await self.journal.record(started)

    async def record_outcome(self, message: ToolCallMessage) -> None:
        """Journal a finished call at once, so a crash never runs it again (the batch follows whole)."""
        if self.journal is not None:
            await self.journal.record([message])

    def drain(self) -> list[Message]:
        """The messages appended since the last drain, for ``conversation()`` to yield."""
        out, self._outbox = self._outbox, None
        return out if out is not None else []

    def count_request(self, usage: Usage) -> Usage:
        """Add one model request's usage; the loop itself counts requests and executed calls.

        Returns the usage as counted (:func:`request_usage`: one request, no calls)."""
        counted = request_usage(usage)  # added to the total when it is asked (one sum for many requests)
        requests = self._requests
        if requests is None:
            self._requests = counted
        elif isinstance(requests, list):
            requests.append(counted)
        else:
            self._requests = [requests, counted]
        if self.upstream is not None:
            self.upstream.count_request(usage)
        return counted

    def count_call(self) -> None:
        """Count one executed tool call."""
        self._calls += 1
        if self.upstream is not None:
            self.upstream.count_call()
