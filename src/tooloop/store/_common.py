"""What every store backend shares: export/import on top of the primitives, files, ``async with``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ..errors import SessionBusyError, SessionNotFoundError
from ..messages import Message, Usage
from ..transcript import Transcript
from ._records import Record
from .base import UNSET, Progress, SessionInfo, SessionOrder, Write
from .exchange import build_export, parse_export

__all__ = ["CLAIM_LEASE_SQL", "PROGRESS_SQL", "BaseStore", "busy", "masked_url", "optional_float"]

CLAIM_LEASE_SQL = (
    "INSERT INTO tooloop_leases (session_id, owner, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
    "WHERE tooloop_leases.owner = excluded.owner OR tooloop_leases.expires_at < ? "
    "RETURNING owner"
)
"""Take or renew a lease: it succeeds when the session has none, it is ours, or it has expired."""


PROGRESS_SQL = (
    "INSERT INTO tooloop_progress (session_id, tool_call_id, progress, total, message, reported_at) "
    "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM tooloop_sessions WHERE id = ?) "
    "AND NOT EXISTS (SELECT 1 FROM tooloop_messages WHERE session_id = ? AND tool_call_id = ? "
    "AND status NOT IN ('started', 'pending')) "
    "ON CONFLICT (session_id, tool_call_id) DO UPDATE SET progress = excluded.progress, total = excluded.total, "
    "message = excluded.message, reported_at = excluded.reported_at"
)
"""Keep a running call's latest progress; nothing for a session that does not exist or a call that
already has its outcome (a late report never outlives the call)."""


def optional_float(value: Any) -> float | None:
    """A nullable number column as a float."""
    return None if value is None else float(value)


def masked_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (in the URL's user part, a ``password=`` query
    parameter or a libpq ``password=...`` setting), for error messages and logs."""
    masked = re.sub(r"(password\s*=\s*)('[^']*'|[^\s&]+)", r"\1***", url, flags=re.IGNORECASE)
    try:
        parts = urllib.parse.urlsplit(masked)
        password = parts.password
    except ValueError:
        return masked
    if not password:
        return masked
    user, _, host = parts.netloc.rpartition("@")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}"))


def busy(session_id: str, row: tuple[Any, ...] | None) -> SessionBusyError:
    """The error for a lease held by someone else."""
    owner, expires_at = (str(row[0]), float(row[1])) if row else (None, None)
    left = f"for {max(0.0, expires_at - time.time()):.1f} s more" if expires_at is not None else ""
    error = SessionBusyError(
        f"session {session_id!r} is owned by {owner} {left}: another worker is running it. "
        "Wait for it to finish (lease wait=), or for its lease to expire if it died"
    )
    error.owner, error.expires_at = owner, expires_at
    return error


