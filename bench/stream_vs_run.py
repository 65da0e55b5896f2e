"""The streaming front door against the plain one, on the shared bench's mock server.

A quick reproduction of the shared bench's concurrency and sequential phases for the two tooloop
contestants only (`bench/peers/tooloop.py`: ``agent.run``, `bench/peers/tooloop_stream.py`:
``agent.stream``): conversations per second, client CPU, peak RSS and the garbage collector's
passes per generation for N concurrent conversations (each trial a fresh process, front doors
interleaved), and client CPU per conversation one at a time. Prints each measure per front door
and the ratio stream / run.

    python bench/stream_vs_run.py                       # 200 and 1000 concurrent, 3 trials each
    python bench/stream_vs_run.py --levels 1000 --trials 1 --seq-n 0
    python bench/stream_vs_run.py --profile stream      # cProfile of 300 sequential conversations
    python bench/stream_vs_run.py --profile stream -c 1000   # ... of 1000 concurrent ones

The mock is the shared bench's ``mock_llm.py`` (found as ``bench/run_peers.sh`` finds it:
``../shared/bench`` from the repo root or from the main checkout, or ``TOOLOOP_SHARED_BENCH``),
run by the bench venv's interpreter (``bench/.work/venv``, it needs ``httptools``) when there is
one, else by this interpreter. The client runs on this interpreter, so it measures the tooloop
that interpreter imports.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PROMPT = "Add some numbers with the add tool, then tell me the total."
DOORS = {"run": "tooloop.py", "stream": "tooloop_stream.py"}


class Calls:
    count = 0


async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    Calls.count += 1
    return a + b


def shared_bench() -> Path:
    """The shared bench folder, looked up as bench/run_peers.sh does."""
    if os.environ.get("TOOLOOP_SHARED_BENCH"):
        return Path(os.environ["TOOLOOP_SHARED_BENCH"])
    common = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--git-common-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    main = (REPO / common).resolve().parent
    for root in (REPO, main):
        if (root.parent / "shared" / "bench" / "mock_llm.py").is_file():
            return root.parent / "shared" / "bench"
    raise SystemExit("shared bench not found at ../shared/bench; set TOOLOOP_SHARED_BENCH")


def server_python(bench: Path) -> str:
    common = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--git-common-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for root in (REPO, (REPO / common).resolve().parent):
        candidate = root / "bench" / ".work" / "venv" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return sys.executable


class Mock:
    """The shared mock in a child process, pinned to the last CPU when there are two or more."""

    def __init__(self) -> None:
        bench = shared_bench()
        cpus = sorted(os.sched_getaffinity(0))
        self.pinned = len(cpus) >= 2
        pre = (lambda: os.sched_setaffinity(0, {cpus[-1]})) if self.pinned else None
        self.proc = subprocess.Popen(
            [server_python(bench), str(bench / "mock_llm.py")], stdout=subprocess.PIPE, text=True, preexec_fn=pre
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline().split()[1])}/v1"
        if self.pinned:
            os.sched_setaffinity(0, set(cpus[:-1]))

    def close(self) -> None:
        self.proc.terminate()  # the server this script started, by its handle
        self.proc.wait(10)


def build(door: str, url: str, model: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"peer_{door}", HERE / "peers" / DOORS[door])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(url, model, add)


def expected(k: int, t: int) -> str:
    return str(sum(10 * r + i + 1 + i + 2 for r in range(t) for i in range(k)))


def peak_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def concurrent(door: str, url: str, n: int) -> dict[str, float]:
    """Inside a fresh process: n concurrent conversations (K=1 T=3, 50 ms per request)."""
    run = build(door, url, "mock-k1-t3-l50")
    assert expected(1, 3) in await run(PROMPT)
    rss0 = peak_mb("VmRSS")
    collections = [generation["collections"] for generation in gc.get_stats()]
    c0, t0 = time.process_time(), time.perf_counter()
    answers = await asyncio.gather(*(run(PROMPT) for _ in range(n)), return_exceptions=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    collections = [after["collections"] - before for after, before in zip(gc.get_stats(), collections, strict=True)]
    failed = [a for a in answers if isinstance(a, BaseException) or expected(1, 3) not in a]
    return {
        "conv_per_s": (n - len(failed)) / wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak_mb("VmHWM"),
        "rss_before_mb": rss0,
        "failed": len(failed),
        # the collector's passes during the burst, youngest generation first: unlike time, load
        # does not move them (a full pass walks every live object)
        "gc_gen0": collections[0],
        "gc_gen1": collections[1],
        "gc_gen2": collections[2],
    }


async def sequential(url: str, k: int, reps: int, n: int) -> dict[str, float]:
    """CPU ms per conversation one at a time (K=k, T=3), both front doors in one process, interleaved."""
    model = f"mock-k{k}-t3"
    runs = {door: build(door, url, model) for door in DOORS}
    for run in runs.values():
        for _ in range(3):
            await run(PROMPT)
    cpus: dict[str, list[float]] = {door: [] for door in DOORS}
    for rep in range(reps):
        for door in DOORS if rep % 2 == 0 else reversed(DOORS):
            gc.collect()
            c0 = time.process_time()
            for _ in range(n):
                assert expected(k, 3) in await runs[door](PROMPT)
            cpus[door].append(1e3 * (time.process_time() - c0) / n)
    return {door: statistics.median(values) for door, values in cpus.items()}


async def profile(door: str, url: str, n: int, k: int, concurrency: int) -> None:
    """cProfile of n conversations, one at a time or ``concurrency`` at once (then 50 ms per request)."""
    run = build(door, url, f"mock-k{k}-t3" + ("-l50" if concurrency > 1 else ""))
    for _ in range(5):
        await run(PROMPT)
    profiler = cProfile.Profile()
    profiler.enable()
    if concurrency > 1:
        n = concurrency
        await asyncio.gather(*(run(PROMPT) for _ in range(n)))
    else:
        for _ in range(n):
            await run(PROMPT)
    profiler.disable()
    stats = pstats.Stats(profiler)
    print(f"{door}: {stats.total_calls / n:.0f} function calls per conversation")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(25)


def trial(door: str, url: str, n: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", door, "--url", url, "--levels", str(n)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode:
        raise RuntimeError(f"worker {door} n={n} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(name: str, values: dict[str, float], higher_is_better: bool = False) -> None:
    run, stream = values["run"], values["stream"]
    ratio = run / stream if higher_is_better else stream / run
    print(f"{name:34} run {run:9.2f}   stream {stream:9.2f}   stream cost / run cost {ratio:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="200,1000", help="concurrent conversations, comma-separated")
    parser.add_argument("--trials", type=int, default=3, help="fresh-process trials per level and front door")
    parser.add_argument("--seq-reps", type=int, default=5)
    parser.add_argument("--seq-n", type=int, default=20, help="conversations per repetition (0: skip)")
    parser.add_argument("--profile", choices=sorted(DOORS), help="cProfile one front door instead")
    parser.add_argument("-k", type=int, default=1, help="--profile: tool calls per turn")
    parser.add_argument("-c", type=int, default=1, help="--profile: conversations at once (1: one at a time)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(concurrent(args.worker, args.url, int(args.levels)))))
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    mock = Mock()
    try:
        if args.profile:
            asyncio.run(profile(args.profile, mock.url, 300, args.k, args.c))
            return
        if args.seq_n:
            for k in (1, 4):
                report(
                    f"CPU ms/conversation K={k} T=3", asyncio.run(sequential(mock.url, k, args.seq_reps, args.seq_n))
                )
        for n in (int(level) for level in args.levels.split(",") if level):
            trials: dict[str, list[dict[str, float]]] = {door: [] for door in DOORS}
            for rep in range(args.trials):
                for door in DOORS if rep % 2 == 0 else reversed(DOORS):
                    trials[door].append(trial(door, mock.url, n))
            measures = ("conv_per_s", True), ("cpu_s", False), ("peak_rss_mb", False)
            for key, better in (*measures, ("gc_gen0", False), ("gc_gen1", False), ("gc_gen2", False)):
                medians = {door: statistics.median(t[key] for t in trials[door]) for door in DOORS}
                report(f"{key} @ {n} concurrent", medians, better)
            failed = {door: sum(t["failed"] for t in trials[door]) for door in DOORS}
            if any(failed.values()):
                print(f"  failed conversations: {failed}")
    finally:
        mock.close()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
