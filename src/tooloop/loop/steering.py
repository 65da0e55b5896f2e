"""The inbox of a running run: user messages sent while it works (steering), from any task or thread.

Messages wait here until the next safe boundary, the moment before the next model request: the
previous response and every outcome of its tool calls are recorded by then, so a message never
lands between a call and its result. A message that arrives while the model gives its final
answer keeps the run going for one more turn instead of being dropped. When the run ends the
inbox closes; what it still holds then (a run that stopped for approval, a limit, a
cancellation) is handed back as undelivered.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from .._checks import describe
from ..errors import ArgumentTypeError, ArgumentValueError

__all__ = ["Inbox", "InboxHolder", "check_steering", "close", "close_if_empty", "put", "take"]


def check_steering(text: object) -> str:
    """``text`` when it is a non-empty string; a clear error otherwise."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"steer() takes the user's message as a str, got {describe(text)}")
    if not text.strip():
        raise ArgumentValueError("steer() got an empty message; pass what the user said")
    return text


_LOCK = threading.RLock()
"""One lock for every inbox: steering is rare and each hold is a few instructions, while a
thousand concurrent runs would otherwise keep a thousand locks. Reentrant: the garbage
collector may finalize another run (closing its inbox) while this thread holds it."""


class Inbox:
    """Thread-safe queue of steering messages, closed once the run ends."""

    __slots__ = ("_closed", "_items")

    def __init__(self) -> None:
        self._items: list[str] | None = None  # made by the first message
        self._closed = False

    def put(self, text: str) -> bool:
        """Queue ``text``; False when the run has already ended (nothing was queued)."""
        with _LOCK:
            if self._closed:
                return False
            if self._items is None:
                self._items = [text]
            else:
                self._items.append(text)
            return True

    def take(self) -> Sequence[str]:
        """Every message waiting, in the order they came; the inbox is empty afterwards."""
        if not self._items:  # the usual case, without the lock: a message put now is taken next time
            return ()
        with _LOCK:
            taken, self._items = self._items, None
            return taken or ()

    def waiting(self) -> bool:
        """True when a message waits (a finished answer then starts another turn)."""
        with _LOCK:
            return bool(self._items)

    def close(self) -> tuple[str, ...]:
        """Refuse further messages; the ones never delivered."""
        with _LOCK:
            self._closed = True
            left, self._items = tuple(self._items or ()), None
            return left

    def close_if_empty(self) -> bool:
        """Close when nothing waits, at once (no message can slip in between); True when closed."""
        with _LOCK:
            if self._items:
                return False
            self._closed = True
            return True


_CLOSED = Inbox()
_CLOSED.close()
"""The inbox of every run that ended before anyone steered it (it refuses messages)."""


class InboxHolder(Protocol):
    """A run, whose inbox is made by the first message sent to it (most runs never get one)."""

    inbox: Inbox | None


def put(holder: InboxHolder, text: str) -> bool:
    """Queue ``text`` in ``holder``'s inbox (made now if needed); False when the run has ended."""
    with _LOCK:  # made and assigned under the lock: a run ending now sees it, or it sees the end
        inbox = holder.inbox
        if inbox is None:
            inbox = holder.inbox = Inbox()
        return inbox.put(text)


def take(holder: InboxHolder) -> Sequence[str]:
    """Every message waiting in ``holder``'s inbox (see :meth:`Inbox.take`)."""
    inbox = holder.inbox
    return () if inbox is None else inbox.take()


def close(holder: InboxHolder) -> tuple[str, ...]:
    """Close ``holder``'s inbox for good; the messages never delivered."""
    with _LOCK:
        inbox, holder.inbox = holder.inbox, _CLOSED
    return () if inbox is None else inbox.close()


def close_if_empty(holder: InboxHolder) -> bool:
    """Close ``holder``'s inbox when nothing waits (see :meth:`Inbox.close_if_empty`)."""
    with _LOCK:
        inbox = holder.inbox
        if inbox is None:
            holder.inbox = _CLOSED
            return True
        return inbox.close_if_empty()
