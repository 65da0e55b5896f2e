"""SQLite store: one file in WAL mode, the stdlib driver run on one dedicated thread.

``sqlite:///path/to/file.db`` or ``sqlite:///:memory:``. Several processes may share a file:
writers take SQLite's write lock (``BEGIN IMMEDIATE``) and wait for it up to ``busy_timeout``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConflictError, SessionNotFoundError, StoreError
from ..messages import Message, Usage
from ..transcript import SCHEMA_VERSION, Transcript
from ._common import CLAIM_LEASE_SQL, PROGRESS_SQL, BaseStore, busy, optional_float
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
from .migrations import SCHEMA_TABLE, SQLITE_MIGRATIONS, Migration, check_schema_version

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")
_INSERT_ROW = (
    "INSERT INTO tooloop_messages (session_id, seq, pos, tool_call_id, status, format, data) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_ORDER_COLUMNS = {
    "updated": "updated_at",
    "created": "created_at",
    "messages": "message_count",
    "cost": "CAST(cost AS REAL)",
}
_SESSION_COLUMNS = (
    "id, title, model, created_at, updated_at, version, message_count, usage, metadata, stop_reason, errors"
)
_INSERT_SESSION_COLUMNS = (
    "id, title, model, created_at, updated_at, version, message_count, usage, metadata, cost, tokens, tool_calls"
)


class SQLiteStore(BaseStore):
    """Sessions in one SQLite file (or in memory). Open with :func:`tooloop.store.open_store`.

    ``synchronous="NORMAL"`` (the default) keeps the file consistent through any crash and loses
    at most the last commits on power loss; ``"FULL"`` syncs every commit to disk.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 10.0,
        migrations: tuple[Migration, ...] = SQLITE_MIGRATIONS,
    ):
        self.path = str(path)
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._migrations = migrations
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tooloop-sqlite")

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteStore:
        """A store for ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite:///:memory:``."""
        path = url.removeprefix("sqlite://")
        path = path.removeprefix("/")
        return cls(path or ":memory:", **options)

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreError(f"the SQLite store {self.path!r} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        try:
            if self._conn is None:
                self._conn = self._connect()
            return fn(self._conn)
        except sqlite3.Error as exc:
            if "readonly" in str(exc):
                raise StoreError(
                    f"the SQLite store {self.path!r} is read-only to this process: its sessions can be read, "
                    "not written (check the permissions of the file and of its folder)"
                ) from exc
            raise StoreError(f"SQLite store {self.path!r}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:" and _read_only(Path(self.path)):
            return self._connect_read_only()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout)
        try:
            if self.path != ":memory:":
                _enable_wal(conn, self._busy_timeout)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            _migrate(conn, self._migrations, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        """A file this process may not write (read-only file, folder or medium) is opened for
        reading: listing and showing sessions work, a write is a :class:`StoreError` saying why."""
        path = Path(self.path).resolve()
        # Without write access to the folder, SQLite cannot make the WAL's index beside the file:
        # read it as an immutable file (what it is to this process).
        immutable = "" if os.access(path.parent, os.W_OK) else "&immutable=1"
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro{immutable}",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=self._busy_timeout,
        )
        try:
            current = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}").fetchone()[0]
            check_schema_version(current, self._migrations, f"SQLite database {self.path!r}")
            newest = self._migrations[-1].version if self._migrations else 0
            if current < newest:
                raise StoreError(
                    f"the SQLite store {self.path!r} is read-only and its schema (version {current}) needs "
                    f"migrating to version {newest}: open it once with write access"
                )
        except BaseException:
            conn.close()
            raise
        return conn

    async def open(self) -> None:
        """Connect and apply pending migrations now instead of on first use."""
        await self._run(lambda conn: None)

    async def close(self) -> None:
        """Close the connection and its thread."""
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=True)

    async def append(self, session_id: str, messages: Sequence[Message], *, expected_version: int | None = None) -> int:
        """Append ``messages`` in one transaction; see :meth:`tooloop.store.Store.append`."""
        records = [encode(m) for m in messages]
        return await self._run(lambda conn: _transaction(conn, _append, session_id, records, expected_version))

    async def retract(self, session_id: str, writes: Sequence[tuple[int, int]]) -> None:
        """Take back records in one transaction; see :meth:`tooloop.store.Store.retract`."""
        await self._run(lambda conn: _transaction(conn, _retract, session_id, list(writes)))

    async def claim_lease(self, session_id: str, owner: str, ttl: float) -> float:
        """See :meth:`tooloop.store.Store.claim_lease`."""

        def claim(conn: sqlite3.Connection) -> float:
            now = time.time()
            if conn.execute(CLAIM_LEASE_SQL, (session_id, owner, now + ttl, now)).fetchone() is None:
                sql = "SELECT owner, expires_at FROM tooloop_leases WHERE session_id = ?"
                raise busy(session_id, conn.execute(sql, (session_id,)).fetchone())
            return now + ttl

        return await self._run(lambda conn: _transaction(conn, claim))

    async def release_lease(self, session_id: str, owner: str) -> None:
        """See :meth:`tooloop.store.Store.release_lease`."""
        sql = "DELETE FROM tooloop_leases WHERE session_id = ? AND owner = ?"
        await self._run(lambda conn: _transaction(conn, lambda c: c.execute(sql, (session_id, owner))))

    async def load(self, session_id: str) -> Transcript:
        """The session's transcript; see :meth:`tooloop.store.Store.load`."""

        def read(conn: sqlite3.Connection) -> list[tuple[int, int, int, str]]:
            _require(conn, session_id)
            sql = "SELECT seq, pos, format, data FROM tooloop_messages WHERE session_id = ? ORDER BY seq"
            return conn.execute(sql, (session_id,)).fetchall()

        rows = await self._run(lambda conn: _transaction(conn, read, deferred=True))
        return decode_rows(session_id, rows)

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's metadata; see :meth:`tooloop.store.Store.get_session`."""
        return await self._run(lambda conn: _require(conn, session_id))

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
        rows = await self._run(lambda conn: conn.execute(sql, (limit, offset)).fetchall())
        return [_info(row, lenient=True) for row in rows]

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
        """Sessions matching ``text`` and the filters, through the FTS5 index; see
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
        match = " ".join(f'"{word}"*' for word in query.words)
        where, params = query.conditions(
            "id IN (SELECT session_id FROM tooloop_search WHERE tooloop_search MATCH ?)", match, "?"
        )
        sql = f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions {where} {query.order(_ORDER_COLUMNS)} LIMIT ? OFFSET ?"
        rows = await self._run(lambda conn: conn.execute(sql, (*params, limit, offset)).fetchall())
        return [_info(row, lenient=True) for row in rows]

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

        def write(conn: sqlite3.Connection) -> SessionInfo:
            now = time.time()
            _ensure_session(conn, session_id, now)
            assignments = ", ".join(f"{column} = ?" for column in changes)
            conn.execute(
                f"UPDATE tooloop_sessions SET {assignments}{', ' if changes else ''}updated_at = ? WHERE id = ?",
                (*changes.values(), now, session_id),
            )
            return _require(conn, session_id)

        return await self._run(lambda conn: _transaction(conn, write))

    async def writes(self, session_id: str) -> list[Write]:
        """See :meth:`BaseStore.writes`."""

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            _require(conn, session_id)
            sql = (
                "SELECT seq, pos, tool_call_id, status, written_at FROM tooloop_messages "
                "WHERE session_id = ? ORDER BY seq"
            )
            return conn.execute(sql, (session_id,)).fetchall()

        rows = await self._run(lambda conn: _transaction(conn, read, deferred=True))
        return [Write(int(r[0]), int(r[1]), r[2], r[3], to_datetime(r[4])) for r in rows]

    async def report_progress(
        self, session_id: str, tool_call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """See :meth:`BaseStore.report_progress`."""
        values = (session_id, tool_call_id, progress, total, message, time.time(), session_id, session_id, tool_call_id)
        await self._run(lambda conn: _transaction(conn, lambda c: c.execute(PROGRESS_SQL, values)))

    async def progress(self, session_id: str) -> list[Progress]:
        """See :meth:`BaseStore.progress`."""
        sql = (
            "SELECT tool_call_id, progress, total, message, reported_at FROM tooloop_progress "
            "WHERE session_id = ? ORDER BY tool_call_id"
        )
        rows = await self._run(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [Progress(r[0], float(r[1]), optional_float(r[2]), r[3], to_datetime(r[4])) for r in rows]

    async def activity(self, session_id: str) -> tuple[int, float | None]:
        """See :meth:`BaseStore.activity`."""
        sql = (
            "SELECT version, (SELECT max(reported_at) FROM tooloop_progress WHERE session_id = ?) "
            "FROM tooloop_sessions WHERE id = ?"
        )
        row = await self._run(lambda conn: conn.execute(sql, (session_id, session_id)).fetchone())
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in the store")
        return int(row[0]), optional_float(row[1])

    async def delete(self, session_id: str) -> None:
        """Remove the session and all its rows."""

        def remove(conn: sqlite3.Connection) -> None:
            _require(conn, session_id)
            conn.execute("DELETE FROM tooloop_messages WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM tooloop_sessions WHERE id = ?", (session_id,))

        await self._run(lambda conn: _transaction(conn, remove))

    async def fork(self, session_id: str, at: int, new_session_id: str | None = None) -> str:
        """A new session with the first ``at`` messages of ``session_id`` (copied in one transaction)."""
        new_id = new_session_id or uuid.uuid4().hex
        await self._run(lambda conn: _transaction(conn, _fork, session_id, at, new_id))
        return new_id

    async def _create_from(self, info: SessionInfo, records: Sequence[Record]) -> None:
        await self._run(lambda conn: _transaction(conn, _create, info, records))


def _transaction(conn: sqlite3.Connection, fn: Callable[..., _T], *args: Any, deferred: bool = False) -> _T:
    conn.execute("BEGIN" if deferred else "BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _read_only(path: Path) -> bool:
    """True when ``path`` exists and this process cannot write it or its folder (read-only
    permissions, or a read-only file system)."""
    return path.is_file() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    # Switching to WAL needs an exclusive lock and SQLite does not wait for it: retry while
    # another connection holds the file (two processes opening a new file at once).
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...], where: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        current = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}").fetchone()[0]
        check_schema_version(current, migrations, f"SQLite database {where!r}")
        for migration in migrations:
            if migration.version > current:
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (?, ?)", (migration.version, time.time()))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _info(row: tuple[Any, ...], *, lenient: bool = False) -> SessionInfo:
    session_id = row[0]
    usage, metadata, problem = session_details(session_id, row[7], row[8], lenient=lenient)
    return SessionInfo(
        id=session_id,
        title=row[1],
        model=row[2],
        created_at=to_datetime(row[3]),
        updated_at=to_datetime(row[4]),
        version=row[5],
        message_count=row[6],
        usage=usage,
        metadata=metadata,
        stop_reason=row[9],
        errors=int(row[10]),
        problem=problem,
    )


def _require(conn: sqlite3.Connection, session_id: str) -> SessionInfo:
    row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM tooloop_sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r} in the store")
    return _info(row)


def _ensure_session(conn: sqlite3.Connection, session_id: str, now: float) -> None:
    conn.execute(
        "INSERT INTO tooloop_sessions (id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (session_id, now, now),
    )


def _append(conn: sqlite3.Connection, session_id: str, records: list[Record], expected: int | None) -> int:
    row = conn.execute("SELECT version, message_count FROM tooloop_sessions WHERE id = ?", (session_id,)).fetchone()
    version, count = row if row is not None else (0, 0)
    if expected is not None and expected != version:
        raise ConflictError(
            f"session {session_id!r} is at version {version}, not {expected} as this writer expected: another "
            "writer changed it first. Nothing was written; reload the session and retry."
        )
    latest: dict[str, Latest] = {}
    for call_id in {r.tool_call_id for r in records if r.tool_call_id is not None}:
        found = conn.execute(
            "SELECT pos, status, data FROM tooloop_messages WHERE session_id = ? AND tool_call_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (session_id, call_id),
        ).fetchone()
        if found is not None:
            latest[call_id] = Latest(*found)
    rows, new_version, new_count = plan_rows(records, latest, version, count, claim=expected is not None)
    now = time.time()
    _ensure_session(conn, session_id, now)
    conn.execute(
        "UPDATE tooloop_sessions SET version = ?, message_count = ?, updated_at = ? WHERE id = ?",
        (new_version, new_count, now, session_id),
    )
    try:
        conn.executemany(
            _INSERT_ROW, [(session_id, r.seq, r.pos, r.tool_call_id, r.status, r.format, r.data) for r in rows]
        )
    except sqlite3.IntegrityError as exc:
        raise ConflictError(f"session {session_id!r}: another writer appended at the same position") from exc
    return new_version


def _retract(conn: sqlite3.Connection, session_id: str, writes: list[tuple[int, int]]) -> None:
    row = conn.execute("SELECT version FROM tooloop_sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None or built_on(int(row[0]), writes):
        return
    for start, end in writes:
        conn.execute(
            "DELETE FROM tooloop_messages WHERE session_id = ? AND seq >= ? AND seq < ?", (session_id, start, end)
        )
    rows = conn.execute("SELECT seq, pos FROM tooloop_messages WHERE session_id = ? ORDER BY seq", (session_id,))
    moves, count = repack(rows.fetchall())
    conn.executemany(
        "UPDATE tooloop_messages SET pos = ? WHERE session_id = ? AND seq = ?", [(p, session_id, q) for p, q in moves]
    )
    conn.execute(
        "UPDATE tooloop_sessions SET message_count = ?, updated_at = ? WHERE id = ?", (count, time.time(), session_id)
    )


def _fork(conn: sqlite3.Connection, session_id: str, at: int, new_id: str) -> None:
    parent = _require(conn, session_id)
    check_fork_at(session_id, at, parent.message_count)
    rows = conn.execute(
        "SELECT seq, pos, tool_call_id, status, format, data FROM tooloop_messages WHERE session_id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()
    kept = latest_per_position(session_id, rows)[:at]
    metadata = {**parent.metadata, "forked_from": {"session_id": session_id, "at": at}}
    info = SessionInfo(id=new_id, title=parent.title, model=parent.model, metadata=metadata)
    _create(conn, info, [Record(r[2], r[3], r[5]) for r in kept], formats=[r[4] for r in kept])


def _create(
    conn: sqlite3.Connection, info: SessionInfo, records: Sequence[Record], formats: Sequence[int] | None = None
) -> None:
    now = time.time()
    created = info.created_at.timestamp() if info.created_at else now
    updated = info.updated_at.timestamp() if info.updated_at else now
    try:
        conn.execute(
            f"INSERT INTO tooloop_sessions ({_INSERT_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                info.id,
                info.title,
                info.model,
                created,
                updated,
                len(records),
                len(records),
                usage_to_json(info.usage),
                json.dumps(dict(info.metadata), ensure_ascii=False),
                None if info.usage.cost is None else str(info.usage.cost),
                info.usage.input_tokens + info.usage.output_tokens,
                info.usage.tool_calls,
            ),
        )
    except sqlite3.IntegrityError as exc:
        raise ConflictError(f"session {info.id!r} already exists") from exc
    fmts = formats if formats is not None else [SCHEMA_VERSION] * len(records)
    conn.executemany(
        _INSERT_ROW, [(info.id, i, i, r.tool_call_id, r.status, fmts[i], r.data) for i, r in enumerate(records)]
    )
