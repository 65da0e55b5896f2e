"""A database outage under running DBOS workers: PostgreSQL stopped (as a crash would) and restarted.

Turns in flight finish once the database is back; sweepers keep beating through it and never
take a live worker's turns for a dead one's.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.durable.conftest import Workers, outage
from tests.durable.test_chaos import check_effects, check_sessions, check_turn_order, submit_all
from tests.store.conftest import Cluster
from tooloop.durable.dbos import DurableClient


@pytest.mark.timeout(300)
async def test_turns_in_flight_finish_after_a_database_outage(outage_workers: tuple[Workers, Cluster]) -> None:
    workers, cluster = outage_workers
    sessions, turns = 6, 2
    workers.start("w0")
    workers.start("w1")
    client = DurableClient(workers.db)
    try:
        handles = await submit_all(client, sessions, turns)
        workers.wait(lambda: len(workers.lines("tool-start")) >= 6, 60, "tools to start")
        down = await outage(cluster, 5)
        outcomes = await asyncio.wait_for(asyncio.gather(*(client.result(h) for h in handles)), 180)
        statuses = {await client.status(h) for h in handles}
    finally:
        client.close()
    assert down >= 5
    assert statuses == {"SUCCESS"}
    assert all(o.stop_reason == "end_turn" and o.error is None for o in outcomes)
    await check_sessions(workers, sessions, turns)
    check_effects(workers, sessions, turns)
    check_turn_order(workers)


def heartbeats(url: str) -> dict[str, float]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        return {str(r[0]): float(r[1]) for r in pg.execute("SELECT * FROM tooloop_dbos_heartbeats").fetchall()}


@pytest.mark.timeout(300)
async def test_sweepers_keep_beating_through_an_outage_and_adopt_only_dead_workers(
    outage_workers: tuple[Workers, Cluster],
) -> None:
    workers, cluster = outage_workers
    dead_after = 6.0
    workers.start("w0", sweep=dead_after)
    workers.start("w1", sweep=dead_after)
    client = DurableClient(workers.db)
    try:
        first = [await client.submit("chaos", f"s{s}", f"s{s}-t0", turn_id="t0") for s in range(4)]
        workers.wait(lambda: len(workers.lines("tool-start")) >= 4, 60, "tools to start")
        await outage(cluster, 5)
        back = time.time()
        # a worker started right after the restart sees beats from before the outage: it must not
        # take w0 and w1 for dead while they are running their turns
        await asyncio.to_thread(workers.start, "w2", sweep=dead_after)
        await asyncio.wait_for(asyncio.gather(*(client.result(h) for h in first)), 120)
        await asyncio.sleep(dead_after)  # long enough for every sweeper to judge
        beats = heartbeats(workers.db)
        assert {"w0", "w1", "w2"} <= set(beats), "a sweeper died or a live worker was taken for dead"
        assert all(beats[w] > back for w in ("w0", "w1", "w2")), "a sweeper stopped beating after the outage"
        starts = [r[3] for r in workers.lines("tool-start")]
        assert len(starts) == len(set(starts)) == 16  # nobody adopted a live worker's turn: no call ran twice

        # after the outage, automatic recovery still works: a worker killed mid-turn is adopted
        second = [await client.submit("chaos", f"s{s}", f"s{s}-t1", turn_id="t1") for s in range(4)]
        workers.wait(lambda: any("-t1-" in r[3] for r in workers.lines("tool-start")), 60, "a turn to start")
        runner = next(r[1] for r in workers.lines("tool-start") if "-t1-" in r[3])
        victim = next(name for name, proc in workers.procs.items() if str(proc.pid) == runner)
        workers.kill(victim)
        await asyncio.wait_for(asyncio.gather(*(client.result(h) for h in second)), 120)
        statuses = {await client.status(h) for h in first + second}
    finally:
        client.close()
    assert statuses == {"SUCCESS"}
    await check_sessions(workers, 4, 2)
    check_effects(workers, 4, 2)
    check_turn_order(workers)
