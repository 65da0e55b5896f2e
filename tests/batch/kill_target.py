"""A batch to kill: ``python -m tests.batch.kill_target OUT.jsonl N PROCESSES``."""

from __future__ import annotations

import asyncio
import sys

from tooloop.batch import BatchItem, run_many


def main() -> None:
    out, count, processes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    items = [BatchItem(f"item-{i}", f"key{i}") for i in range(count)]
    summary = asyncio.run(
        run_many("tests.batch.agents:offline_agent", items, concurrency=50, results=out, processes=processes)
    )
    print(summary, flush=True)


if __name__ == "__main__":
    main()
