"""``SessionJournal``: the loop's journal writing to a store session, and the agent's session binding."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence

from ..errors import SessionNotFoundError
from ..messages import Message, Usage, UserMessage
from ..transcript import Transcript
from .base import Store

__all__ = ["DEFAULT_STORE_URL", "SessionBinding", "SessionJournal", "default_store_url"]

_log = logging.getLogger("tooloop.store")

DEFAULT_STORE_URL = "sqlite:///tooloop-sessions.db"
"""Where sessions go when a run names a session but the agent has no store."""


def default_store_url() -> str:
    """``$TOOLOOP_STORE`` when set, else an SQLite file in the working directory."""
    return os.environ.get("TOOLOOP_STORE") or DEFAULT_STORE_URL


class SessionJournal:
    """Appends each message the loop records to ``session_id``, checking ``version`` every time.

    If another writer appended to the session meanwhile, :class:`~tooloop.errors.ConflictError`
    stops this run instead of interleaving two conversations.
    """

    def __init__(self, store: Store, session_id: str, version: int):
        self.store = store
        self.session_id = session_id
        self.version = version
        self._lock = asyncio.Lock()

    async def record(self, messages: Sequence[Message]) -> None:
        """Persist ``messages``; a tool call recorded again replaces its earlier record."""
        async with self._lock:  # parallel tool calls record their outcomes concurrently
            write = asyncio.ensure_future(
                self.store.append(self.session_id, list(messages), expected_version=self.version)
            )
            try:
                self.version = await asyncio.shield(write)
                if _log.isEnabledFor(logging.DEBUG):
                    _log.debug("session %s: wrote %d messages (v%d)", self.session_id, len(messages), self.version)
            except asyncio.CancelledError:
                # A write already on its way still commits; know its version before the run, now
                # cancelled, writes its last messages.
                self.version = await write
                raise


class SessionBinding:
    """Opens a session for one run: its stored history and a journal; closes a store it opened."""

    def __init__(self, store: Store | str, session_id: str):
        self._store = store
        self.session_id = session_id
        self._owned: Store | None = None
        self._opened: Store | None = None

    async def open(self) -> tuple[Sequence[Message], SessionJournal]:
        """The session's messages (empty for a new session) and the journal to continue it."""
        store = await self._open_store()
        self._opened = store
        try:
            info = await store.get_session(self.session_id)
        except SessionNotFoundError:
            return (), SessionJournal(store, self.session_id, 0)
        history = await store.load(self.session_id)
        return history, SessionJournal(store, self.session_id, info.version)

    async def _open_store(self) -> Store:
        if isinstance(self._store, str):
            from . import open_store

            store: Store = open_store(self._store)
            self._owned = store
        else:
            store = self._store
        return store

    async def close(self, usage: Usage, model: str | None, transcript: Transcript) -> None:
        """Add the run's usage to the session's totals, note the model and a title, and close a
        store this binding opened from a URL."""
        try:
            if self._opened is not None and (usage.requests or usage.tool_calls):
                await self._update_metadata(self._opened, usage, model, transcript)
        finally:
            if self._owned is not None:
                owned, self._owned = self._owned, None
                await owned.close()

    async def _update_metadata(self, store: Store, usage: Usage, model: str | None, transcript: Transcript) -> None:
        info = await store.get_session(self.session_id)
        title = info.title
        if title is None:
            first = next((m for m in transcript if isinstance(m, UserMessage)), None)
            title = _title(first.text) if first is not None else None
        await store.set_metadata(self.session_id, title=title, model=model or info.model, usage=info.usage + usage)


def _title(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
