"""PostgreSQL store: psycopg 3 (async) with a connection pool; safe for many processes.

``postgresql://user:password@host:port/dbname`` (any libpq connection string). Writers of one
session are serialised by a row lock on the session (``SELECT ... FOR UPDATE``); different
sessions never wait for each other.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ..errors import ConfigurationError

    raise ConfigurationError(f'{exc}. Install the PostgreSQL extra: pip install "tooloop[postgres]"') from exc

from ..errors import ConflictError, SessionNotFoundError, StoreError
from ..messages import Message, Usage
from ..transcript import SCHEMA_VERSION, Transcript
from ._common import CLAIM_LEASE_SQL, BaseStore, busy
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
from .base import UNSET, SessionInfo
from .migrations import POSTGRES_MIGRATIONS, SCHEMA_TABLE, Migration, check_schema_version

__all__ = ["PostgresStore"]

_Conn = psycopg.AsyncConnection[tuple[Any, ...]]
_SESSION_COLUMNS = "id, title, model, created_at, updated_at, version, message_count, usage, metadata"
_INSERT_SESSION_COLUMNS = _SESSION_COLUMNS + ", cost"
_MIGRATION_LOCK = 0x746F6F6C6F6F70  # "tooloop": one process migrates at a time
_INSERT_ROW = "INSERT INTO tooloop_messages VALUES (%s, %s, %s, %s, %s, %s, %s)"


class PostgresStore(BaseStore):
    """Sessions in PostgreSQL. Open with :func:`tooloop.store.open_store`; connects on first use."""

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        migrations: tuple[Migration, ...] = POSTGRES_MIGRATIONS,
    ):
        self._conninfo = conninfo
        self._migrations = migrations
        self._pool = AsyncConnectionPool(
            conninfo, min_size=min_size, max_size=max_size, open=False, kwargs={"autocommit": True}
        )
        self._opened = False
        self._closed = False
        self._lock = asyncio.Lock()

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
            await self._pool.open(wait=True)
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    await _migrate(conn, self._migrations)
            except BaseException:
                await self._pool.close()
                raise
            self._opened = True

    async def close(self) -> None:
        """Close every pooled connection."""
        if not self._closed:
            self._closed = True
            await self._pool.close()

    async def append(self, session_id: str, messages: Sequence[Message], *, expected_version: int | None = None) -> int:
        """Append ``messages`` in one transaction; see :meth:`tooloop.store.Store.append`."""
        records = [encode(m) for m in messages]
        await self.open()
        try:
            async with self._pool.connection() as conn, conn.transaction():
                return await _append(conn, session_id, records, expected_version)
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(f"session {session_id!r}: another writer appended at the same position") from exc

    async def retract(self, session_id: str, writes: Sequence[tuple[int, int]]) -> None:
        """Take back records in one transaction; see :meth:`tooloop.store.Store.retract`."""
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            await _retract(conn, session_id, list(writes))

    async def claim_lease(self, session_id: str, owner: str, ttl: float) -> float:
        """See :meth:`tooloop.store.Store.claim_lease`."""
        await self.open()
        now = time.time()
        async with self._pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(CLAIM_LEASE_SQL.replace("?", "%s"), (session_id, owner, now + ttl, now))
            if await cursor.fetchone() is None:
                cursor = await conn.execute(
                    "SELECT owner, expires_at FROM tooloop_leases WHERE session_id = %s", (session_id,)
                )
                raise busy(session_id, await cursor.fetchone())
        return now + ttl

    async def release_lease(self, session_id: str, owner: str) -> None:
        """See :meth:`tooloop.store.Store.release_lease`."""
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("DELETE FROM tooloop_leases WHERE session_id = %s AND owner = %s", (session_id, owner))

    async def load(self, session_id: str) -> Transcript:
        """The session's transcript; see :meth:`tooloop.store.Store.load`."""
        await self.open()
        async with self._pool.connection() as conn:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                await _require(conn, session_id)
                cursor = await conn.execute(
                    "SELECT seq, pos, format, data FROM tooloop_messages WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                )
                rows = await cursor.fetchall()
        return decode_rows(session_id, rows)

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's metadata; see :meth:`tooloop.store.Store.get_session`."""
        await self.open()
        async with self._pool.connection() as conn:
            return await _require(conn, session_id)

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        await self.open()
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions ORDER BY updated_at DESC, id LIMIT %s OFFSET %s",
                (limit, offset),
            )
            return [_info(row, lenient=True) for row in await cursor.fetchall()]

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
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            now = time.time()
            await _ensure_session(conn, session_id, now)
            assignments = "".join(f"{column} = %s, " for column in changes)
            await conn.execute(
                f"UPDATE tooloop_sessions SET {assignments}updated_at = %s WHERE id = %s",
                (*changes.values(), now, session_id),
            )
            return await _require(conn, session_id)

    async def delete(self, session_id: str) -> None:
        """Remove the session and all its rows."""
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            cursor = await conn.execute("DELETE FROM tooloop_sessions WHERE id = %s", (session_id,))
            if cursor.rowcount == 0:
                raise SessionNotFoundError(f"no session {session_id!r} in the store")
            await conn.execute("DELETE FROM tooloop_messages WHERE session_id = %s", (session_id,))

    async def fork(self, session_id: str, at: int, new_session_id: str | None = None) -> str:
        """A new session with the first ``at`` messages of ``session_id`` (copied in one transaction)."""
        new_id = new_session_id or uuid.uuid4().hex
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
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
            await _create(conn, info, [Record(r[2], r[3], r[5]) for r in kept], [r[4] for r in kept])
        return new_id

    async def _create_from(self, info: SessionInfo, records: Sequence[Record]) -> None:
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            await _create(conn, info, records, [SCHEMA_VERSION] * len(records))


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


async def _append(conn: _Conn, session_id: str, records: list[Record], expected: int | None) -> int:
    now = time.time()
    await _ensure_session(conn, session_id, now)
    cursor = await conn.execute(
        "SELECT version, message_count FROM tooloop_sessions WHERE id = %s FOR UPDATE", (session_id,)
    )
    row = await cursor.fetchone()
    version, count = (int(row[0]), int(row[1])) if row else (0, 0)
    if expected is not None and expected != version:
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


async def _create(conn: _Conn, info: SessionInfo, records: Sequence[Record], formats: Sequence[int]) -> None:
    now = time.time()
    cursor = await conn.execute(
        f"INSERT INTO tooloop_sessions ({_INSERT_SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
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
        ),
    )
    if cursor.rowcount == 0:
        raise ConflictError(f"session {info.id!r} already exists")
    if records:
        async with conn.cursor() as cur:
            await cur.executemany(
                _INSERT_ROW,
                [(info.id, i, i, r.tool_call_id, r.status, formats[i], r.data) for i, r in enumerate(records)],
            )
