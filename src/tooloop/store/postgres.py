"""PostgreSQL store: psycopg 3 (async) with a connection pool; safe for many processes.

``postgresql://user:password@host:port/dbname`` (any libpq connection string). Writers of one
session are serialised by a row lock on the session (``SELECT ... FOR UPDATE``); different
sessions never wait for each other.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ..errors import ConfigurationError

    raise ConfigurationError(f'{exc}. Install the PostgreSQL extra: pip install "tooloop[postgres]"') from exc

from ..errors import ArgumentValueError, ConflictError, SessionNotFoundError, StoreError, StoreUnavailableError
from ..messages import Message, Usage
from ..transcript import SCHEMA_VERSION, Transcript
from ._common import CLAIM_LEASE_SQL, PROGRESS_SQL, BaseStore, busy, masked_url, optional_float
from ._records import (
    Latest,
    Record,
    built_on,
    check_fork_at,
    decode_rows,
    encode,
    latest_per_position,
    metadata_changes,
    plan_rows,
    repack,
    session_details,
    to_datetime,
    usage_to_json,
)
from ._search import SearchQuery
from .base import UNSET, Progress, SessionInfo, SessionOrder, Write
from .migrations import POSTGRES_MIGRATIONS, SCHEMA_TABLE, Migration, check_schema_version

__all__ = ["PostgresStore"]

_Conn = psycopg.AsyncConnection[tuple[Any, ...]]
_T = TypeVar("_T")
_RECONNECT_TIMEOUT = 2.0
_log = logging.getLogger("tooloop.store")
_SESSION_COLUMNS = (
    "id, title, model, created_at, updated_at, version, message_count, usage, metadata, stop_reason, errors"
)
_INSERT_SESSION_COLUMNS = (
    "id, title, model, created_at, updated_at, version, message_count, usage, metadata, cost, tokens, tool_calls"
)
_MIGRATION_LOCK = 0x746F6F6C6F6F70  # "tooloop": one process migrates at a time
_ORDER_COLUMNS = {"updated": "updated_at", "created": "created_at", "messages": "message_count"}
_NULLABLE_ORDERS = frozenset({"title", "model", "cost", "stop_reason"})
_INSERT_ROW = "INSERT INTO tooloop_messages VALUES (%s, %s, %s, %s, %s, %s, %s)"


class PostgresStore(BaseStore):
    """Sessions in PostgreSQL. Open with :func:`tooloop.store.open_store`; connects on first use.

    A lost connection, a server restarting, a serialization failure or a moment without a free
    pooled connection is retried with backoff for up to ``retry_for`` seconds; after that the
    operation raises :class:`~tooloop.StoreUnavailableError` (retryable), naming the server with
    its password masked. A write whose commit was cut off is checked on the next attempt, so it
    is applied once.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        retry_for: float = 30.0,
        migrations: tuple[Migration, ...] = POSTGRES_MIGRATIONS,
    ):
        if isinstance(retry_for, bool) or not isinstance(retry_for, int | float) or retry_for < 0:
            raise ArgumentValueError(f"PostgresStore(retry_for=...) must be seconds >= 0, got {retry_for!r}")
        self._conninfo = conninfo
        self._where = f"PostgreSQL at {masked_url(conninfo)}"
        self._sizes = (min_size, max_size)
        self._retry_for = float(retry_for)
        self._migrations = migrations
        self._pool = self._new_pool()
        self._opened = False
        self._closed = False
        self._lock = asyncio.Lock()

    def _new_pool(self) -> AsyncConnectionPool[Any]:
        min_size, max_size = self._sizes
        # A short reconnect_timeout: the pool's own reconnection backs off without bound (after a
        # minute's outage, its next try could be a minute away); past it, waiting operations (retried
        # here with a backoff capped at 1 s) make the pool try again at once.
        return AsyncConnectionPool(
            self._conninfo,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
            reconnect_timeout=_RECONNECT_TIMEOUT,
        )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgresStore:
        """A store for a ``postgresql://`` (or ``postgres://``) URL."""
        return cls(url, **options)

    async def open(self) -> None:
        """Open the pool and apply pending migrations (done on first use otherwise)."""
        if self._closed:
            raise StoreError("the PostgreSQL store is closed")
        if self._opened:
            return
        async with self._lock:
            if self._opened:
                return
            try:
                await self._pool.open(wait=True, timeout=max(self._retry_for, 1.0))
                async with self._pool.connection() as conn, conn.transaction():
                    await _migrate(conn, self._migrations)
            except BaseException as exc:
                await self._pool.close()
                self._pool = self._new_pool()  # a closed pool cannot be opened again
                if isinstance(exc, psycopg.OperationalError):
                    raise self._failure("connecting", await self._reason(exc)) from exc
                raise
            self._opened = True

    async def _reason(self, exc: psycopg.OperationalError) -> psycopg.OperationalError:
        """Why the pool could not connect: one direct attempt says what the pool only timed out on."""
        if not isinstance(exc, PoolTimeout):
            return exc
        try:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, connect_timeout=5)
        except psycopg.OperationalError as direct:
            return direct
        await conn.close()
        return exc

    def _failure(self, what: str, exc: psycopg.OperationalError) -> StoreError:
        detail = str(exc).replace(self._conninfo, masked_url(self._conninfo))
        if _transient(exc):
            return StoreUnavailableError(
                f"{self._where} stayed unreachable for {self._retry_for:g} s while {what}: {detail}"
            )
        return StoreError(f"{self._where}: {what} failed: {detail}")

    async def _retrying(self, what: str, work: Callable[[_Conn, bool], Awaitable[_T]], *, write: bool = True) -> _T:
        """``work(conn, again)`` in a transaction, tried again while the failure is transient.

        ``again`` tells a later attempt that an earlier one may have committed before its
        connection was lost.
        """
        await self.open()
        deadline = time.monotonic() + self._retry_for
        delay, again = 0.05, False
        while True:
            try:
                # a short wait per attempt: asking again is what makes a pool that gave up reconnect
                wait = min(max(0.1, deadline - time.monotonic()), 1.0 + _RECONNECT_TIMEOUT)
                async with self._pool.connection(timeout=wait) as conn:
                    if not write:
                        return await work(conn, again)
                    async with conn.transaction():
                        return await work(conn, again)
            except psycopg.OperationalError as exc:
                if not _transient(exc) or time.monotonic() + delay >= deadline:
                    raise self._failure(what, exc) from exc
                _log.warning("%s: %s failed (%s); trying again", self._where, what, exc)
                await asyncio.sleep(delay)
                delay, again = min(delay * 2, 1.0), True

    async def close(self) -> None:
        """Close every pooled connection."""
        if not self._closed:
            self._closed = True
            await self._pool.close()

    async def append(self, session_id: str, messages: Sequence[Message], *, expected_version: int | None = None) -> int:
        """Append ``messages`` in one transaction; see :meth:`tooloop.store.Store.append`."""
        records = [encode(m) for m in messages]
        try:
            return await self._retrying(
                f"writing to session {session_id!r}",
                lambda conn, again: _append(conn, session_id, records, expected_version, again=again),
            )
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(f"session {session_id!r}: another writer appended at the same position") from exc

    async def retract(self, session_id: str, writes: Sequence[tuple[int, int]]) -> None:
        """Take back records in one transaction; see :meth:`tooloop.store.Store.retract`."""
        await self._retrying(f"retracting from session {session_id!r}", lambda c, _: _retract(c, session_id, [*writes]))

    async def claim_lease(self, session_id: str, owner: str, ttl: float) -> float:
        """See :meth:`tooloop.store.Store.claim_lease`."""

        async def claim(conn: _Conn, again: bool) -> float:
            now = time.time()
            cursor = await conn.execute(CLAIM_LEASE_SQL.replace("?", "%s"), (session_id, owner, now + ttl, now))
            if await cursor.fetchone() is None:
                cursor = await conn.execute(
                    "SELECT owner, expires_at FROM tooloop_leases WHERE session_id = %s", (session_id,)
                )
                raise busy(session_id, await cursor.fetchone())
            return now + ttl

        return await self._retrying(f"claiming the lease of session {session_id!r}", claim)

    async def release_lease(self, session_id: str, owner: str) -> None:
        """See :meth:`tooloop.store.Store.release_lease`."""
        sql = "DELETE FROM tooloop_leases WHERE session_id = %s AND owner = %s"
        await self._retrying(
            f"releasing the lease of session {session_id!r}", lambda c, _: c.execute(sql, (session_id, owner))
        )

    async def load(self, session_id: str) -> Transcript:
        """The session's transcript; see :meth:`tooloop.store.Store.load`."""

        async def read(conn: _Conn, again: bool) -> list[tuple[Any, ...]]:
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await _require(conn, session_id)
            cursor = await conn.execute(
                "SELECT seq, pos, format, data FROM tooloop_messages WHERE session_id = %s ORDER BY seq",
                (session_id,),
            )
            return await cursor.fetchall()

        return decode_rows(session_id, await self._retrying(f"loading session {session_id!r}", read))

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's metadata; see :meth:`tooloop.store.Store.get_session`."""
        return await self._retrying(
            f"reading session {session_id!r}", lambda c, _: _require(c, session_id), write=False
        )

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently updated first."""

        async def listed(conn: _Conn, again: bool) -> list[SessionInfo]:
            cursor = await conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions ORDER BY updated_at DESC, id LIMIT %s OFFSET %s",
                (limit, offset),
            )
            return [_info(row, lenient=True) for row in await cursor.fetchall()]

        return await self._retrying("listing sessions", listed, write=False)

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
        """Sessions matching ``text`` and the filters, through the ``tsvector`` index; see
        :meth:`tooloop.store.Store.search`."""
        query = SearchQuery.of(
            text,
            model=model,
            stop_reason=stop_reason,
            errors_only=errors_only,
            order_by=order_by,
            descending=descending,
            limit=limit,
            offset=offset,
        )
        match = " & ".join(f"'{word}':*" for word in query.words)
        where, params = query.conditions(
            "id IN (SELECT session_id FROM tooloop_search WHERE body @@ to_tsquery('simple', %s))", match, "%s"
        )
        order = query.order(_ORDER_COLUMNS, _NULLABLE_ORDERS)
        sql = f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions {where} {order} LIMIT %s OFFSET %s"

        async def found(conn: _Conn, again: bool) -> list[SessionInfo]:
            cursor = await conn.execute(sql, (*params, limit, offset))
            return [_info(row, lenient=True) for row in await cursor.fetchall()]

        return await self._retrying("searching sessions", found, write=False)

    async def set_metadata(
        self,
        session_id: str,
        *,
        title: str | None = UNSET,
        model: str | None = UNSET,
        usage: Usage = UNSET,
        metadata: Mapping[str, Any] = UNSET,
    ) -> SessionInfo:
        """Change the given fields (creating the session if needed)."""
        changes = metadata_changes(title=title, model=model, usage=usage, metadata=metadata)

        async def update(conn: _Conn, again: bool) -> SessionInfo:  # sets values: applying it twice is once
            now = time.time()
            await _ensure_session(conn, session_id, now)
            assignments = "".join(f"{column} = %s, " for column in changes)
            await conn.execute(
                f"UPDATE tooloop_sessions SET {assignments}updated_at = %s WHERE id = %s",
                (*changes.values(), now, session_id),
            )
            return await _require(conn, session_id)

        return await self._retrying(f"updating session {session_id!r}", update)

    async def writes(self, session_id: str) -> list[Write]:
        """See :meth:`BaseStore.writes`."""

        async def read(conn: _Conn, again: bool) -> list[Write]:
            await _require(conn, session_id)
            cursor = await conn.execute(
                "SELECT seq, pos, tool_call_id, status, written_at FROM tooloop_messages "
                "WHERE session_id = %s ORDER BY seq",
                (session_id,),
            )
            return [Write(int(r[0]), int(r[1]), r[2], r[3], to_datetime(r[4])) for r in await cursor.fetchall()]

        return await self._retrying(f"reading the writes of session {session_id!r}", read, write=False)

    async def report_progress(
        self, session_id: str, tool_call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """See :meth:`BaseStore.report_progress`."""
        values = (session_id, tool_call_id, progress, total, message, time.time(), session_id, session_id, tool_call_id)

        async def write(conn: _Conn, again: bool) -> None:
            await conn.execute(PROGRESS_SQL.replace("?", "%s"), values)

        await self._retrying(f"noting progress in session {session_id!r}", write)

    async def progress(self, session_id: str) -> list[Progress]:
        """See :meth:`BaseStore.progress`."""

        async def read(conn: _Conn, again: bool) -> list[Progress]:
            cursor = await conn.execute(
                "SELECT tool_call_id, progress, total, message, reported_at FROM tooloop_progress "
                "WHERE session_id = %s ORDER BY tool_call_id",
                (session_id,),
            )
            rows = await cursor.fetchall()
            return [Progress(r[0], float(r[1]), optional_float(r[2]), r[3], to_datetime(r[4])) for r in rows]

        return await self._retrying("reading progress", read, write=False)

    async def activity(self, session_id: str) -> tuple[int, float | None]:
        """See :meth:`BaseStore.activity`."""

        async def read(conn: _Conn, again: bool) -> tuple[int, float | None]:
            cursor = await conn.execute(
                "SELECT version, (SELECT max(reported_at) FROM tooloop_progress WHERE session_id = %s) "
                "FROM tooloop_sessions WHERE id = %s",
                (session_id, session_id),
            )
            row = await cursor.fetchone()
            if row is None:
                raise SessionNotFoundError(f"no session {session_id!r} in the store")
            return int(row[0]), optional_float(row[1])

        return await self._retrying("reading a session's activity", read, write=False)

    async def delete(self, session_id: str) -> None:
        """Remove the session and all its rows."""

        async def remove(conn: _Conn, again: bool) -> None:
            cursor = await conn.execute("DELETE FROM tooloop_sessions WHERE id = %s", (session_id,))
            if cursor.rowcount == 0 and not again:  # again: the earlier attempt's commit went through
                raise SessionNotFoundError(f"no session {session_id!r} in the store")
            await conn.execute("DELETE FROM tooloop_messages WHERE session_id = %s", (session_id,))

        await self._retrying(f"deleting session {session_id!r}", remove)

    async def fork(self, session_id: str, at: int, new_session_id: str | None = None) -> str:
        """A new session with the first ``at`` messages of ``session_id`` (copied in one transaction)."""
        new_id = new_session_id or uuid.uuid4().hex

        async def copy(conn: _Conn, again: bool) -> None:
            parent = await _require(conn, session_id, lock=True)
            check_fork_at(session_id, at, parent.message_count)
            cursor = await conn.execute(
                "SELECT seq, pos, tool_call_id, status, format, data FROM tooloop_messages "
                "WHERE session_id = %s ORDER BY seq",
                (session_id,),
            )
            kept = latest_per_position(session_id, await cursor.fetchall())[:at]
            metadata = {**parent.metadata, "forked_from": {"session_id": session_id, "at": at}}
            info = SessionInfo(id=new_id, title=parent.title, model=parent.model, metadata=metadata)
            await _create(conn, info, [Record(r[2], r[3], r[5]) for r in kept], [r[4] for r in kept], again=again)

        await self._retrying(f"forking session {session_id!r}", copy)
        return new_id

    async def _create_from(self, info: SessionInfo, records: Sequence[Record]) -> None:
        formats = [SCHEMA_VERSION] * len(records)
        await self._retrying(
            f"creating session {info.id!r}", lambda conn, again: _create(conn, info, records, formats, again=again)
        )


def _transient(exc: psycopg.OperationalError) -> bool:
    """A failure another attempt may not meet: the connection, the server's state, a lost race."""
    state = exc.sqlstate or ""
    if state:
        return state.startswith(("08", "40", "53", "57P"))
    return not any(reason in str(exc) for reason in _PERMANENT)


