"""Store.search: the full-text index over messages and titles, filters and orders, on both backends."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from tooloop.errors import ArgumentValueError, SessionNotFoundError
from tooloop.messages import AssistantMessage, StopReason, ToolCallMessage, ToolCallStatus, Usage, UserMessage
from tooloop.store import BaseStore, open_store
from tooloop.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tooloop.store.postgres import PostgresStore
from tooloop.store.sqlite import SQLiteStore

from .conftest import execute_raw


def tool(
    call_id: str, content: str, status: ToolCallStatus = ToolCallStatus.OK, **arguments: object
) -> ToolCallMessage:
    return ToolCallMessage(
        tool_name="fetch_page", tool_call_id=call_id, arguments=arguments, status=status, content=content, batch_id="b"
    )


async def ids(store: BaseStore, text: str = "", **options: object) -> list[str]:
    return [info.id for info in await store.search(text, **options)]  # type: ignore[arg-type]


async def test_search_finds_words_in_prompts_answers_tool_arguments_results_and_titles(store: BaseStore) -> None:
    await store.append("weather", [UserMessage("Weather in Zürich tomorrow?"), AssistantMessage("Sunny, 21 degrees")])
    await store.append("pages", [UserMessage("read it"), tool("c1", "the parser failed", url="https://example.org/x")])
    await store.append("other", [UserMessage("nothing to see")])
    await store.set_metadata("other", title="Quarterly figures")

    assert await ids(store, "ZÜRICH") == ["weather"]  # case aside
    assert await ids(store, "SUNNY degrees") == ["weather"]  # every word, anywhere in the session
    assert await ids(store, "sunny parser") == []
    assert await ids(store, "pars") == ["pages"]  # a word matches as a prefix
    assert await ids(store, "example.org") == ["pages"]  # tool arguments
    assert await ids(store, "fetch_page") == ["pages"]  # the tool's name
    assert await ids(store, "quarterly") == ["other"]  # the title
    assert set(await ids(store, "")) == {"weather", "pages", "other"}
    assert await ids(store, "\"'*:&|!()") == await ids(store, "")  # query syntax is never interpreted


async def test_search_forgets_retitled_deleted_and_retracted_text(store: BaseStore) -> None:
    await store.set_metadata("s", title="alpha plan")
    await store.set_metadata("s", title="beta plan")
    assert await ids(store, "alpha") == []
    assert await ids(store, "beta") == ["s"]
    before = await store.append("s", [UserMessage("keep this")])
    after = await store.append("s", [UserMessage("regret that")], expected_version=before)
    assert await ids(store, "regret") == ["s"]
    await store.retract("s", [(before, after)])
    assert await ids(store, "regret") == []
    assert await ids(store, "keep") == ["s"]
    await store.delete("s")
    assert await ids(store, "keep") == [] and await ids(store, "beta") == []


async def test_search_filters_by_model_stop_reason_and_errors(store: BaseStore) -> None:
    await store.append("fine", [UserMessage("a"), AssistantMessage("done", model="m1")])
    await store.set_metadata("fine", model="m1")
    await store.append("cut", [UserMessage("b"), AssistantMessage("trunc", stop_reason=StopReason.MAX_TOKENS)])
    await store.set_metadata("cut", model="m2")
    await store.append("broken", [UserMessage("c"), tool("c1", "boom", ToolCallStatus.ERROR)])
    await store.append("waiting", [UserMessage("d"), tool("c2", "", ToolCallStatus.PENDING)])

    assert await ids(store, model="m1") == ["fine"]
    assert await ids(store, stop_reason="max_tokens") == ["cut"]
    assert await ids(store, stop_reason="approval_required") == ["waiting"]
    assert await ids(store, errors_only=True) == ["broken"]
    info = {i.id: i for i in await store.search()}
    assert (info["fine"].stop_reason, info["broken"].errors, info["fine"].errors) == ("end_turn", 1, 0)
    await store.append("waiting", [tool("c2", "approved and ran")])  # the decision came: no longer waiting
    assert await ids(store, stop_reason="approval_required") == []


async def test_search_sorts_by_usage_and_pages_without_repeats(store: BaseStore) -> None:
    for n in range(5):
        await store.append(f"s{n}", [UserMessage("x " * (n + 1))])
        usage = Usage(input_tokens=10 * ((n * 3) % 5), output_tokens=1, tool_calls=n, cost=Decimal(f"0.0{n}"))
        await store.set_metadata(f"s{n}", usage=usage)
    assert await ids(store, order_by="tokens") == ["s3", "s1", "s4", "s2", "s0"]
    assert await ids(store, order_by="cost", descending=False) == ["s0", "s1", "s2", "s3", "s4"]
    assert await ids(store, order_by="tool_calls", limit=2) == ["s4", "s3"]
    assert await ids(store, order_by="tool_calls", limit=2, offset=2) == ["s2", "s1"]
    assert await ids(store, "x", order_by="messages", limit=10) == sorted(await ids(store, "x"))  # ties by id


async def test_search_rejects_bad_arguments_with_a_clear_error(store: BaseStore) -> None:
    with pytest.raises(ArgumentValueError, match=r"order_by='size'\) is not one of updated, created"):
        await store.search(order_by="size")  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match=r"limit=-1\) must be a whole number"):
        await store.search(limit=-1)


async def test_search_lists_a_session_whose_row_or_usage_is_corrupt(store: BaseStore, store_url: str) -> None:
    await store.append("good", [UserMessage("findable words")])
    await store.append("bad", [UserMessage("findable too")])
    execute_raw(
        store_url,
        "INSERT INTO tooloop_messages (session_id, seq, pos, tool_call_id, status, format, data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("bad", 1, 1, None, None, 1, "{not json"),
    )
    execute_raw(store_url, "UPDATE tooloop_sessions SET usage = ? WHERE id = ?", ("{broken", "bad"))
    found = {info.id: info for info in await store.search("findable")}
    assert set(found) == {"good", "bad"}
    assert found["bad"].problem is not None and "usage cannot be read" in found["bad"].problem
    assert found["good"].problem is None


async def test_sessions_written_before_the_index_existed_become_searchable(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        old: BaseStore = SQLiteStore.from_url(store_url, migrations=SQLITE_MIGRATIONS[:4])
    else:
        old = PostgresStore.from_url(store_url, migrations=POSTGRES_MIGRATIONS[:4])
    async with old:
        await old.append("early", [UserMessage("ancient history"), tool("c1", "bad", ToolCallStatus.ERROR)])
        await old.append("early", [AssistantMessage("ok", stop_reason=StopReason.REFUSAL)])
        await old.append("later", [UserMessage("nothing")])
    usage = '{"input_tokens": 7, "output_tokens": 3, "tool_calls": 1}'  # as the older schema wrote them
    sql = "UPDATE tooloop_sessions SET usage = ?, title = ? WHERE id = ?"
    execute_raw(store_url, sql, (usage, "Old title", "early"))
    async with open_store(store_url) as current:
        assert await ids(current, "ancient") == ["early"]
        assert await ids(current, "old title") == ["early"]
        [info] = await current.search("ancient")
        assert (info.stop_reason, info.errors, info.usage.tool_calls) == ("refusal", 1, 1)
        assert await ids(current, order_by="tokens", limit=1) == ["early"]


async def test_writes_say_when_each_record_was_written_and_what_it_replaced(store: BaseStore) -> None:
    await store.append("s", [UserMessage("go"), tool("c1", "", ToolCallStatus.STARTED)])
    await asyncio.sleep(0.05)
    await store.append("s", [tool("c1", "done")])
    writes = await store.writes("s")
    assert [(w.seq, w.pos, w.tool_call_id, w.status) for w in writes] == [
        (0, 0, None, None),
        (1, 1, "c1", "started"),
        (2, 1, "c1", "ok"),
    ]
    started, finished = writes[1].written_at, writes[2].written_at
    assert started is not None and finished is not None
    assert 0.04 <= (finished - started).total_seconds() < 5
    with pytest.raises(SessionNotFoundError):
        await store.writes("nope")
