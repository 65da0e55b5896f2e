"""Token capture's cost (not a test): ``python bench/rollout_capture.py [--items N] [--turns T] [--ids]``.

Runs the same batch (model -> ``lookup`` tool, ``T`` times, -> answer, through the real
OpenAI-compatible adapter) against ``tooloop.testing.token_server`` in its own process, with
``capture_tokens`` off and on, and prints each run's client CPU time, peak RSS and results file
size, in two ways: records written to a results file, and results kept in memory (every
``RunResult`` held until the end, as a trainer collecting a group does). Each run is a fresh
process, so its peak RSS is its own. The server shares the machine: compare CPU, not wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src")]


def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def _serve(turns: int, queue: Any) -> None:
    from tooloop.testing.token_server import Sample, TokenServer

    def policy(messages: list[dict[str, Any]], _: int) -> Sample:
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < turns:
            return Sample(text="let me look", calls=(("lookup", {"key": f"{messages[0]['content']} {done}"}),))
        return Sample(text=f"answer: {messages[-1]['content']}")

    async def main() -> None:
        server = TokenServer(policy)
        await server.start()
        queue.put(server.url)
        await asyncio.Event().wait()

    asyncio.run(main())


def client(url: str, capture: bool | str, items: int, keep: bool, concurrency: int) -> dict[str, Any]:
    """One batch in this process; what it cost."""
    from tooloop import Agent
    from tooloop.batch import BatchItem, run_many
    from tooloop.models import get_model

    agent = Agent(get_model("vllm:toy", base_url=url, capture_tokens=capture), tools=[lookup])
    kept: list[Any] = []
    batch = [BatchItem(f"i{i}", f"key number {i} " * 4) for i in range(items)]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.jsonl"
        wall, cpu = time.perf_counter(), time.process_time()
        summary = asyncio.run(
            run_many(
                agent,
                batch,
                results=None if keep else out,
                concurrency=concurrency,
                on_result=(lambda _, result: kept.append(result)) if keep else None,
            )
        )
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        size = 0 if keep else out.stat().st_size
    return {
        "capture": capture,
        "kept": "memory" if keep else "file",
        "errors": summary.errors,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "results_mb": round(size / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000, help="conversations per batch (default 10,000)")
    parser.add_argument("--turns", type=int, default=1, help="tool rounds per conversation (default 1)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each configuration (default 3)")
    parser.add_argument("--ids", action="store_true", help='capture with capture_tokens="ids" (no logprobs)')
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        url, capture, keep = args.client.split(",")
        mode: bool | str = "ids" if capture == "ids" else capture == "1"
        print(json.dumps(client(url, mode, args.items, keep == "1", args.concurrency)))
        return
    queue: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(args.turns, queue), daemon=True)
    server.start()
    url = queue.get(timeout=60)
    print(f"{args.items} conversations, {args.turns} tool round(s) each, concurrency {args.concurrency}")
    rows: list[dict[str, Any]] = []
    try:
        for keep in ("0", "1"):
            for _ in range(args.repeat):
                for capture in ("0", "ids" if args.ids else "1"):
                    command = [sys.executable, __file__, "--client", f"{url},{capture},{keep}"]
                    command += ["--items", str(args.items), "--concurrency", str(args.concurrency)]
                    line = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                    rows.append(json.loads(line))
                    if rows[-1]["errors"]:
                        raise SystemExit(f"the batch had errors: {line}")
                    print("  " + line.strip(), flush=True)
    finally:
        server.terminate()
    for kept in ("file", "memory"):
        off = [r for r in rows if r["kept"] == kept and not r["capture"]]
        on = [r for r in rows if r["kept"] == kept and r["capture"]]
        cpu_off, cpu_on = (statistics.median(r["cpu_s"] for r in rs) for rs in (off, on))
        rss_off, rss_on = (statistics.median(r["peak_rss_mb"] for r in rs) for rs in (off, on))
        print(
            f"{kept}: client CPU {cpu_off:.2f} s off, {cpu_on:.2f} s on (x{cpu_on / cpu_off:.2f}); "
            f"peak RSS {rss_off:.1f} MB off, {rss_on:.1f} MB on (x{rss_on / rss_off:.2f}); medians of {len(on)} runs"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
