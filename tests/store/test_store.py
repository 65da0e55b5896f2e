"""Store behaviour on both backends: SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tooloop.errors import ConfigurationError, ConflictError, CorruptDataError, SessionNotFoundError
from tooloop.messages import AssistantMessage, SystemMessage, ToolCallMessage, ToolCallStatus, Usage, UserMessage
from tooloop.store import BaseStore, Store, open_store
from tooloop.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tooloop.store.postgres import PostgresStore
from tooloop.store.sqlite import SQLiteStore
from tooloop.transcript import Transcript

from .conftest import execute_raw

STARTED = ToolCallStatus.STARTED


def call(call_id: str, status: ToolCallStatus = ToolCallStatus.OK, batch: str = "b1", **kw: object) -> ToolCallMessage:
    fields: dict[str, object] = {"content": "" if status is STARTED else f"result of {call_id}", **kw}
    return ToolCallMessage(
        tool_name="lookup",
        tool_call_id=call_id,
        arguments={"q": call_id},
        status=status,
        batch_id=batch,
        **fields,  # type: ignore[arg-type]
    )


CONVERSATION = [
    SystemMessage("be brief"),
    UserMessage("weather in Paris and Rome?"),
    call("c1", message="let me look", result={"temp": 21}),
    call("c2", status=ToolCallStatus.ERROR, content="boom"),
    AssistantMessage("Paris 21°C, Rome unknown", model="m"),
]


async def test_store_satisfies_protocol(store: BaseStore) -> None:
    assert isinstance(store, Store)


async def test_append_load_round_trip(store: BaseStore) -> None:
    assert await store.version("s") == 0
    v1 = await store.append("s", CONVERSATION[:2])
    v2 = await store.append("s", CONVERSATION[2:])
    assert (v1, v2) == (2, 5)
    loaded = await store.load("s")
    assert loaded == Transcript(CONVERSATION)
    assert loaded[2].result == {"temp": 21}  # type: ignore[union-attr]
    info = await store.get_session("s")
    assert (info.id, info.message_count, info.version) == ("s", 5, 5)
    assert info.created_at is not None and info.updated_at is not None and info.created_at <= info.updated_at


async def test_final_tool_call_replaces_started_at_its_original_position(store: BaseStore) -> None:
    await store.append("s", [UserMessage("go")])
    await store.append("s", [call("a", STARTED), call("b", STARTED), call("c", STARTED)])
    await store.append("s", [call("b")])
    await store.append("s", [call("a", status=ToolCallStatus.CANCELLED, content="cancelled")])
    loaded = await store.load("s")
    assert [(m.tool_call_id, m.status) for m in loaded.tool_invocations] == [
        ("a", ToolCallStatus.CANCELLED),
        ("b", ToolCallStatus.OK),
        ("c", STARTED),
    ]
    await store.append("s", [call("c"), AssistantMessage("done")])
    loaded = await store.load("s")
    assert loaded == Transcript(
        [UserMessage("go"), call("a", ToolCallStatus.CANCELLED, content="cancelled"), call("b"), call("c"),
         AssistantMessage("done")]
    )  # fmt: skip
    info = await store.get_session("s")
    assert (info.message_count, info.version) == (5, 8)


async def test_pending_approval_is_replaced_by_its_decision(store: BaseStore) -> None:
    await store.append("s", [UserMessage("delete it"), call("x", ToolCallStatus.PENDING)])
    assert (await store.load("s"))[1].status is ToolCallStatus.PENDING  # type: ignore[union-attr]
    await store.append("s", [call("x", ToolCallStatus.DENIED, content="denied by user")])
    assert (await store.load("s"))[1].status is ToolCallStatus.DENIED  # type: ignore[union-attr]
    assert (await store.get_session("s")).message_count == 2


async def test_reused_tool_call_id_in_a_later_response_is_a_new_entry(store: BaseStore) -> None:
    await store.append("s", [UserMessage("1"), call("call_0", batch="r1"), AssistantMessage("one")])
    await store.append("s", [UserMessage("2"), call("call_0", STARTED, batch="r2")])
    await store.append("s", [call("call_0", batch="r2")])
    loaded = await store.load("s")
    assert [m.batch_id for m in loaded.tool_invocations] == ["r1", "r2"]
    assert len(loaded) == 5


async def test_recording_the_same_final_message_twice_is_harmless(store: BaseStore) -> None:
    await store.append("s", [UserMessage("1"), call("k")])
    version = await store.append("s", [call("k")])
    assert await store.load("s") == Transcript([UserMessage("1"), call("k")])
    assert version == 2
    await store.append("s", [call("k", content="rewritten")])  # same batch: last write wins
    assert await store.load("s") == Transcript([UserMessage("1"), call("k", content="rewritten")])


async def test_missing_session(store: BaseStore) -> None:
    for attempt in (store.load("nope"), store.get_session("nope"), store.delete("nope"), store.fork("nope", 0)):
        with pytest.raises(SessionNotFoundError, match="nope"):
            await attempt


async def test_expected_version_conflict_loses_nothing(store_url: str) -> None:
    async with open_store(store_url) as a, open_store(store_url) as b:
        await a.append("s", [UserMessage("hello")])
        seen_a, seen_b = await a.version("s"), await b.version("s")
        await a.append("s", [AssistantMessage("from a")], expected_version=seen_a)
        with pytest.raises(ConflictError, match=r"'s' is at version 2, not 1"):
            await b.append("s", [AssistantMessage("from b")], expected_version=seen_b)
        assert await b.load("s") == Transcript([UserMessage("hello"), AssistantMessage("from a")])
        await b.append("s", [AssistantMessage("from b")], expected_version=await b.version("s"))
        assert [m.text for m in await a.load("s")] == ["hello", "from a", "from b"]  # type: ignore[union-attr]


async def test_racing_writers_exactly_one_wins(store_url: str) -> None:
    async with open_store(store_url) as a, open_store(store_url) as b:
        await a.append("s", [UserMessage("hello")])
        for round_ in range(5):
            version = await a.version("s")
            results = await asyncio.gather(
                a.append("s", [AssistantMessage(f"a{round_}")], expected_version=version),
                b.append("s", [AssistantMessage(f"b{round_}")], expected_version=version),
                return_exceptions=True,
            )
            assert sorted(type(r).__name__ for r in results) == ["ConflictError", "int"]
        assert len(await a.load("s")) == 6


async def test_concurrent_writers_without_version_never_lose_or_interleave(store_url: str) -> None:
    async with open_store(store_url) as a, open_store(store_url) as b:

        async def writer(store: BaseStore, name: str) -> None:
            for i in range(10):
                await store.append("s", [UserMessage(f"{name}{i}"), AssistantMessage(f"{name}{i}")])

        await asyncio.gather(writer(a, "a"), writer(b, "b"))
        texts = [m.text for m in await a.load("s")]  # type: ignore[union-attr]
        assert len(texts) == 40
        assert texts[0::2] == texts[1::2]  # each pair stayed together
        assert sorted(texts[0::2]) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])


async def test_many_sessions_in_parallel(store: BaseStore) -> None:
    async def session(n: int) -> None:
        for i in range(5):
            await store.append(f"s{n}", [UserMessage(f"{n}-{i}")])

    await asyncio.gather(*(session(n) for n in range(20)))
    sessions = await store.list_sessions(limit=100)
    assert len(sessions) == 20 and all(s.message_count == 5 for s in sessions)
    assert [m.text for m in await store.load("s7")] == [f"7-{i}" for i in range(5)]  # type: ignore[union-attr]


async def test_list_sessions_newest_first_with_paging(store: BaseStore) -> None:
    for name in ("old", "mid", "new"):
        await store.append(name, [UserMessage(name)])
        await asyncio.sleep(0.01)
    assert [s.id for s in await store.list_sessions()] == ["new", "mid", "old"]
    assert [s.id for s in await store.list_sessions(limit=1, offset=1)] == ["mid"]


async def test_metadata(store: BaseStore) -> None:
    info = await store.set_metadata("s", title="Trip", model="openai:gpt-4.1", metadata={"user": 7})
    assert (info.title, info.model, info.metadata, info.message_count) == ("Trip", "openai:gpt-4.1", {"user": 7}, 0)
    await store.append("s", [UserMessage("hi")])
    info = await store.set_metadata("s", usage=Usage(input_tokens=10, output_tokens=3, requests=1))
    assert info.title == "Trip" and info.usage == Usage(input_tokens=10, output_tokens=3, requests=1)
    assert info.message_count == 1
    info = await store.set_metadata("s", title=None)
    assert info.title is None and info.model == "openai:gpt-4.1"


async def test_delete(store: BaseStore) -> None:
    await store.append("a", CONVERSATION)
    await store.append("b", CONVERSATION)
    await store.delete("a")
    with pytest.raises(SessionNotFoundError):
        await store.load("a")
    assert await store.load("b") == Transcript(CONVERSATION)
    await store.append("a", [UserMessage("fresh")])
    assert await store.load("a") == Transcript([UserMessage("fresh")])


async def test_fork(store: BaseStore) -> None:
    await store.set_metadata("s", title="Trip")
    await store.append("s", [UserMessage("go"), call("a", STARTED)])
    await store.append("s", [call("a"), AssistantMessage("done"), UserMessage("more")])
    fork_id = await store.fork("s", 3)
    assert await store.load(fork_id) == Transcript([UserMessage("go"), call("a"), AssistantMessage("done")])
    await store.append(fork_id, [UserMessage("other way")])
    assert (await store.load("s"))[-1] == UserMessage("more")
    assert len(await store.load(fork_id)) == 4
    info = await store.get_session(fork_id)
    assert info.title == "Trip" and info.metadata["forked_from"] == {"session_id": "s", "at": 3}
    named = await store.fork("s", 0, new_session_id="empty-fork")
    assert named == "empty-fork" and len(await store.load(named)) == 0
    with pytest.raises(ConflictError, match="empty-fork"):
        await store.fork("s", 1, new_session_id="empty-fork")
    with pytest.raises(ValueError, match="has 4 messages"):
        await store.fork("s", 9)


async def test_fork_at_an_unfinished_call_can_be_finished_in_the_fork(store: BaseStore) -> None:
    await store.append("s", [UserMessage("go"), call("a", STARTED)])
    fork_id = await store.fork("s", 2)
    await store.append(fork_id, [call("a")])
    assert await store.load(fork_id) == Transcript([UserMessage("go"), call("a")])
    assert (await store.load("s"))[1].status is STARTED  # type: ignore[union-attr]


async def test_export_import_round_trip(store: BaseStore, tmp_path: Path) -> None:
    await store.append("s", CONVERSATION)
    await store.set_metadata("s", title="T", model="m", usage=Usage(input_tokens=5), metadata={"k": [1, 2]})
    data = await store.export("s")
    assert data["format"] == "tooloop.session" and data["version"] == 1 and data["message_count"] == 5
    json.dumps(data)  # plain JSON
    copy = await store.import_(data, session_id="copy")
    assert copy == "copy" and await store.load("copy") == Transcript(CONVERSATION)
    original, imported = await store.get_session("s"), await store.get_session("copy")
    assert (imported.title, imported.model, imported.metadata) == ("T", "m", {"k": [1, 2]})
    assert imported.usage == Usage(input_tokens=5)
    assert imported.created_at == original.created_at
    with pytest.raises(ConflictError, match="'s' already exists"):
        await store.import_(data)
    path = tmp_path / "s.json"
    await store.save_to_file("s", path)
    assert await store.load_from_file(path, session_id="from-file") == "from-file"
    assert await store.load("from-file") == Transcript(CONVERSATION)
    await store.append("from-file", [UserMessage("continues")])


async def test_bad_exports_are_refused_and_change_nothing(store: BaseStore, tmp_path: Path) -> None:
    await store.append("s", CONVERSATION)
    data = await store.export("s")
    truncated = {**data, "messages": data["messages"][:3]}
    with pytest.raises(CorruptDataError, match="truncated"):
        await store.import_(truncated, session_id="t1")
    with pytest.raises(CorruptDataError, match="newer"):
        await store.import_({**data, "version": 99}, session_id="t2")
    broken = {**data, "messages": [*data["messages"][:4], {"kind": "alien"}]}
    with pytest.raises(CorruptDataError, match="message 4"):
        await store.import_(broken, session_id="t3")
    path = tmp_path / "cut.json"
    await store.save_to_file("s", path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CorruptDataError, match="not valid JSON"):
        await store.load_from_file(path, session_id="t4")
    assert [s.id for s in await store.list_sessions()] == ["s"]


async def test_corrupt_row_names_session_and_position_and_spares_others(store: BaseStore, store_url: str) -> None:
    await store.append("good", CONVERSATION)
    await store.append("bad", CONVERSATION[:3])
    execute_raw(store_url, "UPDATE tooloop_messages SET data = ? WHERE session_id = ? AND seq = ?", ("{nope", "bad", 1))
    with pytest.raises(CorruptDataError, match=r"session 'bad': message 1 \(seq=1\) cannot be read"):
        await store.load("bad")
    assert await store.load("good") == Transcript(CONVERSATION)
    assert {s.id for s in await store.list_sessions()} == {"good", "bad"}
    execute_raw(store_url, "UPDATE tooloop_messages SET data = ? WHERE session_id = ? AND seq = ?",
                ('{"kind": "user", "text": "ok"}', "bad", 1))  # fmt: skip
    execute_raw(store_url, "UPDATE tooloop_messages SET format = 7 WHERE session_id = ? AND seq = ?", ("bad", 2))
    with pytest.raises(CorruptDataError, match=r"session 'bad': message 2 \(seq=2\) uses format 7, newer"):
        await store.load("bad")


async def test_newer_database_schema_is_refused(store: BaseStore, store_url: str) -> None:
    await store.append("s", [UserMessage("hi")])
    execute_raw(store_url, "INSERT INTO tooloop_schema_version VALUES (99, 0)")
    async with open_store(store_url) as newer:
        with pytest.raises(CorruptDataError, match="schema version 99, newer than this tooloop knows"):
            await newer.load("s")


async def test_migrations_apply_on_open_and_keep_data(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        old: BaseStore = SQLiteStore.from_url(store_url, migrations=SQLITE_MIGRATIONS[:1])
    else:
        old = PostgresStore.from_url(store_url, migrations=POSTGRES_MIGRATIONS[:1])
    async with old:
        await old.append("s", [UserMessage("written by schema 1"), call("a", STARTED)])
    assert execute_raw(store_url, "SELECT version FROM tooloop_schema_version ORDER BY version") == [(1,)]
    async with open_store(store_url) as current:
        await current.append("s", [call("a")])
        assert await current.load("s") == Transcript([UserMessage("written by schema 1"), call("a")])
    newest = SQLITE_MIGRATIONS if store_url.startswith("sqlite") else POSTGRES_MIGRATIONS
    assert execute_raw(store_url, "SELECT version FROM tooloop_schema_version ORDER BY version") == [
        (m.version,) for m in newest
    ]
    assert [m.version for m in newest] == list(range(1, len(newest) + 1))  # every step, in order


def test_open_store_rejects_unknown_urls() -> None:
    with pytest.raises(ConfigurationError, match="unknown store URL 'mysql://x'"):
        open_store("mysql://x")


async def test_sqlite_memory_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with open_store("sqlite:///:memory:") as memory:
        await memory.append("s", CONVERSATION)
        assert await memory.load("s") == Transcript(CONVERSATION)
    monkeypatch.chdir(tmp_path)
    async with open_store("sqlite:///rel/s.db") as relative:
        await relative.append("s", [UserMessage("x")])
    assert (tmp_path / "rel" / "s.db").exists()
    assert execute_raw(f"sqlite:///{tmp_path}/rel/s.db", "PRAGMA journal_mode") == [("wal",)]


async def test_retract_takes_back_one_writers_records_when_nobody_wrote_after_them(store: BaseStore) -> None:
    before = await store.append("s", [UserMessage("p0")])
    after_a = await store.append(
        "s",
        [UserMessage("A"), ToolCallMessage(tool_name="t", tool_call_id="a1", status=ToolCallStatus.STARTED)],
        expected_version=before,
    )
    await store.retract("s", [(before, after_a)])
    assert [m.text for m in await store.load("s")] == ["p0"]  # type: ignore[union-attr]
    info = await store.get_session("s")
    assert info.message_count == 1 and info.version == after_a  # the version does not move
    await store.append("s", [UserMessage("C")], expected_version=after_a)
    assert [m.text for m in await store.load("s")] == ["p0", "C"]  # type: ignore[union-attr]


async def test_retract_keeps_records_another_writer_wrote_after_and_so_built_on(store: BaseStore) -> None:
    before = await store.append("s", [UserMessage("p0")])
    started = ToolCallMessage(tool_name="t", tool_call_id="a1", status=ToolCallStatus.STARTED, batch_id="b")
    after_a = await store.append("s", [UserMessage("A"), started], expected_version=before)
    closed = ToolCallMessage(tool_name="t", tool_call_id="a1", content="closed by B", batch_id="b")
    after_b = await store.append("s", [closed, AssistantMessage("b")], expected_version=after_a)
    await store.retract("s", [(before, after_a)])  # B read A's records and closed A's call: they stay
    stored = await store.load("s")
    assert [(m.kind, m.content if isinstance(m, ToolCallMessage) else m.text) for m in stored] == [  # type: ignore[union-attr]
        ("user", "p0"),
        ("user", "A"),
        ("tool_call", "closed by B"),
        ("assistant", "b"),
    ]
    info = await store.get_session("s")
    assert info.message_count == 4 and info.version == after_b


async def test_retracting_an_outcome_shows_the_entry_it_had_replaced_again(store: BaseStore) -> None:
    started = ToolCallMessage(tool_name="t", tool_call_id="c1", status=ToolCallStatus.STARTED, batch_id="b")
    version = await store.append("s", [UserMessage("go"), started])
    claimed = await store.append("s", [started], expected_version=version)
    finished = await store.append(
        "s", [ToolCallMessage(tool_name="t", tool_call_id="c1", content="done", batch_id="b")], expected_version=claimed
    )
    await store.retract("s", [(version, claimed), (claimed, finished)])
    assert await store.load("s") == Transcript([UserMessage("go"), started])
