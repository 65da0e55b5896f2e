"""Many conversations at once: evaluations, data generation and RL rollouts.

``run_many`` runs an agent over items with a bounded number of conversations in flight, appends
each finished conversation to a JSONL results file as it ends, and skips the ids already there
when run again, so a killed batch continues where it stopped. ``processes=`` spreads the work over
one event loop per core; :mod:`tooloop.batch.ray` spreads it over machines.

The finished conversation is the unit of durability: a conversation cut off by a crash runs again
from its start (tools with side effects should use ``ToolContext.idempotency_key``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Sized
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..loop.result import RunResult
from ._items import AgentSource, BatchItem, ItemLike, load_agent_source, pending_items, portable_source
from ._processes import BatchWorkerError, run_processes
from ._progress import BatchSummary, LagMonitor, Tally
from ._results import ResultsFile, exclusive, prepare
from ._rollout import RewardFunction
from ._runner import Finished, run_shard

__all__ = [
    "AgentSource",
    "BatchItem",
    "BatchSummary",
    "BatchWorkerError",
    "ItemLike",
    "RewardFunction",
    "run_many",
    "run_many_sync",
]


async def run_many(
    agent: AgentSource,
    items: Iterable[ItemLike],
    *,
    concurrency: int = 256,
    results: str | os.PathLike[str] | None = None,
    processes: int = 1,
    retry_failed: bool = False,
    progress: bool | None = None,
    on_result: Finished | None = None,
    reward: RewardFunction | None = None,
) -> BatchSummary:
    """Run ``agent`` on every item and return a :class:`BatchSummary`.

    Args:
        agent: An :class:`~tooloop.Agent`, a function returning one, or its import path
            (``"package.module:agent"``). With ``processes > 1`` each process builds its own,
            so pass the import path or a module-level function.
        items: :class:`BatchItem` values, prompts (their id is their position) or mappings with
            ``id``, ``prompt`` and optional ``metadata``. Read lazily with one process.
        concurrency: Conversations in flight per process. One HTTP client keeps about 1,000
            requests in flight (the OpenAI SDK's pool), so above that add processes instead.
        results: A JSONL file; each finished conversation is appended as one line (``id``,
            ``stop_reason``, ``text``, ``usage``, ``error``, ``elapsed_s``, ``metadata``,
            ``transcript``). Ids already in it are skipped: rerun the same call to continue.
        processes: Worker processes (one event loop each; about one per core). Needs ``results``.
        retry_failed: Run again the items whose record has an error (their old records are
            removed first, so every id stays exactly once in the file).
        progress: A progress line on stderr (default: only when stderr is a terminal).
        on_result: Called with each item and its :class:`~tooloop.RunResult` (one process only).
        reward: ``reward(item, result) -> float | dict`` (or a coroutine function): its value is
            each record's ``reward`` (a failure is the record's ``reward_error``; the batch goes
            on). With ``processes > 1`` pass a module-level function (it is pickled). Every
            record also carries ``provenance`` (model, sampling settings, tool set hash, tooloop
            version, seed) and, when the model captured tokens, its ``trajectory``: the shape
            of its branches over the transcript's token ids, which
            :meth:`tooloop.rollouts.Trajectory.from_record` reads back (see docs/rollouts.md).
    """
    _check_options(concurrency, processes, results, on_result)
    if results is None:
        total = len(items) if isinstance(items, Sized) else None
        return await _run_here(
            agent, pending_items(items, {}), None, concurrency, progress, on_result, total, 0, reward
        )
    path = Path(results)
    with exclusive(path):
        done = prepare(path, drop_errors=retry_failed)
        total = len(items) if isinstance(items, Sized) else None
        pending = pending_items(items, done)
        if processes == 1:
            return await _run_here(agent, pending, path, concurrency, progress, on_result, total, len(done), reward)
        return await _run_processes(agent, list(pending), path, concurrency, processes, progress, len(done), reward)


def run_many_sync(agent: AgentSource, items: Iterable[ItemLike], **options: Any) -> BatchSummary:
    """:func:`run_many` for code without an event loop (scripts, notebooks with ``nest``-free kernels)."""
    return asyncio.run(run_many(agent, items, **options))


def _check_options(concurrency: int, processes: int, results: object, on_result: object) -> None:
    for name, value in (("concurrency", concurrency), ("processes", processes)):
        if type(value) is not int or value < 1:
            raise ConfigurationError(f"run_many({name}=...) must be a positive int, got {value!r}")
    if processes > 1 and results is None:
        raise ConfigurationError("run_many(processes>1) needs results='file.jsonl': workers write their records there")
    if processes > 1 and on_result is not None:
        raise ConfigurationError("run_many(on_result=...) works with one process; read the results file instead")


async def _run_here(
    source: AgentSource,
    items: Iterable[BatchItem],
    path: Path | None,
    concurrency: int,
    progress: bool | None,
    on_result: Finished | None,
    total: int | None,
    skipped: int,
    reward: RewardFunction | None = None,
) -> BatchSummary:
    agent = load_agent_source(source)
    tally = Tally(total, skipped, show=progress)

    def finished(item: BatchItem, result: RunResult) -> None:
        tally.add(result.stop_reason.value, result.error is None, result.usage)
        if on_result is not None:
            on_result(item, result)

    monitor = LagMonitor()
    monitor.start()
    results = ResultsFile(path) if path is not None else None
    try:
        await run_shard(agent, items, concurrency=concurrency, results=results, finished=finished, reward=reward)
    finally:
        if results is not None:
            results.close()
        tally.max_lag = await monitor.stop()
    return tally.summary(processes=1)


async def _run_processes(
    source: AgentSource,
    items: list[BatchItem],
    path: Path | None,
    concurrency: int,
    processes: int,
    progress: bool | None,
    skipped: int,
    reward: RewardFunction | None = None,
) -> BatchSummary:
    assert path is not None  # checked by _check_options
    source = portable_source(source)
    shards = [items[n::processes] for n in range(processes)]
    shards = [shard for shard in shards if shard] or [[]]
    tally = Tally(len(items) + skipped, skipped, show=progress)
    await asyncio.to_thread(run_processes, source, shards, path, concurrency, tally, reward)
    return tally.summary(processes=len(shards))