_PERMANENT = ("does not exist", "authentication failed", "no password supplied", "no pg_hba.conf entry")
"""Connection failures no retry cures (a wrong URL or credentials)."""


async def _migrate(conn: _Conn, migrations: tuple[Migration, ...]) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
    )
    cursor = await conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}")
    row = await cursor.fetchone()
    current = int(row[0]) if row else 0
    check_schema_version(current, migrations, "the PostgreSQL database")
    for migration in migrations:
        if migration.version > current:
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s, %s)", (migration.version, time.time()))


def _info(row: tuple[Any, ...], *, lenient: bool = False) -> SessionInfo:
    session_id = row[0]
    usage, metadata, problem = session_details(session_id, row[7], row[8], lenient=lenient)
    return SessionInfo(
        id=session_id,
        title=row[1],
        model=row[2],
        created_at=to_datetime(row[3]),
        updated_at=to_datetime(row[4]),
        version=int(row[5]),
        message_count=int(row[6]),
        usage=usage,
        metadata=metadata,
        stop_reason=row[9],
        errors=int(row[10]),
        problem=problem,
    )


async def _require(conn: _Conn, session_id: str, *, lock: bool = False) -> SessionInfo:
    suffix = " FOR UPDATE" if lock else ""
    cursor = await conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions WHERE id = %s{suffix}",
        (session_id,),
    )
    row = await cursor.fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r} in the store")
    return _info(row)


