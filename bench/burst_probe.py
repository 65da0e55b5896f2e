"""What one conversation costs the event loop in a burst, counted: a measure that load does not move.

Runs one contestant of ``bench/providers.py`` (``provider/door``: ``floor``, ``floor_sse``,
``run``, ``stream``) against ``bench/mock_wire.py``, ``--level`` conversations at once (K=1 T=3,
50 ms per request, as the burst phase), or one at a time with ``--level 1``, in a fresh process
per contestant, and counts per conversation what the event loop and the collector did:

* ``wakeups``: turns of the event loop (``_run_once``), and ``ready``: callbacks it ran;
* ``timers``: timer handles scheduled (``call_at``, ``call_later``) and cancelled;
* ``tasks``: tasks created;
* ``reads``: pieces of bytes the streams received (``data_received``), ``writes``: transport writes;
* ``connects``: connections opened (also what the mock sees: it counts no more than the client opens);
* ``gc0/gc1/gc2``: collections of each generation, ``gc_ms``: the time they took.

The counters wrap the loop's methods, so the timings this script prints are not the contestants'
speeds: use ``bench/providers.py --phases burst`` for those.

With ``--alive`` it counts what the full collections scan instead: the tracked objects of the
process after the warm-up (and its modules), and the tracked objects each conversation keeps while
it waits for the model's first, second and third answer (``--level`` conversations waiting at once
on 1 s answers), by type. At a burst the collector runs about once per 700 objects the
conversations keep (a waiting conversation's objects are counted when made, and their freeing
later gives the count nothing back), so these are what the ``gc0`` to ``gc2`` counts follow.

    python bench/burst_probe.py                                    # openai_chat, all four doors
    python bench/burst_probe.py --provider anthropic --doors run,stream --level 1000
    python bench/burst_probe.py --alive --doors floor_sse,run,stream --level 200
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import providers  # noqa: E402


class Counters:
    def __init__(self) -> None:
        self.counts: dict[str, float] = dict.fromkeys(
            ("wakeups", "ready", "timers", "timers_cancelled", "tasks", "reads", "writes", "connects"), 0
        )
        self.counts.update(gc0=0, gc1=0, gc2=0, gc_ms=0.0, gc0_ms=0.0, gc1_ms=0.0, gc2_ms=0.0)
        self._gc_start = 0.0

    def gc_callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
        else:
            spent = (time.process_time() - self._gc_start) * 1e3
            self.counts[f"gc{info['generation']}"] += 1
            self.counts[f"gc{info['generation']}_ms"] += spent
            self.counts["gc_ms"] += spent


def instrument(loop: asyncio.AbstractEventLoop, c: Counters) -> None:
    """Count on ``loop`` (instance attributes shadow its methods) and on the stream classes."""
    counts = c.counts
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted_run_once() -> None:
        counts["wakeups"] += 1
        counts["ready"] += len(loop._ready)  # type: ignore[attr-defined]
        run_once()

    loop._run_once = counted_run_once  # type: ignore[attr-defined]
    call_at = loop.call_at

    def counted_call_at(when: float, callback: Any, *args: Any, context: Any = None) -> asyncio.TimerHandle:
        counts["timers"] += 1
        return call_at(when, callback, *args, context=context)

    loop.call_at = counted_call_at  # type: ignore[method-assign]
    timer_cancelled = loop._timer_handle_cancelled  # type: ignore[attr-defined]

    def counted_cancel(handle: asyncio.TimerHandle) -> None:
        counts["timers_cancelled"] += 1
        timer_cancelled(handle)

    loop._timer_handle_cancelled = counted_cancel  # type: ignore[attr-defined]

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        counts["tasks"] += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)  # type: ignore[arg-type]

    def counting(cls: Any, method: str, key: str) -> None:
        original = getattr(cls, method)

        def counted(self: Any, *args: Any) -> Any:
            counts[key] += 1
            return original(self, *args)

        setattr(cls, method, counted)

    counting(asyncio.StreamReaderProtocol, "data_received", "reads")  # the floors
    counting(asyncio.StreamReaderProtocol, "connection_made", "connects")
    counting(asyncio.StreamWriter, "write", "writes")
    try:  # tooloop's own connections, when its transport has them
        from tooloop.transport.http import Connection
    except ImportError:
        return
    counting(Connection, "data_received", "reads")
    counting(Connection, "connection_made", "connects")
    counting(Connection, "write", "writes")


async def worker(name: str, url: str, level: int, n: int) -> dict[str, float]:
    run, close = providers.build(name, url, "mock-k1-t3-l50")
    want = providers.expected(1, 3)
    for _ in range(3):
        assert want in await run(providers.PROMPT)
    c = Counters()
    instrument(asyncio.get_running_loop(), c)
    gc.callbacks.append(c.gc_callback)
    t0, c0 = time.perf_counter(), time.process_time()
    conversations = 0
    for _ in range(n):
        if level == 1:
            answers = [await run(providers.PROMPT)]
        else:
            answers = await asyncio.gather(*(run(providers.PROMPT) for _ in range(level)))
        assert all(want in a for a in answers)
        conversations += len(answers)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    gc.callbacks.remove(c.gc_callback)
    await close()
    out = {key: value / conversations for key, value in c.counts.items()}
    out["cpu_ms"] = cpu * 1e3 / conversations
    out["wall_s"] = wall
    return out


async def alive_worker(name: str, url: str, level: int) -> dict[str, Any]:
    """The heap after the warm-up, and the tracked objects per waiting conversation at each answer."""
    run, close = providers.build(name, url, "mock-k1-t3-l1000")
    want = providers.expected(1, 3)
    assert want in await run(providers.PROMPT)
    gc.collect()
    heap = gc.get_objects()
    out: dict[str, Any] = {"heap": len(heap), "modules": len(sys.modules)}
    before = collections.Counter(type(o).__name__ for o in heap)
    del heap
    burst = asyncio.gather(*(run(providers.PROMPT) for _ in range(level)))
    waits = []
    for pause in (0.5, 1.0, 1.0):  # within each 1 s wait for an answer, every conversation waiting
        await asyncio.sleep(pause)
        now = collections.Counter(type(o).__name__ for o in gc.get_objects())
        now.subtract(before)
        kept = {kind: round(n / level, 2) for kind, n in now.most_common() if n >= level / 2}
        waits.append({"per_conversation": sum(now.values()) / level, "by_type": kept})
    assert all(want in answer for answer in await burst)
    await close()
    out["waits"] = waits
    return out


def alive(args: argparse.Namespace) -> None:
    mock = providers.Mock(False)
    try:
        for door in args.doors.split(","):
            name = f"{args.provider}/{door}"
            command = [sys.executable, __file__, "--worker", name, "--url", mock.url, "--level", str(args.level)]
            done = subprocess.run(
                [*command, "--alive"], capture_output=True, text=True, timeout=600, check=False, env=os.environ
            )
            if done.returncode:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{name}: {row['heap']:,} tracked objects after the warm-up, {row['modules']} modules")
            for answer, wait in enumerate(row["waits"], 1):
                kinds = ", ".join(f"{n:g} {kind}" for kind, n in wait["by_type"].items())
                print(f"  waiting for answer {answer}: {wait['per_conversation']:.1f} per conversation: {kinds}")
    finally:
        mock.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--provider", default="openai_chat")
    ap.add_argument("--doors", default=",".join(providers.DOORS))
    ap.add_argument("--level", type=int, default=1000)
    ap.add_argument("--n", type=int, help="bursts (or sequential conversations with --level 1); 1 / 50")
    ap.add_argument("--alive", action="store_true", help="count the heap and the objects of waiting conversations")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = args.n or (50 if args.level == 1 else 1)
    if args.worker:
        if args.alive:
            print(json.dumps(asyncio.run(alive_worker(args.worker, args.url, args.level))))
        else:
            print(json.dumps(asyncio.run(worker(args.worker, args.url, args.level, n))))
        return
    if args.alive:
        alive(args)
        return
    mock = providers.Mock(False)
    rows: dict[str, dict[str, float]] = {}
    try:
        for door in args.doors.split(","):
            name = f"{args.provider}/{door}"
            command = [sys.executable, __file__, "--worker", name, "--url", mock.url, "--level", str(args.level)]
            done = subprocess.run(
                [*command, "--n", str(n)], capture_output=True, text=True, timeout=600, check=False, env=os.environ
            )
            if done.returncode:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            rows[door] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        mock.close()
    keys = [k for k in next(iter(rows.values())) if k != "wall_s"]
    what = f"{args.level:,} concurrent" if args.level > 1 else "one at a time"
    print(f"{args.provider}, {what}, K=1 T=3, 50 ms per request: per conversation")
    print(f"{'':18}" + "".join(f"{d:>11}" for d in rows))
    for key in keys:
        print(f"{key:18}" + "".join(f"{rows[d][key]:11.3f}" for d in rows))


if __name__ == "__main__":
    main()
