"""Session leases: a live owner keeps a second worker out; a dead owner's lease is taken over."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tooloop import Agent, ArgumentValueError, ConflictError, ModelRequest, SessionBusyError, UserMessage
from tooloop.store import BaseStore, SessionLease, open_store
from tooloop.testing import FunctionModel


async def test_a_live_lease_refuses_another_owner_and_an_expired_one_is_taken_over(store: BaseStore) -> None:
    await store.claim_lease("s", "worker-a", ttl=30)  # live however slow the machine is meanwhile
    with pytest.raises(SessionBusyError, match="worker-a") as caught:
        await store.claim_lease("s", "worker-b", ttl=10)
    assert caught.value.owner == "worker-a" and isinstance(caught.value, ConflictError)
    assert await store.claim_lease("s", "worker-a", ttl=0.5) > time.time()  # the owner renews, for less
    await asyncio.sleep(0.7)  # worker-a died: nobody renews
    await store.claim_lease("s", "worker-b", ttl=10)
    with pytest.raises(SessionBusyError, match="worker-b"):
        await store.claim_lease("s", "worker-a", ttl=10)


async def test_release_ends_only_the_owners_lease(store: BaseStore) -> None:
    await store.claim_lease("s", "a", ttl=10)
    await store.release_lease("s", "b")  # not b's: nothing happens
    with pytest.raises(SessionBusyError):
        await store.claim_lease("s", "b", ttl=10)
    await store.release_lease("s", "a")
    await store.claim_lease("s", "b", ttl=10)


async def test_a_second_run_on_a_leased_session_fails_fast_and_writes_nothing(store_url: str) -> None:
    started, gate = asyncio.Event(), asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await gate.wait()
        return "first answer"

    agent = Agent(FunctionModel(slow), store=store_url, lease=SessionLease(ttl=5))
    first = asyncio.create_task(agent.run("one", session_id="s"))
    await started.wait()
    with pytest.raises(SessionBusyError):
        await agent.run("two", session_id="s")
    gate.set()
    assert (await first).text == "first answer"
    async with open_store(store_url) as opened:
        assert [m.text for m in await opened.load("s") if isinstance(m, UserMessage)] == ["one"]
    assert (await agent.run("three", session_id="s")).text == "first answer"  # released at the end


async def test_a_waiting_run_gets_the_session_when_the_owner_finishes(store_url: str) -> None:
    gate = asyncio.Event()
    calls: list[str] = []

    async def answer(request: ModelRequest) -> str:
        text = request.messages[-1].text  # type: ignore[union-attr]
        calls.append(text)
        if text == "one":
            await gate.wait()
        return f"re: {text}"

    agent = Agent(FunctionModel(answer), store=store_url, lease=SessionLease(ttl=5, wait=30))
    first = asyncio.create_task(agent.run("one", session_id="s"))
    while not calls:
        await asyncio.sleep(0.01)
    second = asyncio.create_task(agent.run("two", session_id="s"))
    await asyncio.sleep(0.5)
    assert calls == ["one"]  # the second run waits for the lease, it has not asked the model
    gate.set()
    assert [(await first).text, (await second).text] == ["re: one", "re: two"]


async def test_the_lease_is_renewed_while_a_long_run_holds_it(store_url: str) -> None:
    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(2.0)  # over three times the lease's life
        return "done"

    # Renewed every 0.2 s: a renewal may be 0.4 s late on a loaded machine before the lease lapses.
    agent = Agent(FunctionModel(slow), store=store_url, lease=SessionLease(ttl=0.6))
    first = asyncio.create_task(agent.run("one", session_id="s"))
    await asyncio.sleep(1.4)
    with pytest.raises(SessionBusyError):
        await agent.run("two", session_id="s")
    assert (await first).text == "done"


@pytest.mark.parametrize("bad", [{"ttl": 0}, {"wait": -1}])
def test_a_lease_needs_a_positive_life_and_a_non_negative_wait(bad: dict[str, float]) -> None:
    with pytest.raises(ArgumentValueError):
        SessionLease(**bad)


def _spawn_owner(store_url: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("lease_owner.py")), store_url, str(log)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )


async def test_a_paused_owner_woken_after_a_takeover_leaves_the_takers_session_as_it_was(
    store_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "owner.log"
    owner = _spawn_owner(store_url, log)
    try:
        lines = lambda: log.read_text().splitlines() if log.exists() else []  # noqa: E731
        deadline = time.monotonic() + 60
        while "start" not in lines():
            assert owner.poll() is None and time.monotonic() < deadline, "the owner never started its tool"
            await asyncio.sleep(0.02)
        owner.send_signal(signal.SIGSTOP)  # paused mid-tool, its lease runs out
        await asyncio.to_thread(Path(f"{log}.go").touch)  # its tool returns as soon as it is woken

        def taker_script(request: ModelRequest) -> str:
            return "taker's answer"

        async def slow() -> str:
            """Takes a while."""
            return "taker's outcome"

        taker = Agent(FunctionModel(taker_script), tools=[slow], store=store_url, lease=SessionLease(ttl=1, wait=30))
        taken = await taker.resume("s")  # waits for the lease to expire, then reruns the cut call
        assert taken.text == "taker's answer"
        owner.send_signal(signal.SIGCONT)
        await asyncio.to_thread(owner.wait, 60)
    finally:
        owner.send_signal(signal.SIGCONT)
        owner.kill()
        owner.wait()
    assert lines()[-1] == "end ConflictError"  # the woken owner lost at its next write
    async with open_store(store_url) as opened:
        stored = await opened.load("s")
    assert stored == taken.transcript  # the owner took nothing back that the taker built on
    assert stored[0] == UserMessage("do it")
    assert [m.content for m in stored.tool_invocations] == ["taker's outcome"]


async def test_releasing_a_lease_whose_renewal_waits_for_a_pooled_connection_ends_it(postgres_url: str) -> None:
    """On Python 3.11, a cancellation landing just as the pool hands a connection over is swallowed
    by ``asyncio.wait_for`` inside psycopg_pool: the renewal must stop by its flag all the same."""
    from tooloop.store.journal import _Held
    from tooloop.store.postgres import PostgresStore

    store = PostgresStore(postgres_url, min_size=1, max_size=1)
    try:
        held = _Held(store, "s", SessionLease(ttl=0.3))
        await held.take()
        pool = store._pool  # the fault: the pool's only connection is busy when the renewal is due
        conn = await pool.getconn()
        deadline = time.monotonic() + 10
        while pool.get_stats().get("requests_waiting", 0) == 0:  # the renewal waits for the connection
            assert time.monotonic() < deadline, "the renewal never asked for a connection"
            await asyncio.sleep(0.01)
        await pool.putconn(conn)  # handed to the waiting renewal...
        release = asyncio.ensure_future(held.release())  # ...as release() cancels it in the same step
        await asyncio.wait({release}, timeout=5)
        assert release.done(), "release() hangs: the renewal swallowed its cancellation and renews for ever"
        release.result()
        assert held._renewing is not None and held._renewing.done()
        await store.claim_lease("s", "another worker", ttl=10)  # the lease is free at once
        await asyncio.sleep(0.5)  # and nobody renews it behind the new owner's back
        with pytest.raises(SessionBusyError, match="another worker"):
            await store.claim_lease("s", held.owner, ttl=10)
    finally:
        await store.close()