async def _ensure_session(conn: _Conn, session_id: str, now: float) -> None:
    await conn.execute(
        "INSERT INTO tooloop_sessions (id, created_at, updated_at) VALUES (%s, %s, %s) ON CONFLICT (id) DO NOTHING",
        (session_id, now, now),
    )


async def _append(conn: _Conn, session_id: str, records: list[Record], expected: int | None, *, again: bool) -> int:
    now = time.time()
    await _ensure_session(conn, session_id, now)
    cursor = await conn.execute(
        "SELECT version, message_count FROM tooloop_sessions WHERE id = %s FOR UPDATE", (session_id,)
    )
    row = await cursor.fetchone()
    version, count = (int(row[0]), int(row[1])) if row else (0, 0)
    if expected is not None and expected != version:
        if again and await _landed(conn, session_id, records, expected, version):
            return version  # the earlier attempt committed before its connection was lost
        raise ConflictError(
            f"session {session_id!r} is at version {version}, not {expected} as this writer expected: another "
            "writer changed it first. Nothing was written; reload the session and retry."
        )
    latest = await _latest(conn, session_id, {r.tool_call_id for r in records if r.tool_call_id is not None})
    rows, new_version, new_count = plan_rows(records, latest, version, count, claim=expected is not None)
    await conn.execute(
        "UPDATE tooloop_sessions SET version = %s, message_count = %s, updated_at = %s WHERE id = %s",
        (new_version, new_count, now, session_id),
    )
    if rows:
        async with conn.cursor() as cur:
            await cur.executemany(
                _INSERT_ROW, [(session_id, r.seq, r.pos, r.tool_call_id, r.status, r.format, r.data) for r in rows]
            )
    return new_version


