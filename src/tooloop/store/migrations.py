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


_INDEXED_CHARS = 100_000
"""How much of one message the full-text index reads (PostgreSQL refuses a tsvector over 1 MB)."""

_SQLITE_BODY = (
    "CASE WHEN json_valid({d}) THEN substr(coalesce(json_extract({d}, '$.text'), '') || ' ' || "
    "coalesce(json_extract({d}, '$.tool_name'), '') || ' ' || coalesce(json_extract({d}, '$.arguments'), '') || ' ' || "
    "coalesce(json_extract({d}, '$.content'), '') || ' ' || coalesce(json_extract({d}, '$.refusal'), ''), 1, "
    f"{_INDEXED_CHARS}) ELSE '' END"
)
"""The searchable text of a message row's JSON ``{d}``: its text, tool name, arguments, result, refusal."""

_SQLITE_STOP = (
    "CASE WHEN {s} = 'pending' THEN 'approval_required' "
    "WHEN {s} IS NOT NULL THEN CASE WHEN stop_reason = 'approval_required' THEN 'tool_use' ELSE stop_reason END "
    "WHEN json_valid({d}) AND json_extract({d}, '$.kind') = 'assistant' "
    "THEN coalesce(json_extract({d}, '$.stop_reason'), 'end_turn') ELSE stop_reason END"
)
"""A session's stop reason after row ``{d}`` (status ``{s}``): the latest model response's, or
``approval_required`` while a tool call waits for a decision."""


