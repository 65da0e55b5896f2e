"""The idle timeout of a pool's reads: each wait fails on its own due time, a settled one never, and
the waits that ended are not kept behind one that lasts (a quiet stream among thousands of requests)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from urllib.parse import urlsplit

import pytest

from tests.transport.servers import Upstream
from tooloop.transport.http import Endpoint, Pool, ReadTimeout
from tooloop.transport.idle import Expiry


async def test_each_pending_wait_fails_at_its_own_time_and_a_settled_one_never() -> None:
    loop = asyncio.get_running_loop()
    # Due 0.3 s apart: a loaded machine's pause of a tenth of a second must not make the two due
    # times fall in one firing of the timer.
    expiry = Expiry(loop, 0.6)
    first, settled = loop.create_future(), loop.create_future()
    expiry.watch(first)
    expiry.watch(settled)
    await asyncio.sleep(0.3)
    later = loop.create_future()
    expiry.watch(later)
    settled.set_result(None)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await first
    assert not later.done()  # watched 0.3 s after the first: not due yet
    with pytest.raises(TimeoutError):
        await later
    assert 0.45 < time.monotonic() - started < 1.5  # its own time (0.6 s), not the first's (0.3 s)
    assert settled.result() is None


async def test_a_wait_cancelled_by_its_task_is_left_cancelled() -> None:
    loop = asyncio.get_running_loop()
    expiry = Expiry(loop, 0.05)
    waiter = loop.create_future()
    expiry.watch(waiter)
    waiter.cancel()
    await asyncio.sleep(0.1)
    assert waiter.cancelled()


async def test_waits_that_ended_behind_a_long_one_are_not_kept() -> None:
    loop = asyncio.get_running_loop()
    expiry = Expiry(loop, 60)
    quiet = loop.create_future()
    expiry.watch(quiet)  # pending at the head of the queue all along
    ended: list[weakref.ref[asyncio.Future[None]]] = []
    for _ in range(20000):
        waiter = loop.create_future()
        expiry.watch(waiter)
        waiter.set_result(None)
        ended.append(weakref.ref(waiter))
    del waiter
    gc.collect()
    assert sum(ref() is not None for ref in ended) < 1000
    assert not quiet.done()
    quiet.cancel()


async def test_a_stalled_request_is_a_read_timeout_while_others_on_the_pool_go_on(upstream: Upstream) -> None:
    pool = Pool(Endpoint.parse(upstream.url("ok", "t")), connect_timeout=5, read_timeout=1.0)

    def head(scenario: str) -> bytes:
        path = urlsplit(upstream.url(scenario, "idle")).path
        return f"POST {path}/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n".encode()

    try:
        started = time.monotonic()
        stalled = asyncio.ensure_future(pool.request(head("sink"), b"{}"))  # never answered
        for _ in range(3):
            answers = await asyncio.gather(*(pool.request(head("ok"), b"{}") for _ in range(10)))
            assert [answer.status for answer in answers] == [200] * 10
            for answer in answers:
                assert b"pong from ok" in await answer.read()
        with pytest.raises(ReadTimeout, match=r"no data from .* for 1 s"):
            await stalled
        assert 0.9 < time.monotonic() - started < 4
    finally:
        await pool.aclose()


async def test_a_wait_watched_as_the_queue_is_compacted_still_times_out() -> None:
    loop = asyncio.get_running_loop()
    expiry = Expiry(loop, 0.05)
    quiet = loop.create_future()
    expiry.watch(quiet)  # pending at the head: the waits that end behind it are compacted away
    for _ in range(255):  # with the quiet one, 256 queued: the next watch compacts the queue first
        waiter = loop.create_future()
        expiry.watch(waiter)
        waiter.set_result(None)
    late = loop.create_future()
    expiry.watch(late)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(late, 2)  # the bound, should the watch have been lost
    assert time.monotonic() - started < 1
    assert quiet.done()