class BaseStore(ABC):
    """Base class of the built-in stores (implements the :class:`~tooloop.store.Store` protocol)."""

    @abstractmethod
    async def append(self, session_id: str, messages: Sequence[Message], *, expected_version: int | None = None) -> int:
        """See :meth:`tooloop.store.Store.append`."""

    @abstractmethod
    async def claim_lease(self, session_id: str, owner: str, ttl: float) -> float:
        """Own ``session_id`` for ``ttl`` seconds (or renew our lease); returns when it expires.

        Raises :class:`~tooloop.SessionBusyError` while another owner's lease is live; an expired
        lease is taken over.
        """

    @abstractmethod
    async def release_lease(self, session_id: str, owner: str) -> None:
        """Give up our lease on ``session_id`` (nothing happens if it is not ours any more)."""

    @abstractmethod
    async def load(self, session_id: str) -> Transcript:
        """See :meth:`tooloop.store.Store.load`."""

    @abstractmethod
    async def retract(self, session_id: str, writes: Sequence[tuple[int, int]]) -> None:
        """See :meth:`tooloop.store.Store.retract`."""

    @abstractmethod
    async def get_session(self, session_id: str) -> SessionInfo:
        """See :meth:`tooloop.store.Store.get_session`."""

    @abstractmethod
    async def set_metadata(
        self,
        session_id: str,
        *,
        title: str | None = UNSET,
        model: str | None = UNSET,
        usage: Usage = UNSET,
        metadata: Mapping[str, Any] = UNSET,
    ) -> SessionInfo:
        """See :meth:`tooloop.store.Store.set_metadata`."""

    @abstractmethod
    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """See :meth:`tooloop.store.Store.list_sessions`."""

    @abstractmethod
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
        """See :meth:`tooloop.store.Store.search`."""

    @abstractmethod
    async def writes(self, session_id: str) -> list[Write]:
        """Every record written to the session, in order, with when it was written: what a timeline
        of model requests and tool calls is drawn from (a call's ``started`` record and its outcome
        give its duration). :class:`~tooloop.errors.SessionNotFoundError` if absent."""

    @abstractmethod
    async def report_progress(
        self, session_id: str, tool_call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """Keep the latest progress of a running tool call (replacing what it reported before): what
        a viewer of the session shows while the call runs. The call's outcome, when written,
        removes it. Nothing happens when the session does not exist."""

    @abstractmethod
    async def progress(self, session_id: str) -> list[Progress]:
        """The latest progress of the session's calls that reported some and have no outcome yet,
        by call id."""

    @abstractmethod
    async def activity(self, session_id: str) -> tuple[int, float | None]:
        """The session's version and when a running call of it last reported progress (epoch
        seconds, None if none did), in one indexed read: what a viewer watches to know the
        session changed. :class:`~tooloop.errors.SessionNotFoundError` if absent."""

    @abstractmethod
    async def delete(self, session_id: str) -> None:
        """See :meth:`tooloop.store.Store.delete`."""

    @abstractmethod
    async def fork(self, session_id: str, at: int, new_session_id: str | None = None) -> str:
        """See :meth:`tooloop.store.Store.fork`."""

    @abstractmethod
    async def close(self) -> None:
        """See :meth:`tooloop.store.Store.close`."""

    @abstractmethod
    async def _create_from(self, info: SessionInfo, records: Sequence[Record]) -> None:
        """Create session ``info.id`` holding ``records`` at positions 0..n-1 (ConflictError if it exists)."""

    async def version(self, session_id: str) -> int:
        """The session's current version (0 when it does not exist)."""
        try:
            return (await self.get_session(session_id)).version
        except SessionNotFoundError:
            return 0

    async def export(self, session_id: str) -> dict[str, Any]:
        """The session as schema-versioned JSON-compatible data (see :mod:`tooloop.store.exchange`)."""
        info = await self.get_session(session_id)
        transcript = await self.load(session_id)
        return build_export(info, transcript)

    async def import_(self, data: Mapping[str, Any] | str | bytes, *, session_id: str | None = None) -> str:
        """Create a session from :meth:`export` data (under ``session_id`` when given); returns its id."""
        info, records = parse_export(data)
        if session_id is not None:
            info = SessionInfo(
                id=session_id,
                title=info.title,
                model=info.model,
                created_at=info.created_at,
                updated_at=info.updated_at,
                message_count=info.message_count,
                usage=info.usage,
                metadata=info.metadata,
            )
        await self._create_from(info, records)
        return info.id

    async def save_to_file(self, session_id: str, path: str | os.PathLike[str]) -> None:
        """Write the session's export to ``path`` as JSON (atomically: a temp file then a rename)."""
        text = json.dumps(await self.export(session_id), ensure_ascii=False, indent=1)
        await asyncio.to_thread(_write_atomically, Path(path), text)

    async def load_from_file(self, path: str | os.PathLike[str], *, session_id: str | None = None) -> str:
        """Import a session written by :meth:`save_to_file`; returns its id."""
        data = await asyncio.to_thread(Path(path).read_bytes)
        return await self.import_(data, session_id=session_id)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _write_atomically(target: Path, text: str) -> None:
    temp = target.with_name(target.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(target)
