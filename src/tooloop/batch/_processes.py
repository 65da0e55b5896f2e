"""Spreading a batch over worker processes of one host, one event loop each.

Each worker appends its records to the shared results file itself (one ``write`` per line, see
``_results``) and reports a small tally per conversation to the parent over a queue. A worker
whose parent dies (killed, crashed) exits within a second, so a rerun never races an orphan.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import traceback
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, ToolloopError
from ..loop.result import RunResult
from ._items import AgentSource, BatchItem, load_agent_source
from ._progress import LagMonitor, Tally
from ._results import ResultsFile
from ._rollout import RewardFunction
from ._runner import run_shard

__all__ = ["BatchWorkerError", "run_processes"]


class BatchWorkerError(ToolloopError):
    """A worker process of a batch died; the records it wrote are kept and a rerun continues."""


def run_processes(
    source: AgentSource,
    shards: Sequence[list[BatchItem]],
    path: Path,
    concurrency: int,
    tally: Tally,
    reward: RewardFunction | None = None,
) -> None:
    """Run each shard in its own process and fold their reports into ``tally`` (blocking)."""
    context = multiprocessing.get_context("spawn")
    reports: Any = context.Queue()
    workers = [
        context.Process(
            target=_worker_main,
            args=(source, shard, str(path), concurrency, reports, os.getpid(), reward),
            name=f"tooloop-batch-{n}",
            daemon=True,
        )
        for n, shard in enumerate(shards)
    ]
    for worker in workers:
        worker.start()
    try:
        _collect(workers, reports, tally)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()


def _collect(workers: Sequence[BaseProcess], reports: Any, tally: Tally) -> None:
    running = len(workers)
    while running:
        try:
            message = reports.get(timeout=0.5)
        except queue.Empty:
            _check_alive(workers)
            continue
        kind = message[0]
        if kind == "item":
            tally.add(message[1], message[2], message[3])
        elif kind == "end":
            tally.max_lag = max(tally.max_lag, message[1])
            running -= 1
        else:
            raise ConfigurationError(message[1]) if kind == "config" else BatchWorkerError(message[1])


def _check_alive(workers: Sequence[BaseProcess]) -> None:
    for worker in workers:
        if worker.exitcode not in (None, 0):
            raise BatchWorkerError(
                f"batch worker {worker.name} exited with code {worker.exitcode}; "
                "its finished conversations are in the results file and a rerun continues the rest"
            )


def _worker_main(
    source: AgentSource,
    items: list[BatchItem],
    path: str,
    concurrency: int,
    reports: Any,
    parent: int,
    reward: RewardFunction | None = None,
) -> None:
    try:
        agent = load_agent_source(source)
    except ConfigurationError as exc:
        reports.put(("config", str(exc)))
        return
    try:
        lag = asyncio.run(_worker_loop(agent, items, Path(path), concurrency, reports, parent, reward))
    except BaseException:
        reports.put(("crash", traceback.format_exc()))
        raise
    reports.put(("end", lag))


async def _worker_loop(
    agent: Any,
    items: list[BatchItem],
    path: Path,
    concurrency: int,
    reports: Any,
    parent: int,
    reward: RewardFunction | None = None,
) -> float:
    from ..transport.perloop import close_loop_clients

    monitor = LagMonitor()
    monitor.start()
    orphan_watch = asyncio.create_task(_exit_when_orphaned(parent))
    results = ResultsFile(path)

    def finished(item: BatchItem, result: RunResult) -> None:
        reports.put(("item", result.stop_reason.value, result.error is None, result.usage))

    try:
        await run_shard(agent, items, concurrency=concurrency, results=results, finished=finished, reward=reward)
    finally:
        results.close()
        orphan_watch.cancel()
        await close_loop_clients()
    return await monitor.stop()


async def _exit_when_orphaned(parent: int) -> None:
    while True:
        await asyncio.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)  # the parent is gone: stop before a rerun starts next to us
