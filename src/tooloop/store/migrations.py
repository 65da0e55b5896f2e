"""Schema migrations: an append-only list per backend, applied in order when a store opens.

Never edit or reorder a released migration; add a new one at the end. A database whose schema
version is newer than the last migration this code knows is refused with a clear error, so an
old tooloop never writes to a database a newer one has changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CorruptDataError

__all__ = ["POSTGRES_MIGRATIONS", "SQLITE_MIGRATIONS", "Migration", "check_schema_version"]

SCHEMA_TABLE = "tooloop_schema_version"


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its version number, what it does, and its SQL statements."""

    version: int
    description: str
    statements: tuple[str, ...]


SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and their append-only message rows",
        (
            """CREATE TABLE tooloop_sessions (
                id TEXT PRIMARY KEY,
                title TEXT,
                model TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                version INTEGER NOT NULL DEFAULT 0,
                message_count INTEGER NOT NULL DEFAULT 0,
                usage TEXT,
                metadata TEXT
            )""",
            """CREATE TABLE tooloop_messages (
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                tool_call_id TEXT,
                status TEXT,
                format INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            "CREATE INDEX tooloop_sessions_updated ON tooloop_sessions (updated_at DESC, id)",
        ),
    ),
    Migration(
        2,
        "find the newest entry of a tool call id without scanning the session",
        (
            "CREATE INDEX tooloop_messages_call ON tooloop_messages (session_id, tool_call_id, seq) "
            "WHERE tool_call_id IS NOT NULL",
        ),
    ),
    Migration(
        3,
        "each session's total cost in US dollars, beside its usage, for queries over sessions",
        ("ALTER TABLE tooloop_sessions ADD COLUMN cost TEXT",),
    ),
    Migration(
        4,
        "session leases: which worker owns a session until when",
        (
            """CREATE TABLE tooloop_leases (
                session_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at REAL NOT NULL
            )""",
        ),
    ),
)

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and their append-only message rows",
        (
            """CREATE TABLE tooloop_sessions (
                id TEXT PRIMARY KEY,
                title TEXT,
                model TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL,
                version BIGINT NOT NULL DEFAULT 0,
                message_count BIGINT NOT NULL DEFAULT 0,
                usage TEXT,
                metadata TEXT
            )""",
            """CREATE TABLE tooloop_messages (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                pos BIGINT NOT NULL,
                tool_call_id TEXT,
                status TEXT,
                format INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            "CREATE INDEX tooloop_sessions_updated ON tooloop_sessions (updated_at DESC, id)",
        ),
    ),
    Migration(
        2,
        "find the newest entry of a tool call id without scanning the session",
        (
            "CREATE INDEX tooloop_messages_call ON tooloop_messages (session_id, tool_call_id, seq) "
            "WHERE tool_call_id IS NOT NULL",
        ),
    ),
    Migration(
        3,
        "each session's total cost in US dollars, beside its usage, for queries over sessions",
        ("ALTER TABLE tooloop_sessions ADD COLUMN cost NUMERIC",),
    ),
    Migration(
        4,
        "session leases: which worker owns a session until when",
        (
            """CREATE TABLE tooloop_leases (
                session_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL
            )""",
        ),
    ),
)


def check_schema_version(current: int, migrations: tuple[Migration, ...], where: str) -> None:
    """Refuse a database whose schema is newer than the newest migration this code knows."""
    known = migrations[-1].version if migrations else 0
    if current > known:
        raise CorruptDataError(
            f"{where} has tooloop schema version {current}, newer than this tooloop knows ({known}); "
            "upgrade tooloop to use it (nothing was changed)"
        )
