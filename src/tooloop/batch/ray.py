"""Spread a batch over machines with Ray: async actors running conversations, one writer.

Install with ``pip install "tooloop[ray]"``. Each actor runs many conversations on its own event
loop (``concurrency`` at once); the driver hands out items, keeps ``actors * concurrency`` in
flight and appends every finished conversation to the results file itself, so the file lives on
the driver's machine whatever the cluster looks like, and a rerun skips finished ids as with
:func:`tooloop.batch.run_many`.

With ``servers=[...]`` (base URLs of inference servers) each conversation sticks to one server,
chosen from a stable hash of its id, and to one actor, so every turn of a conversation reaches
the server that already holds its prefix in cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any

import ray

from ..agent import Agent
from ..errors import ConfigurationError
from ..messages import Usage
from ._items import AgentSource, BatchItem, Feed, ItemLike, load_agent_source, pending_items
from ._progress import BatchSummary, LagMonitor, Tally
from ._results import ResultsFile, encode_record, exclusive, prepare, record_for
from ._rollout import RewardFunction, extras_for, provenance_of
from ._runner import run_one

__all__ = ["run_many_ray", "sticky_index"]

ServerAgentSource = Callable[[str], Agent] | str
"""A function building the agent for one server's base URL, or its import path."""

Report = tuple[str, str, bool, Usage]


def sticky_index(item_id: str, count: int) -> int:
    """A stable choice among ``count`` for ``item_id`` (the same in every process and run)."""
    digest = hashlib.blake2b(item_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


class _Rollouts:
    """The actor: builds its agents on first use (one per server) and runs conversations."""

    def __init__(self, source: AgentSource | ServerAgentSource, reward: RewardFunction | None = None):
        self._source = source
        self._reward = reward
        self._agents: dict[str | None, Agent] = {}
        self._provenance: dict[str | None, dict[str, Any]] = {}
        self._monitor: LagMonitor | None = None

    def _agent(self, server: str | None) -> Agent:
        if server not in self._agents:
            if server is not None:
                self._agents[server] = _factory(self._source)(server)
            else:
                self._agents[server] = load_agent_source(self._source)  # type: ignore[arg-type]
        return self._agents[server]

    async def run(self, item: BatchItem, server: str | None) -> Report:
        if self._monitor is None:
            self._monitor = LagMonitor()
            self._monitor.start()
        start = time.perf_counter()
        agent = self._agent(server)
        result = await run_one(agent, item)
        elapsed = time.perf_counter() - start
        if server not in self._provenance:
            self._provenance[server] = provenance_of(agent)
        extras = await extras_for(item, result, self._reward, self._provenance[server])
        line = encode_record(record_for(item.id, result, elapsed, item.metadata, extras)).decode()
        return line, result.stop_reason.value, result.error is None, result.usage

    async def max_lag(self) -> float:
        return self._monitor.max_lag if self._monitor is not None else 0.0


def _factory(source: AgentSource | ServerAgentSource) -> Callable[[str], Agent]:
    value: Any = source
    if isinstance(source, str):
        from ._items import _import

        value = _import(source)
    if not callable(value) or isinstance(value, Agent):
        raise ConfigurationError("with servers=, agent must be a function of the server URL returning an Agent")
    return value  # type: ignore[no-any-return]


async def run_many_ray(
    agent: AgentSource | ServerAgentSource,
    items: Iterable[ItemLike],
    *,
    results: str | Path,
    actors: int = 2,
    concurrency: int = 256,
    servers: Sequence[str] = (),
    retry_failed: bool = False,
    progress: bool | None = None,
    actor_options: Mapping[str, Any] | None = None,
    ray_init: Mapping[str, Any] | None = None,
    reward: RewardFunction | None = None,
) -> BatchSummary:
    """Run ``agent`` on every item across Ray actors; see the module docstring.

    Args:
        agent: As for :func:`~tooloop.batch.run_many` (Ray ships closures too); with ``servers``,
            a function of the server base URL returning the agent for it.
        items: As for :func:`~tooloop.batch.run_many`.
        results: The JSONL results file, written by this process only.
        actors: Async actors to start (about one per core of the cluster).
        concurrency: Conversations in flight per actor.
        servers: Inference server base URLs; each conversation sticks to one of them.
        retry_failed: Run again the items whose record has an error.
        progress: A progress line on stderr (default: only on a terminal).
        actor_options: Passed to ``.options()`` of each actor (``num_cpus``, ``resources``...).
        ray_init: Passed to ``ray.init()`` when Ray is not started yet (then shut down at the end).
        reward: As for :func:`~tooloop.batch.run_many`: each record's ``reward``, computed in the actor.
    """
    for name, value in (("actors", actors), ("concurrency", concurrency)):
        if type(value) is not int or value < 1:
            raise ConfigurationError(f"run_many_ray({name}=...) must be a positive int, got {value!r}")
    path = Path(results)
    with exclusive(path):
        done = prepare(path, drop_errors=retry_failed)
        total = len(items) if isinstance(items, Sized) else None
        pending = pending_items(items, done)
        return await _run(
            (agent, reward),
            pending,
            path,
            actors,
            concurrency,
            servers,
            progress,
            actor_options,
            ray_init,
            (total, len(done)),
        )


async def _run(
    agent: tuple[AgentSource | ServerAgentSource, RewardFunction | None],
    pending: Iterable[BatchItem],
    path: Path,
    actors: int,
    concurrency: int,
    servers: Sequence[str],
    progress: bool | None,
    actor_options: Mapping[str, Any] | None,
    ray_init: Mapping[str, Any] | None,
    counts: tuple[int | None, int],
) -> BatchSummary:
    total, skipped = counts
    started = not ray.is_initialized()
    if started:
        ray.init(**(ray_init or {}))
    try:
        pool = _start_actors(agent, actors, concurrency, actor_options or {})
        tally = Tally(total, skipped, show=progress)
        await _drive(pool, Feed(pending), list(servers), concurrency, ResultsFile(path), tally)
        tally.max_lag = max(await asyncio.gather(*(actor.max_lag.remote() for actor in pool)))
        for actor in pool:
            ray.kill(actor)
        return tally.summary(processes=actors)
    finally:
        if started:
            ray.shutdown()


def _start_actors(
    source: tuple[AgentSource | ServerAgentSource, RewardFunction | None],
    count: int,
    concurrency: int,
    options: Mapping[str, Any],
) -> list[Any]:
    remote = ray.remote(_Rollouts).options(max_concurrency=concurrency, **options)
    return [remote.remote(*source) for _ in range(count)]


async def _drive(
    pool: list[Any], items: Feed, servers: list[str], concurrency: int, out: ResultsFile, tally: Tally
) -> None:
    limit = len(pool) * concurrency
    in_flight: set[asyncio.Future[Report]] = set()
    try:
        for item in items:
            if len(in_flight) >= limit:
                in_flight = _record(*await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED), out, tally)
            server = servers[sticky_index(item.id, len(servers))] if servers else None
            actor = pool[sticky_index(item.id, len(pool))]
            in_flight.add(asyncio.ensure_future(actor.run.remote(item, server)))
        while in_flight:
            in_flight = _record(*await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED), out, tally)
    finally:
        out.close()
    items.raise_error()


def _record(
    done: set[asyncio.Future[Report]], pending: set[asyncio.Future[Report]], out: ResultsFile, tally: Tally
) -> set[asyncio.Future[Report]]:
    for future in done:
        line, stop_reason, ok, usage = future.result()
        out.append_line(line)
        tally.add(stop_reason, ok, usage)
    return pending
