"""A session's cost: summed over its runs, kept in the usage and in the ``cost`` column."""

from __future__ import annotations

from decimal import Decimal

from tests.store.conftest import execute_raw
from tooloop import Agent, ModelResponse, Usage, UserMessage
from tooloop.store import open_store
from tooloop.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tooloop.store.postgres import PostgresStore
from tooloop.store.sqlite import SQLiteStore
from tooloop.testing import FunctionModel


def priced_model(cost: str) -> FunctionModel:
    return FunctionModel(lambda r: ModelResponse("ok", usage=Usage(100, 10, cost=Decimal(cost))))


async def test_a_sessions_cost_is_the_sum_of_its_runs(store_url: str) -> None:
    await Agent(priced_model("0.0125"), store=store_url).run("one", session_id="s")
    await Agent(priced_model("0.0075"), store=store_url).run("two", session_id="s")
    async with open_store(store_url) as store:
        info = await store.get_session("s")
        assert info.usage.cost == Decimal("0.0200")
        assert (info.usage.requests, info.usage.input_tokens) == (2, 200)
        exported = await store.export("s")
        assert exported["session"]["usage"]["cost"] == "0.0200"
    [(column,)] = execute_raw(store_url, "SELECT cost FROM tooloop_sessions WHERE id = 's'")
    assert Decimal(str(column)) == Decimal("0.02")


async def test_an_unpriced_run_leaves_the_session_cost_unknown(store_url: str) -> None:
    await Agent(priced_model("0.01"), store=store_url).run("one", session_id="s")
    await Agent("test:echo", store=store_url).run("two", session_id="s")
    async with open_store(store_url) as store:
        assert (await store.get_session("s")).usage.cost is None
    assert execute_raw(store_url, "SELECT cost FROM tooloop_sessions WHERE id = 's'") == [(None,)]


async def test_the_cost_migration_keeps_older_sessions(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        old: SQLiteStore | PostgresStore = SQLiteStore.from_url(store_url, migrations=SQLITE_MIGRATIONS[:2])
    else:
        old = PostgresStore.from_url(store_url, migrations=POSTGRES_MIGRATIONS[:2])
    async with old:
        await old.append("s", [UserMessage("before costs")])
    old_usage = '{"input_tokens": 5, "output_tokens": 1, "requests": 1}'  # as tooloop wrote it before costs
    execute_raw(store_url, "UPDATE tooloop_sessions SET usage = ? WHERE id = 's'", (old_usage,))
    async with open_store(store_url) as store:
        info = await store.get_session("s")
        assert info.usage == Usage(5, 1, requests=1)
        assert list(await store.load("s")) == [UserMessage("before costs")]
    await Agent(priced_model("0.5"), store=store_url).run("after", session_id="s")
    async with open_store(store_url) as store:
        assert (await store.get_session("s")).usage.cost is None  # the old run's price is unknown
    await Agent(priced_model("0.5"), store=store_url).run("fresh", session_id="t")
    assert [Decimal(str(c)) for (c,) in execute_raw(store_url, "SELECT cost FROM tooloop_sessions WHERE id = 't'")] == [
        Decimal("0.5")
    ]