def _sqlite_message_added(*extra: str) -> str:
    """The trigger that indexes a new message row and updates its session's stop reason and errors."""
    return f"""CREATE TRIGGER tooloop_message_added AFTER INSERT ON tooloop_messages BEGIN
        INSERT INTO tooloop_search_docs (session_id, seq) VALUES (new.session_id, new.seq)
            ON CONFLICT (session_id, seq) DO NOTHING;
        INSERT INTO tooloop_search (rowid, body, session_id)
            SELECT doc, {_SQLITE_BODY.format(d="new.data")}, new.session_id FROM tooloop_search_docs
            WHERE session_id = new.session_id AND seq = new.seq;
        UPDATE tooloop_sessions SET
            stop_reason = {_SQLITE_STOP.format(d="new.data", s="new.status")},
            errors = errors + (new.status IS 'error')
            WHERE id = new.session_id;
        {"".join(extra)}
    END"""


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
    Migration(
        5,
        "full-text search over messages and titles; each session's stop reason, errors, tokens and tool calls",
        (
            "ALTER TABLE tooloop_sessions ADD COLUMN stop_reason TEXT",
            "ALTER TABLE tooloop_sessions ADD COLUMN errors INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tooloop_sessions ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tooloop_sessions ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0",
            # A document per message row (seq) and one per title (seq -1); its INTEGER PRIMARY KEY is
            # the full-text row's id, which stays stable through VACUUM (an implicit rowid does not).
            """CREATE TABLE tooloop_search_docs (
                doc INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                UNIQUE (session_id, seq)
            )""",
            "CREATE VIRTUAL TABLE tooloop_search USING fts5(body, session_id UNINDEXED, "
            "tokenize = 'unicode61 remove_diacritics 2')",
            _sqlite_message_added(),
            """CREATE TRIGGER tooloop_message_removed AFTER DELETE ON tooloop_messages BEGIN
                DELETE FROM tooloop_search WHERE rowid IN (SELECT doc FROM tooloop_search_docs
                    WHERE session_id = old.session_id AND seq = old.seq);
                DELETE FROM tooloop_search_docs WHERE session_id = old.session_id AND seq = old.seq;
            END""",
            """CREATE TRIGGER tooloop_session_titled AFTER INSERT ON tooloop_sessions WHEN new.title IS NOT NULL BEGIN
                INSERT INTO tooloop_search_docs (session_id, seq) VALUES (new.id, -1) ON CONFLICT DO NOTHING;
                INSERT INTO tooloop_search (rowid, body, session_id)
                    SELECT doc, new.title, new.id FROM tooloop_search_docs WHERE session_id = new.id AND seq = -1;
            END""",
            """CREATE TRIGGER tooloop_session_retitled AFTER UPDATE OF title ON tooloop_sessions
                WHEN new.title IS NOT old.title BEGIN
                DELETE FROM tooloop_search WHERE rowid IN (SELECT doc FROM tooloop_search_docs
                    WHERE session_id = old.id AND seq = -1);
                INSERT INTO tooloop_search_docs (session_id, seq) VALUES (new.id, -1) ON CONFLICT DO NOTHING;
                INSERT INTO tooloop_search (rowid, body, session_id)
                    SELECT doc, new.title, new.id FROM tooloop_search_docs
                    WHERE session_id = new.id AND seq = -1 AND new.title IS NOT NULL;
            END""",
            """CREATE TRIGGER tooloop_session_removed AFTER DELETE ON tooloop_sessions BEGIN
                DELETE FROM tooloop_search WHERE rowid IN (SELECT doc FROM tooloop_search_docs
                    WHERE session_id = old.id AND seq = -1);
                DELETE FROM tooloop_search_docs WHERE session_id = old.id AND seq = -1;
            END""",
            "INSERT INTO tooloop_search_docs (session_id, seq) SELECT session_id, seq FROM tooloop_messages",
            "INSERT INTO tooloop_search_docs (session_id, seq) SELECT id, -1 FROM tooloop_sessions "
            "WHERE title IS NOT NULL",
            f"""INSERT INTO tooloop_search (rowid, body, session_id)
                SELECT d.doc, {_SQLITE_BODY.format(d="m.data")}, m.session_id
                FROM tooloop_search_docs d JOIN tooloop_messages m ON m.session_id = d.session_id AND m.seq = d.seq""",
            """INSERT INTO tooloop_search (rowid, body, session_id)
                SELECT d.doc, s.title, s.id FROM tooloop_search_docs d JOIN tooloop_sessions s ON s.id = d.session_id
                WHERE d.seq = -1""",
            f"""UPDATE tooloop_sessions SET
                errors = (SELECT count(*) FROM tooloop_messages m WHERE m.session_id = id AND m.status = 'error'),
                stop_reason = (SELECT {_SQLITE_STOP.format(d="m.data", s="m.status")} FROM tooloop_messages m
                    WHERE m.session_id = id AND (m.status = 'pending' OR (m.status IS NULL AND json_valid(m.data)
                    AND json_extract(m.data, '$.kind') = 'assistant')) ORDER BY m.seq DESC LIMIT 1),
                tokens = CASE WHEN json_valid(usage) THEN coalesce(json_extract(usage, '$.input_tokens'), 0)
                    + coalesce(json_extract(usage, '$.output_tokens'), 0) ELSE 0 END,
                tool_calls = CASE WHEN json_valid(usage) THEN coalesce(json_extract(usage, '$.tool_calls'), 0)
                    ELSE 0 END""",
            "CREATE INDEX tooloop_sessions_model ON tooloop_sessions (model, updated_at DESC)",
            "CREATE INDEX tooloop_sessions_stop_reason ON tooloop_sessions (stop_reason, updated_at DESC)",
            "CREATE INDEX tooloop_sessions_with_errors ON tooloop_sessions (updated_at DESC) WHERE errors > 0",
        ),
    ),
    Migration(
        6,
        "when each message row was written, for timelines of requests and tool calls",
        (
            "ALTER TABLE tooloop_messages ADD COLUMN written_at REAL",
            "DROP TRIGGER tooloop_message_added",
            # Set here rather than by the INSERT, so a writer of any schema version writes it.
            _sqlite_message_added(
                "UPDATE tooloop_messages SET written_at = (julianday('now') - 2440587.5) * 86400.0 "
                "WHERE rowid = new.rowid;"
            ),
        ),
    ),
    Migration(
        7,
        "sessions sorted by tokens or by cost through an index (either direction, unknown cost smallest)",
        (
            "CREATE INDEX tooloop_sessions_tokens ON tooloop_sessions (tokens DESC, id)",
            # The expression is the one search() sorts by: the cost column holds decimal text.
            "CREATE INDEX tooloop_sessions_cost ON tooloop_sessions (CAST(cost AS REAL) DESC, id)",
        ),
    ),
    Migration(
        8,
        "the latest progress of each running tool call, gone once the call has its outcome",
        (
            """CREATE TABLE tooloop_progress (
                session_id TEXT NOT NULL,
                tool_call_id TEXT NOT NULL,
                progress REAL NOT NULL,
                total REAL,
                message TEXT,
                reported_at REAL NOT NULL,
                PRIMARY KEY (session_id, tool_call_id)
            )""",
            """CREATE TRIGGER tooloop_progress_done AFTER INSERT ON tooloop_messages
                WHEN new.status IS NOT NULL AND new.status NOT IN ('started', 'pending') BEGIN
                DELETE FROM tooloop_progress WHERE session_id = new.session_id AND tool_call_id = new.tool_call_id;
            END""",
            """CREATE TRIGGER tooloop_progress_gone AFTER DELETE ON tooloop_sessions BEGIN
                DELETE FROM tooloop_progress WHERE session_id = old.id;
            END""",
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
    Migration(
        5,
        "full-text search over messages and titles; each session's stop reason, errors, tokens and tool calls",
        (
            "ALTER TABLE tooloop_sessions ADD COLUMN stop_reason TEXT",
            "ALTER TABLE tooloop_sessions ADD COLUMN errors BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE tooloop_sessions ADD COLUMN tokens BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE tooloop_sessions ADD COLUMN tool_calls BIGINT NOT NULL DEFAULT 0",
            """CREATE TABLE tooloop_search (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                body tsvector NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            "CREATE INDEX tooloop_search_body ON tooloop_search USING GIN (body)",
            """CREATE FUNCTION tooloop_json(data TEXT) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
            BEGIN
                RETURN data::jsonb;
            EXCEPTION WHEN others THEN
                RETURN NULL;
            END $$""",
            # Punctuation separates words, as in SQLite's tokenizer (PostgreSQL's parser would keep
            # "example.org" or "a/b" whole, and a search for "example" would miss them).
            """CREATE FUNCTION tooloop_words(text TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE AS $$
                SELECT to_tsvector('simple', regexp_replace(text, '[[:punct:]]+', ' ', 'g'))
            $$""",
            f"""CREATE FUNCTION tooloop_message_text(data TEXT) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE AS $$
            DECLARE d jsonb := tooloop_json(data);
            BEGIN
                RETURN tooloop_words(left(concat_ws(' ', d->>'text', d->>'tool_name', d->>'arguments',
                    d->>'content', d->>'refusal'), {_INDEXED_CHARS}));
            END $$""",
            """CREATE FUNCTION tooloop_stop_reason(data TEXT, status TEXT, current TEXT) RETURNS TEXT
            LANGUAGE plpgsql IMMUTABLE AS $$
            BEGIN
                IF status = 'pending' THEN RETURN 'approval_required'; END IF;
                IF status IS NOT NULL THEN
                    RETURN CASE WHEN current = 'approval_required' THEN 'tool_use' ELSE current END;
                END IF;
                IF tooloop_json(data)->>'kind' = 'assistant' THEN
                    RETURN coalesce(tooloop_json(data)->>'stop_reason', 'end_turn');
                END IF;
                RETURN current;
            END $$""",
            """CREATE FUNCTION tooloop_message_added() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO tooloop_search VALUES (NEW.session_id, NEW.seq, tooloop_message_text(NEW.data))
                    ON CONFLICT (session_id, seq) DO NOTHING;
                UPDATE tooloop_sessions SET stop_reason = tooloop_stop_reason(NEW.data, NEW.status, stop_reason),
                    errors = errors + CASE WHEN NEW.status = 'error' THEN 1 ELSE 0 END
                    WHERE id = NEW.session_id;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER tooloop_message_added AFTER INSERT ON tooloop_messages "
            "FOR EACH ROW EXECUTE FUNCTION tooloop_message_added()",
            """CREATE FUNCTION tooloop_message_removed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM tooloop_search WHERE session_id = OLD.session_id AND seq = OLD.seq;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER tooloop_message_removed AFTER DELETE ON tooloop_messages "
            "FOR EACH ROW EXECUTE FUNCTION tooloop_message_removed()",
            """CREATE FUNCTION tooloop_session_titled() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    DELETE FROM tooloop_search WHERE session_id = OLD.id AND seq = -1;
                    RETURN NULL;
                END IF;
                IF TG_OP = 'UPDATE' AND NEW.title IS NOT DISTINCT FROM OLD.title THEN RETURN NULL; END IF;
                DELETE FROM tooloop_search WHERE session_id = NEW.id AND seq = -1;
                IF NEW.title IS NOT NULL THEN
                    INSERT INTO tooloop_search VALUES (NEW.id, -1, tooloop_words(NEW.title));
                END IF;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER tooloop_session_titled AFTER INSERT OR UPDATE OF title OR DELETE ON tooloop_sessions "
            "FOR EACH ROW EXECUTE FUNCTION tooloop_session_titled()",
            "INSERT INTO tooloop_search SELECT session_id, seq, tooloop_message_text(data) FROM tooloop_messages",
            "INSERT INTO tooloop_search SELECT id, -1, tooloop_words(title) FROM tooloop_sessions "
            "WHERE title IS NOT NULL",
            """UPDATE tooloop_sessions s SET
                errors = (SELECT count(*) FROM tooloop_messages m WHERE m.session_id = s.id AND m.status = 'error'),
                stop_reason = (SELECT tooloop_stop_reason(m.data, m.status, NULL) FROM tooloop_messages m
                    WHERE m.session_id = s.id
                    AND (m.status = 'pending' OR (m.status IS NULL AND tooloop_json(m.data)->>'kind' = 'assistant'))
                    ORDER BY m.seq DESC LIMIT 1),
                tokens = coalesce((tooloop_json(s.usage)->>'input_tokens')::bigint, 0)
                    + coalesce((tooloop_json(s.usage)->>'output_tokens')::bigint, 0),
                tool_calls = coalesce((tooloop_json(s.usage)->>'tool_calls')::bigint, 0)""",
            "CREATE INDEX tooloop_sessions_model ON tooloop_sessions (model, updated_at DESC)",
            "CREATE INDEX tooloop_sessions_stop_reason ON tooloop_sessions (stop_reason, updated_at DESC)",
            "CREATE INDEX tooloop_sessions_with_errors ON tooloop_sessions (updated_at DESC) WHERE errors > 0",
        ),
    ),
    Migration(
        6,
        "when each message row was written, for timelines of requests and tool calls",
        (
            "ALTER TABLE tooloop_messages ADD COLUMN written_at DOUBLE PRECISION",
            # Set as a second step so rows written before stay NULL (unknown), not the migration's time.
            "ALTER TABLE tooloop_messages ALTER COLUMN written_at SET DEFAULT extract(epoch FROM clock_timestamp())",
        ),
    ),
    Migration(
        7,
        "sessions sorted by tokens or by cost through an index (either direction, unknown cost smallest)",
        (
            "CREATE INDEX tooloop_sessions_tokens ON tooloop_sessions (tokens DESC, id)",
            "CREATE INDEX tooloop_sessions_cost ON tooloop_sessions (cost DESC NULLS LAST, id)",
        ),
    ),
    Migration(
        8,
        "the latest progress of each running tool call, gone once the call has its outcome",
        (
            """CREATE TABLE tooloop_progress (
                session_id TEXT NOT NULL,
                tool_call_id TEXT NOT NULL,
                progress DOUBLE PRECISION NOT NULL,
                total DOUBLE PRECISION,
                message TEXT,
                reported_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (session_id, tool_call_id)
            )""",
            """CREATE FUNCTION tooloop_progress_done() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_TABLE_NAME = 'tooloop_sessions' THEN
                    DELETE FROM tooloop_progress WHERE session_id = OLD.id;
                ELSIF NEW.status IS NOT NULL AND NEW.status NOT IN ('started', 'pending') THEN
                    DELETE FROM tooloop_progress WHERE session_id = NEW.session_id AND tool_call_id = NEW.tool_call_id;
                END IF;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER tooloop_progress_done AFTER INSERT ON tooloop_messages "
            "FOR EACH ROW EXECUTE FUNCTION tooloop_progress_done()",
            "CREATE TRIGGER tooloop_progress_gone AFTER DELETE ON tooloop_sessions "
            "FOR EACH ROW EXECUTE FUNCTION tooloop_progress_done()",
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
