"""Store and context benchmarks (not a test): ``python bench/store_bench.py [postgresql://...]``.

Measures, as medians: append cost at 10 vs 10,000 messages, load of a 10,000-message session,
pruning 10,000 messages, and N sessions written concurrently. Without a PostgreSQL URL only
SQLite is measured.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tooloop.context import ContextPolicy, EstimateCounter
from tooloop.context.strategies import Budget
from tooloop.messages import AssistantMessage, Message, ToolCallMessage, ToolCallStatus, UserMessage
from tooloop.store import BaseStore, open_store


def turn(i: int) -> list[Message]:
    return [
        UserMessage(f"question {i} " + "x" * 200),
        ToolCallMessage(
            tool_name="lookup", tool_call_id=f"c{i}", batch_id=f"b{i}", arguments={"q": i}, content="r" * 300
        ),
        AssistantMessage(f"answer {i} " + "y" * 200),
    ]


async def append_cost(store: BaseStore, session: str, size: int, samples: int = 50) -> float:
    messages = [m for i in range(size // 3 + 1) for m in turn(i)][:size]
    for start in range(0, len(messages), 1000):
        await store.append(session, messages[start : start + 1000])
    times = []
    for i in range(samples):
        started = ToolCallMessage(tool_name="t", tool_call_id=f"s{i}", status=ToolCallStatus.STARTED)
        t0 = time.perf_counter()
        await store.append(session, [started])
        await store.append(session, [ToolCallMessage(tool_name="t", tool_call_id=f"s{i}", content="ok")])
        times.append((time.perf_counter() - t0) / 2)
    return statistics.median(times) * 1000


async def load_time(store: BaseStore, session: str) -> float:
    return statistics.median([await _timed(store.load(session)) for _ in range(7)]) * 1000


async def _timed(awaitable: object) -> float:
    t0 = time.perf_counter()
    await awaitable  # type: ignore[misc]
    return time.perf_counter() - t0


async def concurrent(store: BaseStore, sessions: int, appends: int) -> float:
    async def one(n: int) -> None:
        for i in range(appends):
            await store.append(f"con{n}", turn(i))

    t0 = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(sessions)))
    return sessions * appends / (time.perf_counter() - t0)


def pruning(size: int = 10_000) -> tuple[float, float]:
    messages = [m for i in range(size // 3 + 1) for m in turn(i)][:size]
    policy = ContextPolicy(counter=EstimateCounter())
    budget = Budget(100_000)
    cold = _clock(lambda: policy.prune(messages, budget))
    warm = statistics.median(_clock(lambda: policy.prune(messages, budget)) for _ in range(7))
    return cold * 1000, warm * 1000


def _clock(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


async def bench(url: str, label: str) -> None:
    async with open_store(url) as store:
        small = await append_cost(store, "small", 10)
        large = await append_cost(store, "large", 10_000)
        load = await load_time(store, "large")
        rate = await concurrent(store, 50, 20)
    print(f"{label:10} append@10: {small:.3f} ms  append@10k: {large:.3f} ms  load 10k: {load:.1f} ms  "
          f"50 concurrent sessions: {rate:.0f} appends/s")  # fmt: skip


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await bench(f"sqlite:///{Path(tmp) / 'bench.db'}", "sqlite")
    if len(sys.argv) > 1:
        await bench(sys.argv[1], "postgres")
    cold, warm = pruning()
    print(f"prune 10k messages: {cold:.1f} ms first time, {warm:.1f} ms with cached counts")


asyncio.run(main())
