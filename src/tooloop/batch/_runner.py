"""Running many conversations on one event loop: a fixed number of workers pulling items."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..agent import Agent
from ..loop.result import RunResult
from ..messages import StopReason, UserMessage
from ..transcript import Transcript
from ._items import BatchItem, Feed
from ._results import ResultsFile, record_for
from ._rollout import RewardFunction, extras_for, provenance_of

__all__ = ["Finished", "run_one", "run_shard"]

Finished = Callable[[BatchItem, RunResult], None]
"""Called with each finished conversation, on the event loop's thread."""


async def run_one(agent: Agent, item: BatchItem) -> RunResult:
    """One conversation; every failure becomes a result with ``error`` set, never an exception."""
    try:
        return await agent.run(item.prompt, raise_errors=False)
    except Exception as exc:  # not a tooloop error: still this item's outcome, not the batch's end
        return RunResult(transcript=Transcript([UserMessage(item.prompt)]), stop_reason=StopReason.ERROR, error=exc)


async def run_shard(
    agent: Agent,
    items: Iterable[BatchItem],
    *,
    concurrency: int,
    results: ResultsFile | None,
    finished: Finished,
    reward: RewardFunction | None = None,
) -> None:
    """Run ``items`` with at most ``concurrency`` conversations in flight, recording each as it ends.

    ``concurrency`` workers share one iterator, so a lazy source of a million items is never
    materialised and never more than ``concurrency`` conversations hold memory at once. Records
    carry the trajectory when tokens were captured, ``reward(item, result)`` when given, and the
    batch's provenance.
    """
    feed = Feed(items)
    record = _Recorder(results, reward, provenance_of(agent)) if results is not None else None
    workers = [asyncio.create_task(_worker(agent, feed, record, finished)) for _ in range(concurrency)]
    try:
        await asyncio.gather(*workers)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    feed.raise_error()


class _Recorder:
    """Writes each finished conversation's record, with its training fields."""

    __slots__ = ("provenance", "results", "reward")

    def __init__(self, results: ResultsFile, reward: RewardFunction | None, provenance: dict[str, Any]) -> None:
        self.results = results
        self.reward = reward
        self.provenance = provenance

    async def write(self, item: BatchItem, result: RunResult, elapsed: float) -> None:
        extras = await extras_for(item, result, self.reward, self.provenance)
        self.results.append(record_for(item.id, result, elapsed, item.metadata, extras))


async def _worker(agent: Agent, items: Iterator[BatchItem], record: _Recorder | None, finished: Finished) -> None:
    for item in items:
        start = time.perf_counter()
        result = await run_one(agent, item)
        if record is not None:
            await record.write(item, result, time.perf_counter() - start)
        finished(item, result)
