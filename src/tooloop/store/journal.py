"""``SessionJournal``: the loop's journal writing to a store session, and the agent's session binding."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentTypeError, ArgumentValueError, ConflictError, SessionBusyError, SessionNotFoundError
from ..events import ToolCallProgress
from ..messages import Message, ToolCallMessage, ToolCallStatus, Usage, UserMessage
from ..transcript import Transcript
from ._common import BaseStore
from .base import SessionInfo, Store

__all__ = [
    "DEFAULT_STORE_URL",
    "SessionBinding",
    "SessionJournal",
    "SessionLease",
    "default_store_url",
    "user_store_url",
]

_log = logging.getLogger("tooloop.store")

SETUP_KEY = "tooloop.agent"
"""The session metadata key holding what the last run's agent ran with: its name, model, system
prompt and model settings."""

DEFAULT_STORE_URL = "sqlite:///tooloop-sessions.db"
"""Where sessions go when a run names a session but the agent has no store."""


def user_store_url() -> str:
    """``$TOOLOOP_STORE`` when set, else ``sessions.db`` in the user's data folder (the folder is
    created): where the command line keeps sessions."""
    if os.environ.get("TOOLOOP_STORE"):
        return os.environ["TOOLOOP_STORE"]
    from platformdirs import user_data_path

    folder = user_data_path("tooloop", appauthor=False)
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'sessions.db'}"


def default_store_url() -> str:
    """``$TOOLOOP_STORE`` when set, else an SQLite file in the working directory."""
    return os.environ.get("TOOLOOP_STORE") or DEFAULT_STORE_URL


@dataclass(frozen=True, slots=True)
class SessionLease:
    """Own a session while a run uses it, so one worker at a time runs it.

    A run takes the session's lease before it reads the session and renews it every ``ttl / 3``
    seconds; a second run finds it held and fails fast with :class:`~tooloop.SessionBusyError`, or
    waits up to ``wait`` seconds for it. A worker that dies stops renewing, and its lease is
    taken over ``ttl`` seconds later, so a dead worker's session is resumed by another one but a
    live worker's never is. Hosts' clocks must agree to well under ``ttl``.
    """

    ttl: float = 30.0
    """Seconds a lease lives without renewal: how long a dead worker's session stays blocked."""
    wait: float = 0.0
    """Seconds to wait for a held lease before :class:`~tooloop.SessionBusyError`."""

    def __post_init__(self) -> None:
        for name in ("ttl", "wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ArgumentTypeError(f"SessionLease({name}=...) must be a number of seconds, got {value!r}")
        if self.ttl <= 0 or self.wait < 0:
            raise ArgumentValueError(f"SessionLease needs ttl > 0 and wait >= 0, got ttl={self.ttl}, wait={self.wait}")


class _Held:
    """A lease this run holds, renewed in the background until released."""

    def __init__(self, store: Store, session_id: str, lease: SessionLease):
        self.store = store
        self.session_id = session_id
        self.lease = lease
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._renewing: asyncio.Task[None] | None = None
        self._released = False

    async def take(self) -> None:
        deadline = time.monotonic() + self.lease.wait
        while True:
            try:
                await self.store.claim_lease(self.session_id, self.owner, self.lease.ttl)
                break
            except SessionBusyError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                await asyncio.sleep(min(left, max(0.05, self.lease.ttl / 10)))
        self._renewing = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        # The flag, not only the cancellation, ends the renewal: on Python 3.11 a cancellation that
        # lands while a pooled connection is being handed over is swallowed by asyncio.wait_for.
        while not self._released:
            await asyncio.sleep(self.lease.ttl / 3)
            if self._released:
                return
            try:
                await self.store.claim_lease(self.session_id, self.owner, self.lease.ttl)
            except SessionBusyError:
                _log.warning(
                    "session %s: lease lost to another worker; this run stops at its next write", self.session_id
                )
                return
            except Exception as exc:  # the database is unreachable for now: try again, the lease still runs
                _log.warning("session %s: could not renew the lease (%s); trying again", self.session_id, exc)
        # Released while a renewal was under way: it may have renewed after release() ended the lease.
        with contextlib.suppress(Exception):  # if the database is gone, the lease expires by itself
            await self.store.release_lease(self.session_id, self.owner)

    async def release(self) -> None:
        self._released = True
        renewing = self._renewing
        try:
            if renewing is not None and not renewing.done():
                renewing.cancel()
                # Bounded: a renewal that swallowed the cancellation stops at its flag, and ends the
                # lease itself if it renewed it meanwhile.
                await asyncio.wait({renewing}, timeout=self.lease.ttl)
        finally:
            await asyncio.shield(self.store.release_lease(self.session_id, self.owner))


CONSISTENT_READS = 5
"""Times a run reads a session whose version moves while it is read before it goes on with the first."""

CUT_RUN_WAIT = 30.0
"""Seconds a run waits for an earlier run of its session in this process to write its last record."""


class _OpenRuns:
    """The sessions runs of this process have open, per store (an object, or the URL it opens).

    A call recorded as started while the run that started it is still open (cancelled, but not yet
    done writing that the cancel cut it) is not interrupted: a run that reads it waits for that
    run to close and reads the session again, instead of running the call a second time.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[int | str, str], list[SessionBinding]] = {}
        self._lock = threading.Lock()

    def add(self, key: tuple[int | str, str], binding: SessionBinding) -> None:
        with self._lock:
            self._open.setdefault(key, []).append(binding)

    def remove(self, key: tuple[int | str, str], binding: SessionBinding) -> None:
        with self._lock:
            runs = self._open.get(key, [])
            if binding in runs:
                runs.remove(binding)
            if not runs:
                self._open.pop(key, None)

    def earlier(self, key: tuple[int | str, str], binding: SessionBinding) -> list[SessionBinding]:
        """The runs of the session opened before ``binding`` and still open."""
        with self._lock:
            runs = self._open.get(key, [])
            return runs[: runs.index(binding)] if binding in runs else list(runs)


_OPEN_RUNS = _OpenRuns()


PROGRESS_INTERVAL = 0.25
"""Seconds between two progress writes of one run: reports in between are coalesced, the latest wins."""


class SessionJournal:
    """Appends each message the loop records to ``session_id``, checking ``version`` every time.

    If another writer appended to the session meanwhile, :class:`~tooloop.errors.ConflictError`
    stops this run instead of interleaving two conversations; the journal then refuses further
    writes, and :attr:`written` says what to take back (:meth:`SessionBinding.close` does).

    Running calls' progress goes to the store too (a built-in store keeps each call's latest), at
    most every :data:`PROGRESS_INTERVAL` seconds, so a viewer of the session can show it.
    """

    def __init__(self, store: Store, session_id: str, version: int):
        self.store = store
        self.session_id = session_id
        self.version = version
        self.written: list[tuple[int, int]] = []
        """The versions before and after each write of this journal."""
        self.lost = False
        """True once a write lost to another writer."""
        self._lock = asyncio.Lock()
        self._progress: dict[str, ToolCallProgress] = {}
        self._progress_task: asyncio.Task[None] | None = None

    def note_progress(self, event: ToolCallProgress) -> None:
        """Keep a running call's progress for the session's viewers; never blocks (a task writes it)."""
        if self.lost or not isinstance(self.store, BaseStore):
            return
        self._progress[event.tool_call_id] = event
        if self._progress_task is None or self._progress_task.done():
            self._progress_task = asyncio.get_running_loop().create_task(self._write_progress(self.store))

    async def _write_progress(self, store: BaseStore) -> None:
        while self._progress:
            pending, self._progress = self._progress, {}
            async with self._lock:  # never between a call's outcome and its write
                for event in pending.values():
                    try:
                        await store.report_progress(
                            self.session_id, event.tool_call_id, event.progress, event.total, event.message
                        )
                    except Exception as exc:  # progress is for viewers: the run goes on without it
                        _log.debug("session %s: progress not written: %s", self.session_id, exc)
            await asyncio.sleep(PROGRESS_INTERVAL)

    async def stop_progress(self) -> None:
        """Stop writing progress (the run is over; what is not written yet no longer matters)."""
        task, self._progress_task = self._progress_task, None
        self._progress.clear()
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def record(self, messages: Sequence[Message]) -> None:
        """Persist ``messages``; a tool call recorded again replaces its earlier record."""
        if self._progress:
            for message in messages:  # a call with its outcome has no progress left to show
                if isinstance(message, ToolCallMessage) and message.status.finished:
                    self._progress.pop(message.tool_call_id, None)
        async with self._lock:  # parallel tool calls record their outcomes concurrently
            if self.lost:
                raise ConflictError(
                    f"session {self.session_id!r}: this run lost to another writer; nothing more is written"
                )
            write = asyncio.ensure_future(
                self.store.append(self.session_id, list(messages), expected_version=self.version)
            )
            try:
                self._wrote(await asyncio.shield(write))
                if _log.isEnabledFor(logging.DEBUG):
                    _log.debug("session %s: wrote %d messages (v%d)", self.session_id, len(messages), self.version)
            except asyncio.CancelledError:
                # A write already on its way still commits; know its version before the run, now
                # cancelled, writes its last messages.
                self._wrote(await write)
                raise
            except ConflictError:
                self.lost = True
                raise

    def _wrote(self, version: int) -> None:
        if version != self.version:
            self.written.append((self.version, version))
        self.version = version


class SessionBinding:
    """Opens a session for one run: its stored history and a journal; closes a store it opened."""

    def __init__(
        self,
        store: Store | str,
        session_id: str,
        lease: SessionLease | None = None,
        turn_id: str | None = None,
        setup: Mapping[str, Any] | None = None,
    ):
        self._setup = setup
        """What the agent runs with (name, model, system prompt, settings), kept in the session."""
        self._store = store
        self.session_id = session_id
        self._turn_id = turn_id
        self._lease = lease
        self._held: _Held | None = None
        self._owned: Store | None = None
        self._opened: Store | None = None
        self._journal: SessionJournal | None = None
        self._key = (self._store if isinstance(self._store, str) else id(self._store), session_id)
        self._closed = threading.Event()
        self._uncounted = Usage()
        """Usage recorded on messages of an earlier run that never closed (killed): added at close."""

    @property
    def store(self) -> Store | str:
        """The store once opened (else what was given: a store or its URL)."""
        return self._opened if self._opened is not None else self._store

    async def open(self) -> tuple[Sequence[Message], SessionJournal]:
        """The session's messages (empty for a new session) and the journal to continue it.

        The messages and the version the journal continues from are of one moment: a session
        written to between the two reads is read again. While another run of the session is open
        in this process (a cancelled one still writing what the cancel cut), a session ending with
        a started call is read again once that run has closed.
        """
        store = await self._open_store()
        self._opened = store
        _OPEN_RUNS.add(self._key, self)
        if self._lease is not None:
            held = _Held(store, self.session_id, self._lease)
            await held.take()
            self._held = held
        try:
            info, history = await self._read(store)
        except SessionNotFoundError:
            self._journal = SessionJournal(store, self.session_id, 0)
            return (), self._journal
        self._compare_setup(info.metadata.get(SETUP_KEY))
        earlier = _OPEN_RUNS.earlier(self._key, self)
        if earlier and _started_calls(history):
            # Another run of this process may still be writing the session (a cancelled one records
            # what the cancel cut): read it once that run is done, not a call it started as one to
            # run again.
            await self._wait_for(earlier)
            info, history = await self._read(store)
        self._uncounted = uncounted_usage(history, info.usage, info.metadata)
        self._journal = SessionJournal(store, self.session_id, info.version)
        return history, self._journal

    async def _read(self, store: Store) -> tuple[SessionInfo, Sequence[Message]]:
        """The session's metadata and messages at one version.

        A store reads the two separately: a write landing in between (another run of the session
        recording its last message) would leave the journal a version older than the messages,
        and the run's first write a :class:`~tooloop.errors.ConflictError` against a session it
        had read whole. The version is read again after the messages; while it moved, both are
        read again (an earlier run of this process still writing is waited for first). A session
        that never holds still for :data:`CONSISTENT_READS` reads keeps the older version: the
        run's first write then conflicts, as with any writer it did not see.
        """
        for _ in range(CONSISTENT_READS):
            info = await store.get_session(self.session_id)
            history = await store.load(self.session_id)
            if await store.version(self.session_id) == info.version:
                break
            earlier = _OPEN_RUNS.earlier(self._key, self)
            if earlier:
                await self._wait_for(earlier)
        return info, history

    def _compare_setup(self, stored: Any) -> None:
        """Say so when another agent (another system prompt) continues the session."""
        if self._setup is None or not isinstance(stored, Mapping):
            return
        changed = [key for key in ("system", "name") if stored.get(key) != self._setup.get(key)]
        if "system" in changed:
            before, now = stored.get("name"), self._setup.get("name")
            who = f" (agent {before!r} before, {now!r} now)" if "name" in changed else ""
            _log.warning(
                "session %s was run with another system prompt%s: this run sends its own, %s",
                self.session_id,
                who,
                "none" if self._setup.get("system") is None else f"{len(str(self._setup['system']))} characters",
            )
            self.continued_from = dict(stored)

    continued_from: dict[str, Any] | None = None
    """The setup the session was last run with, when a run continues it with another system prompt."""

    async def _wait_for(self, runs: Sequence[SessionBinding]) -> None:
        # Polled: the other run may be on another thread's event loop (run_sync, a worker thread).
        deadline = time.monotonic() + CUT_RUN_WAIT
        while not all(run._closed.is_set() for run in runs):
            if time.monotonic() >= deadline:
                raise SessionBusyError(
                    f"session {self.session_id!r}: a tool call of it is still running in another run of "
                    f"this process after {CUT_RUN_WAIT:g} seconds; it is not run a second time"
                )
            await asyncio.sleep(0.01)

    async def _open_store(self) -> Store:
        if isinstance(self._store, str):
            from . import open_store

            store: Store = open_store(self._store)
            self._owned = store
        else:
            store = self._store
        return store

    async def close(self, usage: Usage, model: str | None, transcript: Transcript) -> None:
        """Add the run's usage to the session's totals, note the model and a title (or, when the run
        lost a :class:`~tooloop.errors.ConflictError`, take back what it wrote), and close a store
        this binding opened from a URL."""
        journal = self._journal
        try:
            if journal is not None:
                await journal.stop_progress()
            if self._opened is not None and journal is not None and journal.lost:
                # A run that lost to another writer leaves nothing behind that nobody built on: the
                # store takes its messages back unless the winner wrote after them (the session's
                # totals stay as they were; the error carries the usage). A turn with an id keeps
                # them: another submit of that turn may have adopted and continued what it wrote.
                if journal.written and self._turn_id is None:
                    await self._opened.retract(self.session_id, journal.written)
                    _log.info(
                        "session %s: this run lost to another writer; its writes nobody built on are taken back",
                        self.session_id,
                    )
            elif self._opened is not None and (usage.requests or usage.tool_calls):
                await self._update_metadata(self._opened, usage, model, transcript)
        finally:
            try:
                if self._held is not None:
                    held, self._held = self._held, None
                    await held.release()
                if self._owned is not None:
                    owned, self._owned = self._owned, None
                    await owned.close()
            finally:
                self._closed.set()
                _OPEN_RUNS.remove(self._key, self)

    async def _update_metadata(self, store: Store, usage: Usage, model: str | None, transcript: Transcript) -> None:
        info = await store.get_session(self.session_id)
        title = info.title
        if title is None:
            first = next((m for m in transcript if isinstance(m, UserMessage)), None)
            title = _title(first.text) if first is not None else None
        metadata = info.metadata if self._setup is None else {**info.metadata, SETUP_KEY: dict(self._setup)}
        await store.set_metadata(
            self.session_id,
            title=title,
            model=model or info.model,
            usage=info.usage + self._uncounted + usage,
            metadata={**metadata, USAGE_COUNTED: len(transcript)},
        )


USAGE_COUNTED = "tooloop.usage_counted"
"""Session metadata: how many of the session's messages the usage totals include."""


def uncounted_usage(history: Sequence[Message], totals: Usage, metadata: Mapping[str, Any]) -> Usage:
    """The usage on messages the session's totals do not include yet: what a run killed before it
    closed (kill -9, a lost machine) recorded, each request's usage stored with its answer."""
    counted = metadata.get(USAGE_COUNTED)
    if not isinstance(counted, int) or isinstance(counted, bool):
        # Totals written before the marker existed include every message; none yet: none do.
        counted = 0 if totals.requests == 0 and totals.tool_calls == 0 else len(history)
    extra = Usage()
    for message in history[counted:]:
        usage = getattr(message, "usage", None)
        if isinstance(usage, Usage):
            extra = extra + usage
        if isinstance(message, ToolCallMessage) and message.status in (ToolCallStatus.OK, ToolCallStatus.ERROR):
            extra = extra + Usage(tool_calls=1)
    return extra


def _started_calls(history: Sequence[Message]) -> bool:
    """Whether the session ends with a call recorded as started (run, or running, without a result)."""
    for message in reversed(history):
        if not isinstance(message, ToolCallMessage):
            return False
        if message.status is ToolCallStatus.STARTED:
            return True
    return False


def _title(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
