"""Tool calls of one response run at once, except sequential tools and capped ones."""

from __future__ import annotations

import asyncio
import threading

from tooloop import Agent, ModelResponse, ToolCall, ToolCallStatus, tool
from tooloop.testing import ScriptedModel


def _batch(name: str, n: int) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(f"c{i}", name, {"i": i}) for i in range(n)])


async def test_four_async_calls_are_in_flight_at_once() -> None:
    running = 0
    all_in = asyncio.Event()

    @tool
    async def wait_for_all(i: int) -> int:
        nonlocal running
        running += 1
        if running == 4:
            all_in.set()
        await all_in.wait()  # only releases when four are running together
        return i

    agent = Agent(ScriptedModel([_batch("wait_for_all", 4), "done"]), tools=[wait_for_all])
    result = await asyncio.wait_for(agent.run("go"), 10)
    assert [c.result for c in result.tool_calls] == [0, 1, 2, 3]
    assert running == 4


async def test_sync_tools_run_concurrently_in_threads() -> None:
    barrier = threading.Barrier(4, timeout=10)

    @tool
    def meet(i: int) -> int:
        barrier.wait()  # raises BrokenBarrierError unless four threads arrive together
        return i

    result = await Agent(ScriptedModel([_batch("meet", 4), "done"]), tools=[meet]).run("go")
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK] * 4
    assert [c.result for c in result.tool_calls] == [0, 1, 2, 3]


async def test_sequential_tool_runs_alone() -> None:
    active: set[str] = set()
    overlaps: list[tuple[str, frozenset[str]]] = []
    order: list[str] = []

    async def step(name: str) -> None:
        if active:
            overlaps.append((name, frozenset(active)))
        active.add(name)
        order.append(name)
        for _ in range(5):
            await asyncio.sleep(0)
            if name == "write" and active - {name}:
                overlaps.append((name, frozenset(active)))
        active.discard(name)

    @tool
    async def read(i: int) -> str:
        await step(f"read{i}")
        return "r"

    @tool(sequential=True)
    async def write(i: int) -> str:
        await step("write")
        return "w"

    calls = [
        ToolCall("a", "read", {"i": 1}),
        ToolCall("b", "read", {"i": 2}),
        ToolCall("w", "write", {"i": 0}),
        ToolCall("c", "read", {"i": 3}),
        ToolCall("d", "read", {"i": 4}),
    ]
    result = await Agent(ScriptedModel([ModelResponse(tool_calls=calls), "ok"]), tools=[read, write]).run("go")
    assert [c.tool_call_id for c in result.tool_calls] == ["a", "b", "w", "c", "d"]
    assert all(c.ok for c in result.tool_calls)
    # the write never shared time with a read; reads around it did overlap each other
    assert not [o for o in overlaps if o[0] == "write" or "write" in o[1]]
    assert order.index("write") == 2
    assert any(o[0] in ("read2", "read4") for o in overlaps)


async def test_max_concurrency_caps_a_tool() -> None:
    running = 0
    peak = 0

    @tool(max_concurrency=1)
    async def single(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await asyncio.sleep(0)
        running -= 1
        return i * 10

    @tool
    async def free(i: int) -> int:
        return i

    calls = [ToolCall(f"s{i}", "single", {"i": i}) for i in range(4)] + [ToolCall("f", "free", {"i": 9})]
    agent = Agent(ScriptedModel([ModelResponse(tool_calls=calls), "ok"]), tools=[single, free])
    result = await agent.run("go")
    assert peak == 1
    assert [c.result for c in result.tool_calls] == [0, 10, 20, 30, 9]


async def test_max_concurrency_holds_across_runs() -> None:
    running = 0
    peak = 0

    @tool(max_concurrency=2)
    async def shared(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await asyncio.sleep(0)
        running -= 1
        return i

    def agent() -> Agent:
        return Agent(ScriptedModel([_batch("shared", 3), "ok"]), tools=[shared])

    results = await asyncio.gather(agent().run("a"), agent().run("b"), agent().run("c"))
    assert peak == 2
    assert all([c.result for c in r.tool_calls] == [0, 1, 2] for r in results)
