"""Sorting sessions by tokens or cost goes through an index, in either direction, on both backends."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tooloop.messages import Usage, UserMessage
from tooloop.store import BaseStore, open_store, postgres, sqlite
from tooloop.store._search import SearchQuery
from tooloop.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tooloop.store.postgres import PostgresStore
from tooloop.store.sqlite import SQLiteStore

from .conftest import execute_raw


async def ids(store: BaseStore, **options: Any) -> list[str]:
    return [info.id for info in await store.search(**options)]


def _order_sql(url: str, order_by: str, descending: bool) -> str:
    options: dict[str, Any] = {"model": None, "stop_reason": None, "errors_only": False, "limit": 50, "offset": 0}
    query = SearchQuery.of("", order_by=order_by, descending=descending, **options)
    if url.startswith("sqlite"):
        order = query.order(sqlite._ORDER_COLUMNS)
    else:
        order = query.order(postgres._ORDER_COLUMNS, postgres._NULLABLE_ORDERS)
    return f"SELECT id FROM tooloop_sessions {order} LIMIT 50"


def _plan(url: str, sql: str) -> str:
    if url.startswith("sqlite"):
        return " ".join(str(row[-1]) for row in execute_raw(url, f"EXPLAIN QUERY PLAN {sql}"))
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a tiny table: ask whether an index can do it at all
        return " ".join(row[0] for row in conn.execute(f"EXPLAIN {sql}").fetchall())


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("order_by", ["tokens", "cost", "updated"])
async def test_sorting_by_tokens_or_cost_reads_an_index_not_the_table(
    store_url: str, order_by: str, descending: bool
) -> None:
    async with open_store(store_url) as store:
        await store.append("s", [UserMessage("hi")])
    plan = _plan(store_url, _order_sql(store_url, order_by, descending))
    assert "INDEX" in plan.upper() and "Sort" not in plan and "TEMP B-TREE" not in plan, plan
    if order_by != "updated":
        assert f"tooloop_sessions_{order_by}" in plan


async def _sessions(store: BaseStore) -> None:
    costs = [Decimal("0.5"), None, Decimal("0.05"), Decimal("10"), Decimal("0.5"), None]
    tokens = [30, 10, 30, 5, 7, 30]
    for n, (cost, count) in enumerate(zip(costs, tokens, strict=True)):
        await store.append(f"s{n}", [UserMessage("x")])
        await store.set_metadata(f"s{n}", usage=Usage(count, 0, requests=1, cost=cost))


async def test_ascending_is_the_exact_reverse_of_descending(store: BaseStore) -> None:
    await _sessions(store)
    for order_by in ("tokens", "cost", "updated", "title"):
        down = await ids(store, order_by=order_by)
        assert await ids(store, order_by=order_by, descending=False) == down[::-1]
    assert await ids(store, order_by="tokens") == ["s0", "s2", "s5", "s1", "s4", "s3"]  # ties by id


async def test_an_unknown_cost_sorts_as_the_smallest_on_both_backends(store: BaseStore) -> None:
    await _sessions(store)
    assert await ids(store, order_by="cost") == ["s3", "s0", "s4", "s2", "s1", "s5"]  # 10 > 0.5 > 0.05 > unknown
    assert await ids(store, order_by="cost", descending=False, limit=2) == ["s5", "s1"]
    assert await ids(store, order_by="cost", limit=2, offset=2) == ["s4", "s2"]


async def test_a_store_made_before_the_sort_indexes_gets_them_and_keeps_its_sessions(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        old: SQLiteStore | PostgresStore = SQLiteStore.from_url(store_url, migrations=SQLITE_MIGRATIONS[:6])
    else:
        old = PostgresStore.from_url(store_url, migrations=POSTGRES_MIGRATIONS[:6])
    async with old:
        await _sessions(old)
    async with open_store(store_url) as store:
        assert await ids(store, order_by="cost", limit=3) == ["s3", "s0", "s4"]
    plan = _plan(store_url, _order_sql(store_url, "cost", True))
    assert "tooloop_sessions_cost" in plan
