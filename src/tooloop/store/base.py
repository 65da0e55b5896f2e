"""The ``Store`` seam: durable, append-only sessions, and the values it returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from ..messages import Message, Usage
from ..transcript import Transcript

__all__ = ["SESSION_ORDERS", "UNSET", "Progress", "SessionInfo", "SessionOrder", "Store", "Write"]


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of :meth:`Store.set_metadata` arguments: leave that field as it is."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a store knows about a session besides its messages."""

    id: str
    title: str | None = None
    model: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0
    usage: Usage = field(default_factory=Usage)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    version: int = 0
    """How many records were written to the session; what ``expected_version`` compares with."""
    stop_reason: str | None = None
    """The latest model response's stop reason (``approval_required`` while a tool call waits for a
    decision); None before the first response."""
    errors: int = 0
    """How many tool call outcomes written to the session were errors."""
    problem: str | None = None
    """Set by ``list_sessions()`` when part of this session's record (usage, metadata) cannot be
    read: that part shows as empty and the other sessions are listed all the same. Reading the
    session itself (``get_session``) raises :class:`~tooloop.errors.CorruptDataError`."""


@dataclass(frozen=True, slots=True)
class Write:
    """One record written to a session: which message position it filled, and when."""

    seq: int
    """The record's number in the session (every write counts, replacements too)."""
    pos: int
    """The message position it filled (a tool call's outcome replaces its unfinished entry)."""
    tool_call_id: str | None
    status: str | None
    """The tool call's status in this record (``started``, ``ok``...); None for other messages."""
    written_at: datetime | None
    """When it was written; None for records from before tooloop noted the time."""


@dataclass(frozen=True, slots=True)
class Progress:
    """The latest progress a running tool call reported (``progress`` of ``total`` when known)."""

    tool_call_id: str
    progress: float
    total: float | None
    message: str | None
    reported_at: datetime | None


SessionOrder = Literal[
    "updated", "created", "title", "model", "messages", "tool_calls", "tokens", "cost", "stop_reason", "errors"
]
"""What :meth:`Store.search` can sort sessions by (``tokens`` is input plus output tokens)."""

SESSION_ORDERS: tuple[SessionOrder, ...] = (
    "updated",
    "created",
    "title",
    "model",
    "messages",
    "tool_calls",
    "tokens",
    "cost",
    "stop_reason",
    "errors",
)


@runtime_checkable
class Store(Protocol):
    """Durable sessions: an append-only log of messages per session id.

    A :class:`~tooloop.messages.ToolCallMessage` whose ``tool_call_id`` matches the newest earlier
    entry with that id, when that entry is unfinished (STARTED or PENDING) or from the same batch,
    replaces it at its original position (last write wins); every other message is a new entry.
    Each call is one transaction.
    """

    async def append(self, session_id: str, messages: Sequence[Message], *, expected_version: int | None = None) -> int:
        """Append ``messages`` (creating the session if needed) and return the new version.

        With ``expected_version`` the write happens only if the session is still at that version
        (0 for a session that must not exist yet); otherwise :class:`~tooloop.errors.ConflictError`
        is raised and nothing is written.
        """
        ...

    async def load(self, session_id: str) -> Transcript:
        """The session's messages, each tool call in its final state at its original position."""
        ...

    async def retract(self, session_id: str, writes: Sequence[tuple[int, int]]) -> None:
        """Take back what one writer appended: every record written between the versions of each
        ``(before, after)`` pair (what :meth:`append` was given and returned), in one transaction.

        A run that lost a :class:`~tooloop.errors.ConflictError` leaves nothing behind this way,
        unless another writer wrote after its last write: that writer read those records and built
        on them (its model saw the prompt, it closed a call found there), so nothing is taken back
        and the session stays what that writer saw. The other messages keep their order; an entry
        a retracted record had replaced shows again.
        """
        ...

    async def claim_lease(self, session_id: str, owner: str, ttl: float) -> float:
        """Own ``session_id`` for ``ttl`` seconds, or renew ``owner``'s lease; returns its expiry time.

        Raises :class:`~tooloop.errors.SessionBusyError` while another owner's lease is live; an
        expired lease is taken over. See :class:`~tooloop.store.SessionLease`.
        """
        ...

    async def release_lease(self, session_id: str, owner: str) -> None:
        """End ``owner``'s lease on ``session_id`` (nothing happens if it is not theirs)."""
        ...

    async def version(self, session_id: str) -> int:
        """The session's current version (0 when it does not exist)."""
        ...

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's metadata; :class:`~tooloop.errors.SessionNotFoundError` if absent."""
        ...

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        ...

    async def search(
        self,
        text: str = "",
        *,
        model: str | None = None,
        stop_reason: str | None = None,
        errors_only: bool = False,
        order_by: SessionOrder = "updated",
        descending: bool = True,
        limit: int = 50,
        offset: int = 0,
    ) -> list[SessionInfo]:
        """Sessions whose title or messages contain every word of ``text``, through the store's
        full-text index (SQLite FTS5, PostgreSQL ``tsvector``); each word matches as a prefix
        (``pars`` finds ``parser``) whatever its case.

        Empty ``text`` matches every session. ``model``, ``stop_reason`` and ``errors_only``
        narrow the result; ``order_by`` (see :data:`SessionOrder`) sorts it, ties by id. A session
        whose usage or metadata cannot be read is listed with :attr:`SessionInfo.problem` set.
        """
        ...

    async def set_metadata(
        self,
        session_id: str,
        *,
        title: str | None = UNSET,
        model: str | None = UNSET,
        usage: Usage = UNSET,
        metadata: Mapping[str, Any] = UNSET,
    ) -> SessionInfo:
        """Change the given fields (creating the session if needed) and return the result."""
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session and its messages; :class:`~tooloop.errors.SessionNotFoundError` if absent."""
        ...

    async def fork(self, session_id: str, at: int, new_session_id: str | None = None) -> str:
        """A new session holding the first ``at`` messages of ``session_id``; returns its id."""
        ...

    async def export(self, session_id: str) -> dict[str, Any]:
        """The session as schema-versioned JSON-compatible data (see :mod:`tooloop.store.exchange`)."""
        ...

    async def import_(self, data: Mapping[str, Any], *, session_id: str | None = None) -> str:
        """Create a session from :meth:`export` data and return its id."""
        ...

    async def close(self) -> None:
        """Release connections. The store cannot be used afterwards."""
        ...