async def _landed(conn: _Conn, session_id: str, records: list[Record], expected: int, version: int) -> bool:
    """Whether exactly these records were written at ``expected`` and nothing after them.

    Only asked after a connection was lost around a commit. Records that repeated stored ones
    were not written, so the rows must be the others, in order (an identical write by another
    writer in that very moment is not told apart).
    """
    cursor = await conn.execute(
        "SELECT data FROM tooloop_messages WHERE session_id = %s AND seq >= %s ORDER BY seq", (session_id, expected)
    )
    written = [row[0] for row in await cursor.fetchall()]
    if not written or version != expected + len(written):
        return False
    mine = iter(r.data for r in records)
    return all(any(data == candidate for candidate in mine) for data in written)


async def _retract(conn: _Conn, session_id: str, writes: list[tuple[int, int]]) -> None:
    cursor = await conn.execute("SELECT version FROM tooloop_sessions WHERE id = %s FOR UPDATE", (session_id,))
    row = await cursor.fetchone()
    if row is None or built_on(int(row[0]), writes):
        return
    for start, end in writes:
        await conn.execute(
            "DELETE FROM tooloop_messages WHERE session_id = %s AND seq >= %s AND seq < %s", (session_id, start, end)
        )
    cursor = await conn.execute(
        "SELECT seq, pos FROM tooloop_messages WHERE session_id = %s ORDER BY seq", (session_id,)
    )
    moves, count = repack([(int(seq), int(pos)) for seq, pos in await cursor.fetchall()])
    if moves:
        async with conn.cursor() as cur:
            await cur.executemany(
                "UPDATE tooloop_messages SET pos = %s WHERE session_id = %s AND seq = %s",
                [(p, session_id, q) for p, q in moves],
            )
    await conn.execute(
        "UPDATE tooloop_sessions SET message_count = %s, updated_at = %s WHERE id = %s",
        (count, time.time(), session_id),
    )


