"""The hot-path timeout: one timer per loop, the same promise as ``asyncio.timeout``."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tooloop import _deadline
from tooloop._deadline import deadline


async def test_a_scope_whose_time_runs_out_cancels_the_await_and_raises_timeout_error() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        with deadline(0.05) as scope:
            await asyncio.sleep(5)
    assert scope.expired
    assert 0.04 <= loop.time() - started < 1.0
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_scope_left_in_time_does_not_fire_later() -> None:
    with deadline(0.05) as scope:
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)  # past the deadline: nothing may cancel this task now
    assert not scope.expired


async def test_scopes_of_different_lengths_each_expire_at_their_own_time() -> None:
    loop = asyncio.get_running_loop()
    ended: dict[str, float] = {}

    async def wait(name: str, seconds: float) -> None:
        start = loop.time()
        with pytest.raises(TimeoutError):
            with deadline(seconds):
                await asyncio.sleep(5)
        ended[name] = loop.time() - start

    # A quarter of a second apart at least: a loaded machine's pause must not make two of them due
    # in one firing of the timer, where their order would be left to chance.
    await asyncio.gather(wait("long", 0.6), wait("short", 0.05), wait("middle", 0.3))
    assert ended["short"] < ended["middle"] < ended["long"]
    assert 0.04 <= ended["short"] < 0.25
    assert 0.59 <= ended["long"] < 2.0


async def test_a_later_shorter_scope_fires_before_an_earlier_longer_one() -> None:
    loop = asyncio.get_running_loop()
    long_done = asyncio.Event()

    async def long_wait() -> None:
        with deadline(2.0):
            await long_done.wait()

    task = asyncio.create_task(long_wait())
    await asyncio.sleep(0)
    start = loop.time()
    with pytest.raises(TimeoutError):
        with deadline(0.05):
            await asyncio.sleep(5)
    assert loop.time() - start < 1.0
    long_done.set()
    await task  # the long scope was left in time: no error


async def test_someone_elses_cancel_is_not_turned_into_a_timeout() -> None:
    entered = asyncio.Event()

    async def guarded() -> None:
        with deadline(10):
            entered.set()
            await asyncio.sleep(5)

    task = asyncio.create_task(guarded())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancel_arriving_with_the_expiry_still_propagates_as_cancelled_error() -> None:
    # The scope expired, but the task was also cancelled from outside: the outside cancel wins.
    async def guarded() -> None:
        with deadline(0.01):
            try:
                await asyncio.sleep(5)
            finally:
                await asyncio.sleep(5)  # the deadline fired; the outside cancel lands here

    task = asyncio.create_task(guarded())
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_inner_scope_expiring_leaves_the_outer_scope_running() -> None:
    with deadline(5) as outer:
        with pytest.raises(TimeoutError):
            with deadline(0.02):
                await asyncio.sleep(5)
        await asyncio.sleep(0.01)
    assert not outer.expired


async def test_thousands_of_finished_scopes_are_not_kept() -> None:
    for _ in range(5000):
        with deadline(120):
            await asyncio.sleep(0)
    wheel = _deadline._wheel_of(asyncio.get_running_loop())
    assert sum(len(q.scopes) for q in wheel._queues.values()) <= 1


async def test_scopes_left_out_of_order_are_compacted_behind_a_long_lived_one() -> None:
    release = asyncio.Event()

    async def long_lived() -> None:
        with deadline(60):
            await release.wait()

    holder = asyncio.create_task(long_lived())
    await asyncio.sleep(0)
    for _ in range(2000):  # each leaves while the long-lived scope still heads the queue
        with deadline(60):
            await asyncio.sleep(0)
    wheel = _deadline._wheel_of(asyncio.get_running_loop())
    assert len(wheel._queues[60].scopes) < 200
    release.set()
    await holder


async def test_an_expired_scope_cancels_only_its_own_task() -> None:
    async def slow() -> str:
        with deadline(0.03):
            await asyncio.sleep(5)
        return "unreachable"

    async def steady() -> str:
        with deadline(5):
            await asyncio.sleep(0.1)
        return "done"

    results = await asyncio.gather(slow(), steady(), return_exceptions=True)
    assert isinstance(results[0], TimeoutError)
    assert results[1] == "done"


def test_each_event_loop_has_its_own_timer_also_on_other_threads() -> None:
    outcomes: list[str] = []

    async def one() -> None:
        try:
            with deadline(0.05):
                await asyncio.sleep(5)
        except TimeoutError:
            outcomes.append("timeout")

    threads = [threading.Thread(target=asyncio.run, args=(one(),)) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    asyncio.run(one())
    for thread in threads:
        thread.join()
    assert outcomes == ["timeout"] * 5
    assert time.monotonic() - started < 5


def test_deadline_outside_a_task_is_refused() -> None:
    with pytest.raises(RuntimeError, match="running"):
        deadline(1)


async def test_an_expiry_the_block_swallowed_leaves_the_task_not_cancelling() -> None:
    with deadline(0.02) as scope:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            pass  # a block that swallows the cancel finishes normally, as with asyncio.timeout
    assert scope.expired
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)  # and the task can go on awaiting


async def test_a_scope_counted_from_an_earlier_start_expires_before_younger_scopes() -> None:
    loop = asyncio.get_running_loop()
    before = loop.time()
    ended: dict[str, float] = {}

    async def wait(name: str, started: float | None) -> None:
        with pytest.raises(TimeoutError):
            with deadline(0.2, started=started):
                await asyncio.sleep(5)
        ended[name] = loop.time() - before

    young = asyncio.create_task(wait("young", None))
    await asyncio.sleep(0.1)  # the young scope is queued first, expiring 0.2 s after it entered
    await wait("old", before)  # entered later, but counted from before the young one started
    await young
    assert ended["old"] < ended["young"]  # counted from its own entry it would expire 0.1 s after the young one
    assert 0.19 <= ended["old"] < 1.0


async def test_a_scope_whose_time_was_up_before_it_was_entered_expires_at_its_first_wait() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        with deadline(0.05, started=loop.time() - 1) as scope:
            await asyncio.sleep(5)
    assert scope.expired
