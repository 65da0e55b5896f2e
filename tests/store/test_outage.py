"""PostgreSQL going away: the store reconnects with backoff, and says clearly when it cannot.

These tests own their PostgreSQL server and stop it with ``pg_ctl stop -m immediate``, so every
client connection drops as in a crash of the database.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from tests.store.conftest import Cluster, _free_port
from tooloop import Agent, ModelRequest, ModelResponse, StoreError, StoreUnavailableError, ToolCall, ToolCallMessage
from tooloop.store import open_store
from tooloop.testing import FunctionModel


async def test_a_run_whose_journal_write_meets_a_database_restart_finishes(
    own_postgres: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    restarted = threading.Event()
    restarter = threading.Thread(target=lambda: (time.sleep(3), own_postgres.start(), restarted.set()))

    async def crash_the_database() -> str:
        """Stops the database for a few seconds."""
        await asyncio.to_thread(own_postgres.stop)  # down before the outcome is written
        restarter.start()
        return "the database is down"

    def script(request: ModelRequest) -> ModelResponse:
        if not any(isinstance(m, ToolCallMessage) for m in request.messages):
            return ModelResponse(tool_calls=[ToolCall("c1", "crash_the_database", {})])
        return ModelResponse("still here")

    async with open_store(own_postgres.url) as store:
        agent = Agent(FunctionModel(script), tools=[crash_the_database], store=store)
        with caplog.at_level(logging.WARNING, logger="tooloop.store"):
            result = await agent.run("go", session_id="s")
        # The store may reach the server before pg_ctl, polling it, says it is up: the run can end
        # first, so the restart is waited for rather than assumed done.
        await asyncio.to_thread(restarter.join, 90)
        assert restarted.is_set()
        assert any("writing to session 's' failed" in r.getMessage() for r in caplog.records)  # it met the outage
        assert result.text == "still here"
        assert await store.load("s") == result.transcript  # every message written once, in order


async def test_a_database_down_longer_than_retry_for_is_a_retryable_error_and_the_store_recovers(
    own_postgres: Cluster,
) -> None:
    async with open_store(own_postgres.url, retry_for=1.0) as store:
        await store.append("s", [])
        own_postgres.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="stayed unreachable for 1 s while loading session 's'") as down:
            await store.load("s")
        assert time.monotonic() - started < 10
        assert down.value.retryable
        own_postgres.start()
        assert len(await store.load("s")) == 0  # the same store works again


async def test_an_unreachable_database_is_named_with_its_password_masked() -> None:
    url = f"postgresql://app:s3cret@127.0.0.1:{_free_port()}/app"
    async with open_store(url, retry_for=1.0) as store:
        with pytest.raises(StoreUnavailableError) as caught:
            await store.load("s")
    message = str(caught.value)
    assert "postgresql://app:***@127.0.0.1:" in message and "s3cret" not in message
    assert "Connection refused" in message  # the reason, not only the pool's timeout


async def test_a_database_that_does_not_exist_is_not_retried(own_postgres: Cluster) -> None:
    url = own_postgres.url.rsplit("/", 1)[0] + "/nosuchdb"
    async with open_store(url, retry_for=1.0) as store:
        with pytest.raises(StoreError, match='database "nosuchdb" does not exist') as caught:
            await store.load("s")
    assert not caught.value.retryable


async def test_the_store_reconnects_within_seconds_of_the_end_of_a_long_outage(own_postgres: Cluster) -> None:
    async with open_store(own_postgres.url) as store:
        await store.append("s", [])
        own_postgres.stop()
        restarted: list[float] = []

        def restart_later() -> None:
            time.sleep(8)  # long enough for a pool's own reconnection backoff to reach 8 s between tries
            own_postgres.start()
            restarted.append(time.monotonic())

        threading.Thread(target=restart_later).start()
        assert len(await store.load("s")) == 0  # waits through the outage
        back = time.monotonic() - restarted[0]
    assert back < 4, f"the store needed {back:.1f} s after the database came back"
