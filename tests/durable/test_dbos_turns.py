"""Durable turns on DBOS: end to end through a worker process, idempotent submit, cancel and resume."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from tests.durable.conftest import Workers
from tooloop import (
    ConfigurationError,
    ProviderConnectionError,
    StoreUnavailableError,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
)
from tooloop.durable.dbos import DurableAgents, DurableClient
from tooloop.store import open_store


def turn_shape(prompt: str) -> list[tuple[str, str]]:
    """What one scripted turn leaves in the session."""
    calls = [("tool_call", f"{prompt}-c{i} ok") for i in (1, 2, 3, 4)]
    return [("user", prompt), *calls, ("assistant", f"done {prompt}")]


def shape(messages: object) -> list[tuple[str, str]]:
    out = []
    for m in messages:  # type: ignore[attr-defined]
        if isinstance(m, ToolCallMessage):
            out.append(("tool_call", m.content))
        else:
            out.append((m.kind, m.text))
    return out


@pytest.mark.parametrize(
    ("executor", "version", "message"),
    [
        (None, "v1", "executor_id"),
        ("local", "v1", "executor_id"),
        ("", "v1", "executor_id"),
        ("w1", "", "application_version"),
        ("w1", None, "application_version"),
    ],
)
async def test_launch_refuses_an_unsafe_executor_id_or_an_unpinned_version(
    executor: object, version: object, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        await DurableAgents().launch(
            system_database_url="sqlite:///unused.sqlite", executor_id=executor, application_version=version
        )  # type: ignore[arg-type]


@pytest.mark.timeout(180)
async def test_a_turn_runs_on_a_worker_streams_its_events_and_is_recorded_in_the_store(sqlite_workers: Workers) -> None:
    sqlite_workers.start("w1")
    client = DurableClient(sqlite_workers.db)
    try:
        first = await client.submit("chaos", "s1", "hello", turn_id="t1")
        again = await client.submit("chaos", "s1", "hello", turn_id="t1")  # the same turn, not a second one
        outcome = await client.result(first)
        events = [e async for e in client.events(first)]
        assert again == first
        assert (outcome.stop_reason, outcome.text, outcome.error) == ("end_turn", "done hello", None)
        assert outcome.usage.tool_calls == 4
        kinds = [e["kind"] for e in events]
        assert kinds[0] == "attempt" and kinds[-1] == "turn_finished"
        assert kinds.count("tool_call_finished") == 4 and kinds.count("tool_call_started") == 4
        assert "".join(e["text"] for e in events if e["kind"] == "text_delta") == "done hello"
        assert await client.status(first) == "SUCCESS"
    finally:
        client.close()
    async with open_store(sqlite_workers.store) as store:
        stored = await store.load("s1")
    assert shape(stored) == turn_shape("hello")
    assert stored[0] == UserMessage("hello", "t1")


@pytest.mark.timeout(180)
async def test_turns_of_one_session_run_in_order_and_concurrent_submits_are_one_turn(sqlite_workers: Workers) -> None:
    sqlite_workers.start("w1")
    client = DurableClient(sqlite_workers.db)
    try:
        handles = await asyncio.gather(*(client.submit("chaos", "s", f"p{i}", turn_id=f"t{i}") for i in range(3)))
        duplicates = await asyncio.gather(*(client.submit("chaos", "s", "p0", turn_id="t0") for _ in range(3)))
        assert set(duplicates) == {handles[0]}
        outcomes = [await client.result(h) for h in handles]
    finally:
        client.close()
    assert [o.text for o in outcomes] == ["done p0", "done p1", "done p2"]
    async with open_store(sqlite_workers.store) as store:
        stored = await store.load("s")
    prompts = [m.text for m in stored if isinstance(m, UserMessage)]
    assert sorted(prompts) == ["p0", "p1", "p2"]  # each once; order is the queue's
    assert shape(stored) == [row for p in prompts for row in turn_shape(p)]


@pytest.mark.timeout(180)
async def test_a_cancelled_turn_leaves_a_valid_session_and_resume_finishes_it(sqlite_workers: Workers) -> None:
    sqlite_workers.start("w1")
    client = DurableClient(sqlite_workers.db)
    try:
        turn = await client.submit("chaos", "s", "long", turn_id="t")
        sqlite_workers.wait(lambda: len(sqlite_workers.lines("tool-start")) >= 1, 60, "the first tool to start")
        await client.cancel(turn)
        for _ in range(300):
            if await client.status(turn) == "CANCELLED":
                break
            await asyncio.sleep(0.1)
        assert await client.status(turn) == "CANCELLED"
        async with open_store(sqlite_workers.store) as store:
            cut = await store.load("s")
        assert cut[0] == UserMessage("long", "t")
        await client.resume(turn)
        outcome = await client.result(turn)
    finally:
        client.close()
    assert outcome.text == "done long"
    async with open_store(sqlite_workers.store) as store:
        stored = await store.load("s")
    assert [m for m in stored if isinstance(m, UserMessage)] == [UserMessage("long", "t")]
    assert stored[-1].text == "done long"  # type: ignore[union-attr]


@pytest.mark.timeout(180)
async def test_a_poison_turn_raises_the_error_that_ended_it_and_its_stream_says_so(sqlite_workers: Workers) -> None:
    sqlite_workers.start("w1")
    client = DurableClient(sqlite_workers.db)
    try:
        turn = await client.submit("chaos", "s", "poison pill", turn_id="t")
        with pytest.raises(ProviderConnectionError, match="stream ended before the response was complete"):
            await client.result(turn)
        events = [e async for e in client.events(turn)]
        status = await client.status(turn)
    finally:
        client.close()
    assert status == "ERROR"
    assert [e["kind"] for e in events].count("attempt") == 3  # retried, then given up
    assert events[-1] == {
        "kind": "turn_failed",
        "error": {"type": "ProviderConnectionError", "message": "the stream ended before the response was complete"},
    }
    assert len(sqlite_workers.lines("model")) == 3


@pytest.mark.timeout(240)
async def test_a_turn_resumed_right_after_its_cancel_never_runs_a_call_twice(pg_workers: Workers) -> None:
    slow = ("--tool-min", "1.0", "--tool-max", "1.5")  # a cancel cuts calls that are running
    pg_workers.start("w1", options=slow)
    pg_workers.start("w2", options=slow)
    client = DurableClient(pg_workers.db)
    rng = random.Random(3)
    try:
        for i in range(6):
            turn = await client.submit("chaos", f"s{i}", f"c{i}", turn_id="t")
            prefix = f"c{i}-"
            pg_workers.wait(
                lambda p=prefix: any(r[3].startswith(p) for r in pg_workers.lines("tool-start")), 60, "a tool"
            )
            await client.cancel(turn)
            # at once, or while the cancelled attempt is still writing what it cut
            await asyncio.sleep(rng.uniform(0.0, 1.5))
            await client.resume(turn)
            outcome = await client.result(turn)
            assert outcome.text == f"done c{i}"
    finally:
        client.close()
    starts = Counter(r[3] for r in pg_workers.lines("tool-start"))
    assert max(starts.values()) == 1, starts  # no call the cancel cut (or that finished) ran again
    async with open_store(pg_workers.store) as store:
        for i in range(6):
            stored = await store.load(f"s{i}")
            assert [m for m in stored if isinstance(m, UserMessage)] == [UserMessage(f"c{i}", "t")]
            calls = stored.tool_invocations
            assert len(calls) == 4 and stored[-1].text == f"done c{i}"  # type: ignore[union-attr]
            assert {c.status for c in calls} <= {ToolCallStatus.OK, ToolCallStatus.CANCELLED}


async def test_an_unreachable_system_database_is_named_with_its_password_masked() -> None:
    from tests.store.conftest import _free_port

    url = f"postgresql://app:s3cret@127.0.0.1:{_free_port()}/app"
    with pytest.raises(StoreUnavailableError) as launching:
        await DurableAgents().launch(system_database_url=url, executor_id="w1", application_version="v1")
    with pytest.raises(StoreUnavailableError) as connecting:
        DurableClient(url)
    for caught in (launching, connecting):
        message = str(caught.value)
        assert "DBOS system database at postgresql://app:***@127.0.0.1:" in message, message
        assert "Connection refused" in message and "s3cret" not in message
        assert caught.value.retryable
