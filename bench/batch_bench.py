"""Batch throughput (not a test): ``python bench/batch_bench.py [--items N] [--latency S] [--ray]``.

Runs the same batch (model -> ``lookup`` tool -> model -> answer, through the real
OpenAI-compatible adapter) against a rollout server on 127.0.0.1 in its own process, with one
process, two processes and, with ``--ray``, two Ray actors, and prints conversations per second
and the largest event-loop lag of each. The server shares the machine, so on a 2-core box the
figures are a lower bound of what separate machines give.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tooloop.batch import BatchItem, BatchSummary, run_many  # noqa: E402


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.rollout_server", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


async def one(label: str, items: list[BatchItem], concurrency: int, **options: object) -> BatchSummary:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.jsonl"
        if options.pop("ray", False):
            from tooloop.batch.ray import run_many_ray

            ray_init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
            started = time.perf_counter()
            summary = await run_many_ray(
                "tests.batch.agents:server_agent",
                items,
                results=out,
                concurrency=concurrency,
                ray_init=ray_init,
                actors=2,
            )
            print(f"  (ray start-up included: {time.perf_counter() - started:.1f} s wall)")
        else:
            summary = await run_many(
                "tests.batch.agents:server_agent", items, concurrency=concurrency, results=out, **options
            )
    lag = summary.max_loop_lag_s * 1000
    rate = summary.conversations_per_second
    print(f"{label:<16} {rate:8.1f} conv/s   max loop lag {lag:5.0f} ms   errors {summary.errors}")
    return summary


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--latency", type=float, default=0.0, help="server latency per request, seconds")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--ray", action="store_true", help="also run two Ray actors (needs tooloop[ray])")
    options = parser.parse_args()
    server, url = start_server(options.latency)
    os.environ["ROLLOUT_URL"] = url
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{ROOT / 'src'}"
    items = [BatchItem(f"item-{i}", f"key{i}") for i in range(options.items)]
    print(f"{options.items} conversations (2 model requests + 1 tool call each), concurrency {options.concurrency}")
    try:
        await one("1 process", items, options.concurrency)
        await one("2 processes", items, options.concurrency, processes=2)
        if options.ray:
            await one("2 Ray actors", items, options.concurrency, ray=True)
    finally:
        server.terminate()


if __name__ == "__main__":
    asyncio.run(main())
