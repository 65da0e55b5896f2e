"""Running many conversations on one event loop: a fixed number of workers pulling items."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator

from ..agent import Agent
from ..loop.result import RunResult
from ..messages import StopReason, UserMessage
from ..transcript import Transcript
from ._items import BatchItem, Feed
from ._results import ResultsFile, record_for

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
) -> None:
    """Run ``items`` with at most ``concurrency`` conversations in flight, recording each as it ends.

    ``concurrency`` workers share one iterator, so a lazy source of a million items is never
    materialised and never more than ``concurrency`` conversations hold memory at once.
    """
    feed = Feed(items)
    workers = [asyncio.create_task(_worker(agent, feed, results, finished)) for _ in range(concurrency)]
    try:
        await asyncio.gather(*workers)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    feed.raise_error()


async def _worker(agent: Agent, items: Iterator[BatchItem], results: ResultsFile | None, finished: Finished) -> None:
    for item in items:
        start = time.perf_counter()
        result = await run_one(agent, item)
        if results is not None:
            results.append(record_for(item.id, result, time.perf_counter() - start, item.metadata))
        finished(item, result)
