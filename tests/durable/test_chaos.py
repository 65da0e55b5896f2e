"""Workers killed at random and at chosen points: every turn finishes, nothing is lost or repeated.

The chaos run is bounded (a few sessions, a few turns, ~15 s of kills) so it fits in CI; the
invariants are the ones a service depends on, checked from the store and the effects log.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections import Counter, defaultdict

import pytest

from tests.durable.conftest import Workers, outage
from tests.durable.test_dbos_turns import shape, turn_shape
from tests.store.conftest import Cluster
from tooloop.durable.dbos import DurableClient, TurnHandle
from tooloop.store import open_store


def _size(name: str, default: int) -> int:
    return int(os.environ.get(f"TOOLOOP_CHAOS_{name}", default))


async def submit_all(client: DurableClient, sessions: int, turns: int) -> list[TurnHandle]:
    return [
        await client.submit("chaos", f"s{s}", f"s{s}-t{t}", turn_id=f"t{t}")
        for s in range(sessions)
        for t in range(turns)
    ]


async def check_sessions(workers: Workers, sessions: int, turns: int) -> None:
    """Every transcript exactly as scripted: each prompt once, each call once with its outcome, the answer last."""
    async with open_store(workers.store) as store:
        for s in range(sessions):
            stored = shape(await store.load(f"s{s}"))
            assert stored == [row for t in range(turns) for row in turn_shape(f"s{s}-t{t}")], f"session s{s}"


def effect_rows(workers: Workers) -> list[str]:
    import psycopg

    with psycopg.connect(workers.store, autocommit=True) as pg:
        return [row[0] for row in pg.execute("SELECT key FROM effects").fetchall()]


def check_effects(workers: Workers, sessions: int, turns: int) -> int:
    """Every side effect once; every call started; finished calls run again at most once per kill.

    Returns how many finished calls ran again.
    """
    calls = {f"s{s}:s{s}-t{t}-c{i}" for s in range(sessions) for t in range(turns) for i in (1, 2, 3, 4)}
    rows = effect_rows(workers)
    assert Counter(rows) == Counter(calls)  # the idempotency key made every side effect exactly once
    starts = Counter(r[3] for r in workers.lines("tool-start"))
    ends: set[str] = set()
    rerun_after_end = 0
    for row in workers.lines():
        if row[2] == "tool-end":
            ends.add(row[3])
        elif row[2] == "tool-start" and row[3] in ends:
            rerun_after_end += 1  # a call whose tool returned but whose journal write the kill beat
    assert set(starts) == {c.split(":", 1)[1] for c in calls}
    assert rerun_after_end <= workers.kills
    return rerun_after_end


def check_worker_limit(workers: Workers, limit: int) -> None:
    """No worker ever ran more turns at once than its ``worker_concurrency``."""
    spans: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in workers.lines():
        if row[2] in ("model", "tool-start", "tool-end"):
            prompt = row[3] if row[2] == "model" else row[3].rsplit("-", 1)[0]
            spans[(row[1], prompt)].append(float(row[0]))
    by_worker: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for (pid, _), times in spans.items():
        by_worker[pid] += [(min(times), 1), (max(times), -1)]
    for pid, edges in by_worker.items():
        running = peak = 0
        for _, change in sorted(edges, key=lambda e: (e[0], e[1])):
            running += change
            peak = max(peak, running)
        assert peak <= limit, f"worker {pid} ran {peak} turns at once (limit {limit})"


def check_turn_order(workers: Workers) -> None:
    """No session ever ran two turns at once: all of turn t's activity precedes turn t+1's."""
    spans: dict[tuple[str, int], list[float]] = defaultdict(list)
    for row in workers.lines():
        if row[2] in ("model", "tool-start", "tool-end"):
            prompt = row[3] if row[2] == "model" else row[3].rsplit("-", 1)[0]
            session, turn = prompt.split("-t")
            spans[(session, int(turn))].append(float(row[0]))
    for (session, turn), times in spans.items():
        following = spans.get((session, turn + 1))
        if following:
            assert max(times) < min(following), f"{session} turn {turn} overlapped turn {turn + 1}"


@pytest.mark.timeout(420)
async def test_random_sigkills_with_restarts_and_adoptions_lose_and_repeat_nothing(pg_workers: Workers) -> None:
    sessions, turns = 6, 3
    rng = random.Random(7)
    live = ["w0", "w1"]
    for name in live:
        pg_workers.start(name)
    client = DurableClient(pg_workers.db)
    try:
        handles = await submit_all(client, sessions, turns)
        for n in range(5):  # bounded chaos: a kill every 1.5-3 s
            await asyncio.sleep(rng.uniform(1.5, 3.0))
            victim = rng.choice(live)
            pg_workers.kill(victim)
            if n % 2 == 0:
                await asyncio.to_thread(pg_workers.start, victim)  # restarted under its own id: recovers its turns
            else:
                adopter = f"w{len(pg_workers.procs)}"
                await asyncio.to_thread(pg_workers.start, adopter, recover=(victim,))
                live[live.index(victim)] = adopter
        outcomes = await asyncio.wait_for(asyncio.gather(*(client.result(h) for h in handles)), 240)
        statuses = {await client.status(h) for h in handles}
    finally:
        client.close()
    assert pg_workers.kills == 5
    assert statuses == {"SUCCESS"}
    assert all(o.stop_reason == "end_turn" and o.error is None for o in outcomes)
    await check_sessions(pg_workers, sessions, turns)
    check_effects(pg_workers, sessions, turns)
    check_turn_order(pg_workers)
    check_worker_limit(pg_workers, 4)  # the workers' worker_concurrency


@pytest.mark.timeout(240)
@pytest.mark.parametrize("point", ["after_prompt", "after_tool", "mid_stream"])
async def test_a_worker_killed_at_a_chosen_point_is_recovered_exactly(pg_workers: Workers, point: str) -> None:
    pg_workers.start("w0", env={"TOOLOOP_TEST_KILL": f"{point}:s0-t0"})
    client = DurableClient(pg_workers.db)
    try:
        turn = await client.submit("chaos", "s0", "s0-t0", turn_id="t0")
        pg_workers.wait(lambda: bool(pg_workers.lines("kill")), 60, f"the kill at {point}")
        pg_workers.procs["w0"].wait()
        pg_workers.kills += 1
        await asyncio.to_thread(pg_workers.start, "w1", recover=("w0",))
        outcome = await asyncio.wait_for(client.result(turn), 120)
    finally:
        client.close()
    assert outcome.text == "done s0-t0"
    await check_sessions(pg_workers, 1, 1)
    check_effects(pg_workers, 1, 1)
    models = [r for r in pg_workers.lines("model")]
    if point == "after_tool":  # the call the kill cut after its effect ran again, its effect did not
        assert len(pg_workers.lines("tool-start")) >= 5
    if point == "mid_stream":  # the answer was asked again; its text came once into the session
        assert [r[4] for r in models].count("4") == 2


@pytest.mark.timeout(240)
async def test_a_paused_worker_whose_turn_was_adopted_stops_at_its_next_write(pg_workers: Workers) -> None:
    pg_workers.start("w0")
    client = DurableClient(pg_workers.db)
    try:
        turn = await client.submit("chaos", "s0", "s0-t0", turn_id="t0")
        pg_workers.wait(lambda: len(pg_workers.lines("tool-start")) >= 1, 60, "a tool to start")
        pg_workers.kill("w0", signal.SIGSTOP)
        await asyncio.to_thread(pg_workers.start, "w1", recover=("w0",))
        outcome = await asyncio.wait_for(client.result(turn), 120)
        pg_workers.kill("w0", signal.SIGCONT)
        await asyncio.sleep(3)  # the zombie wakes, finishes its in-flight tools, then tries to write
        assert await client.status(turn) == "SUCCESS"
    finally:
        client.close()
    assert outcome.text == "done s0-t0"
    await check_sessions(pg_workers, 1, 1)  # the zombie's late writes were refused, nothing doubled
    assert Counter(effect_rows(pg_workers)) == Counter(f"s0:s0-t0-c{i}" for i in (1, 2, 3, 4))
    zombie = str(pg_workers.procs["w0"].pid)
    assert not [r for r in pg_workers.lines("model") if r[1] == zombie and r[4] != "0"]  # it never asked again


@pytest.mark.timeout(240)
async def test_the_sweeper_recovers_a_dead_workers_turn_without_an_operator(pg_workers: Workers) -> None:
    pg_workers.start("w0", sweep=3)
    pg_workers.start("w1", sweep=3)
    client = DurableClient(pg_workers.db)
    try:
        turns = [await client.submit("chaos", f"s{s}", f"s{s}-t0", turn_id="t0") for s in range(4)]
        pg_workers.wait(lambda: len(pg_workers.lines("tool-start")) >= 4, 60, "tools to start")
        w0 = str(pg_workers.procs["w0"].pid)
        victim = "w0" if any(r[1] == w0 for r in pg_workers.lines("tool-start")) else "w1"  # one that runs a turn
        pg_workers.kill(victim)
        outcomes = await asyncio.wait_for(asyncio.gather(*(client.result(t) for t in turns)), 150)
    finally:
        client.close()
    assert [o.text for o in outcomes] == [f"done s{s}-t0" for s in range(4)]
    survivor = "w1" if victim == "w0" else "w0"
    assert pg_workers.procs[survivor].poll() is None
    await check_sessions(pg_workers, 4, 1)
    check_effects(pg_workers, 4, 1)


@pytest.mark.timeout(_size("TIMEOUT", 290))
async def test_random_sigkills_of_three_workers_and_a_database_outage_lose_and_repeat_nothing(
    outage_workers: tuple[Workers, Cluster],
) -> None:
    """Kills and an outage together, checked only from the outside (the store, the effects log).

    ``scripts/durable_chaos.sh`` runs bigger variants (``TOOLOOP_CHAOS_SESSIONS``, ``_TURNS``,
    ``_KILLS``, ``_OUTAGE``, ``_SEED``).
    """
    workers, cluster = outage_workers
    sessions, turns, kills = _size("SESSIONS", 6), _size("TURNS", 3), _size("KILLS", 5)
    outage_seconds, rng = float(_size("OUTAGE", 5)), random.Random(_size("SEED", 11))
    began = time.monotonic()
    live = ["w0", "w1", "w2"]
    for name in live:
        workers.start(name)
    client = DurableClient(workers.db)
    killed: set[str] = set()
    down = 0.0
    try:
        handles = await submit_all(client, sessions, turns)
        for n in range(kills):
            await asyncio.sleep(rng.uniform(1.0, 2.5))
            victim = rng.choice([w for w in live if w not in killed] or live)  # each worker dies once first
            workers.kill(victim)
            killed.add(victim)
            if n == 1:  # the database goes down with a worker dead and turns in flight
                down = await outage(cluster, outage_seconds)
            if n % 2 == 0:
                await asyncio.to_thread(workers.start, victim)  # restarted under its own id: recovers its turns
            else:
                adopter = f"w{len(workers.procs)}"
                await asyncio.to_thread(workers.start, adopter, recover=(victim,))
                live[live.index(victim)] = adopter
        outcomes = await asyncio.wait_for(asyncio.gather(*(client.result(h) for h in handles)), _size("TIMEOUT", 290))
        statuses = {await client.status(h) for h in handles}
    finally:
        client.close()
    assert len(killed) >= 2 and workers.kills == kills and down >= outage_seconds
    assert statuses == {"SUCCESS"}
    assert all(o.stop_reason == "end_turn" and o.error is None for o in outcomes)
    await check_sessions(workers, sessions, turns)
    reruns = check_effects(workers, sessions, turns)
    check_turn_order(workers)
    check_worker_limit(workers, 4)
    print(  # the figures of this run (pytest -s shows them)
        f"\nchaos: {sessions * turns} turns, {workers.kills} kills of {len(killed)} workers, "
        f"outage {down:.1f} s, finished calls run again {reruns} (<= kills), {time.monotonic() - began:.0f} s"
    )