async def _latest(conn: _Conn, session_id: str, call_ids: set[str]) -> dict[str, Latest]:
    if not call_ids:
        return {}
    cursor = await conn.execute(
        "SELECT DISTINCT ON (tool_call_id) tool_call_id, pos, status, data FROM tooloop_messages "
        "WHERE session_id = %s AND tool_call_id = ANY(%s) ORDER BY tool_call_id, seq DESC",
        (session_id, list(call_ids)),
    )
    return {row[0]: Latest(int(row[1]), row[2], row[3]) for row in await cursor.fetchall()}


async def _create(
    conn: _Conn, info: SessionInfo, records: Sequence[Record], formats: Sequence[int], *, again: bool = False
) -> None:
    now = time.time()
    cursor = await conn.execute(
        f"INSERT INTO tooloop_sessions ({_INSERT_SESSION_COLUMNS}) VALUES ({', '.join(['%s'] * 12)}) "
        "ON CONFLICT (id) DO NOTHING",
        (
            info.id,
            info.title,
            info.model,
            info.created_at.timestamp() if info.created_at else now,
            info.updated_at.timestamp() if info.updated_at else now,
            len(records),
            len(records),
            usage_to_json(info.usage),
            json.dumps(dict(info.metadata), ensure_ascii=False),
            None if info.usage.cost is None else str(info.usage.cost),
            info.usage.input_tokens + info.usage.output_tokens,
            info.usage.tool_calls,
        ),
    )
    if cursor.rowcount == 0:
        if again:
            return  # the earlier attempt created it before its connection was lost
        raise ConflictError(f"session {info.id!r} already exists")
    if records:
        async with conn.cursor() as cur:
            await cur.executemany(
                _INSERT_ROW,
                [(info.id, i, i, r.tool_call_id, r.status, formats[i], r.data) for i, r in enumerate(records)],
            )
