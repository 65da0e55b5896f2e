"""Instructions per ``run_many`` record written, capture off and on, counted by valgrind (not a test).

    python bench/record_instructions.py [-n 100]            # writing a record: trajectory, transcript, encoding
    python bench/record_instructions.py -n 100 --batch      # a whole conversation of the batch, record included

The conversations of ``bench/rollout_capture.py`` (one ``lookup`` round through the real
OpenAI-compatible adapter against ``tooloop.testing.token_server``) run in a client under
callgrind, which counts the instructions between two marks (``os.sched_yield()`` calls, as in
``bench/instructions.py``): by default only the writing of each finished conversation's record
(``extras_for``, ``record_for``, ``encode_record``, as ``run_many`` does it), after the
conversations have run; with ``--batch`` a whole ``run_many`` with a results file, divided by its
conversations. Load does not move these counts (they repeat within about 1%), so they compare
before and after on a busy machine where CPU seconds do not. Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

import rollout_capture  # noqa: E402
from _callgrind import counted  # noqa: E402

WARM = 20


def _worker(url: str, capture: bool, n: int, batch: bool) -> None:
    from tooloop import Agent
    from tooloop.batch import BatchItem, run_many
    from tooloop.batch._results import encode_record, record_for
    from tooloop.batch._rollout import extras_for, provenance_of
    from tooloop.models import get_model

    agent = Agent(get_model("vllm:toy", base_url=url, capture_tokens=capture), tools=[rollout_capture.lookup])
    items = [BatchItem(f"i{i}", f"key number {i} " * 4) for i in range(n + WARM)]
    kept: list[tuple[Any, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        if batch:
            asyncio.run(run_many(agent, items[:WARM], concurrency=16, results=Path(folder) / "warm.jsonl"))
            os.sched_yield()
            asyncio.run(run_many(agent, items[WARM:], concurrency=64, results=Path(folder) / "out.jsonl"))
            os.sched_yield()
            size = (Path(folder) / "out.jsonl").stat().st_size
            print(json.dumps({"bytes_per_record": round(size / n)}))
            return
    asyncio.run(run_many(agent, items, concurrency=16, on_result=lambda item, result: kept.append((item, result))))
    provenance = provenance_of(agent)

    async def write(pairs: list[tuple[Any, Any]]) -> int:
        size = 0
        for item, result in pairs:
            extras = await extras_for(item, result, None, provenance)
            size += len(encode_record(record_for(item.id, result, 0.1, item.metadata, extras)))
        return size

    asyncio.run(write(kept[:WARM]))
    os.sched_yield()  # the mark where valgrind starts the counted part
    size = asyncio.run(write(kept[WARM:]))
    os.sched_yield()  # and where it ends it
    print(json.dumps({"bytes_per_record": round(size / n)}))


def _count(url: str, capture: bool, n: int, batch: bool) -> tuple[float, int]:
    command = [sys.executable, __file__, "--worker", f"{url},{int(capture)}", "-n", str(n)]
    if batch:
        command.append("--batch")
    total, stdout = counted(command)
    return total / n, json.loads(stdout.strip().splitlines()[-1])["bytes_per_record"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100, help="records (conversations) counted")
    parser.add_argument("--batch", action="store_true", help="count whole conversations of a run_many")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, capture = args.worker.split(",")
        _worker(url, capture == "1", args.n, args.batch)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    queue: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=rollout_capture._serve, args=(1, queue), daemon=True)
    server.start()
    try:
        url = queue.get(timeout=60)
        what = "per conversation of a batch (record included)" if args.batch else "per record written"
        counts = {capture: _count(url, capture, args.n, args.batch) for capture in (False, True)}
    finally:
        server.terminate()
    (off, off_bytes), (on, on_bytes) = counts[False], counts[True]
    print(f"instructions {what}, {args.n} conversations: off {off / 1e6:.3f} M, on {on / 1e6:.3f} M (x{on / off:.2f})")
    print(f"bytes per record: off {off_bytes}, on {on_bytes} (x{on_bytes / off_bytes:.1f})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
