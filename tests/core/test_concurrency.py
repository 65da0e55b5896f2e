"""Tool calls of one response run at once, except sequential tools and capped ones."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

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


class _Peak:
    """Counts calls running at once, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


def test_max_concurrency_holds_across_run_sync_calls_on_several_threads() -> None:
    """Each run_sync has its own event loop: the cap is the process's, not the loop's."""
    sync_peak, async_peak = _Peak(), _Peak()
    all_in = threading.Barrier(3, timeout=30)

    @tool(max_concurrency=1)
    def sync_single(i: int) -> int:
        sync_peak.enter()
        threading.Event().wait(0.05)
        sync_peak.leave()
        return i

    @tool(max_concurrency=1)
    async def async_single(i: int) -> int:
        async_peak.enter()
        await asyncio.sleep(0.05)
        async_peak.leave()
        return i

    def run(name: str) -> None:
        agent = Agent(ScriptedModel([_batch(name, 2), "ok"]), tools=[sync_single, async_single])
        all_in.wait()
        assert agent.run_sync("go").text == "ok"

    for name in ("sync_single", "async_single"):
        threads = [threading.Thread(target=run, args=(name,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sync_peak.peak == 1 and async_peak.peak == 1
    assert sync_peak.running == 0 and async_peak.running == 0


async def test_a_timed_out_sync_tool_keeps_its_max_concurrency_slot_until_its_thread_ends() -> None:
    peak, gate = _Peak(), threading.Event()
    entered: list[int] = []

    @tool(max_concurrency=1, timeout=0.2)
    def capped(i: int) -> int:
        peak.enter()
        entered.append(i)
        if len(entered) == 1:
            gate.wait(30)  # the first call overruns its timeout
        peak.leave()
        return i

    def open_gate_later(context: object) -> None:
        if not gate.is_set():
            threading.Timer(1.0, gate.set).start()  # long after the old code let call 2 in

    from tooloop import Hooks

    agent = Agent(
        ScriptedModel([_batch("capped", 2), "ok"]), tools=[capped], hooks=Hooks(after_tool_call=open_gate_later)
    )
    result = await agent.run("go")
    assert peak.peak == 1
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.ERROR, ToolCallStatus.OK]
    assert "did not finish within 0.2 seconds" in result.tool_calls[0].content


async def test_a_timed_out_sync_tool_keeps_the_sequential_barrier_until_its_thread_ends() -> None:
    peak, gate = _Peak(), threading.Event()
    order: list[str] = []

    @tool(timeout=0.2)
    def overrun() -> str:
        peak.enter()
        order.append("overrun starts")
        gate.wait(30)
        order.append("overrun ends")
        peak.leave()
        return "late"

    @tool(sequential=True, timeout=0.2)
    def overrun_alone() -> str:
        peak.enter()
        order.append("alone starts")
        gate.wait(30)
        order.append("alone ends")
        peak.leave()
        return "late"

    @tool(sequential=True)
    def alone() -> str:
        peak.enter()
        order.append("alone")
        peak.leave()
        return "alone"

    @tool
    def after() -> str:
        peak.enter()
        order.append("after")
        peak.leave()
        return "after"

    def open_gate_later(context: object) -> None:
        if not gate.is_set():
            threading.Timer(1.0, gate.set).start()

    from tooloop import Hooks

    calls = [ToolCall("o", "overrun", {}), ToolCall("s", "alone", {})]
    model = ScriptedModel([ModelResponse(tool_calls=calls), "ok"])
    agent = Agent(model, tools=[overrun, alone], hooks=Hooks(after_tool_call=open_gate_later))
    await agent.run("go")
    assert order == ["overrun starts", "overrun ends", "alone"] and peak.peak == 1

    gate.clear()
    order.clear()
    calls = [ToolCall("s", "overrun_alone", {}), ToolCall("a", "after", {})]
    model = ScriptedModel([ModelResponse(tool_calls=calls), "ok"])
    agent = Agent(model, tools=[overrun_alone, after], hooks=Hooks(after_tool_call=open_gate_later))
    await agent.run("go")
    assert order == ["alone starts", "alone ends", "after"] and peak.peak == 1


async def test_abandoned_sync_threads_never_starve_other_sync_tools() -> None:
    gate = threading.Event()

    @tool(timeout=3)  # long enough for every pool thread of the old design to take a hanging call
    def hang(i: int) -> int:
        gate.wait(60)
        return i

    @tool(timeout=10)
    def quick() -> str:
        return "quick"

    from tooloop import Limits

    hung = [ToolCall(f"h{i}", "hang", {"i": i}) for i in range(80)]  # more than any fixed pool
    model = ScriptedModel(
        [ModelResponse(tool_calls=hung), ModelResponse(tool_calls=[ToolCall("q", "quick", {})]), "ok"]
    )
    agent = Agent(model, tools=[hang, quick], limits=Limits(max_tool_calls_per_turn=100))
    try:
        result = await agent.run("go")
    finally:
        gate.set()
    assert [c.status for c in result.tool_calls[:80]] == [ToolCallStatus.ERROR] * 80
    assert result.tool_calls[80].status is ToolCallStatus.OK


def test_a_hung_sync_tool_never_blocks_interpreter_exit(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading
            from tooloop import Agent, ModelResponse, ToolCall, tool
            from tooloop.testing import ScriptedModel

            @tool(timeout=0.2)
            def hang() -> str:
                threading.Event().wait()   # never returns
                return "never"

            model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("h", "hang", {})]), "gave up"])
            print(Agent(model, tools=[hang]).run_sync("go").text, flush=True)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gave up"
