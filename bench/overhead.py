"""What the tooloop loop itself costs per model turn, with no provider and no network.

A zero-latency ``tooloop.testing.FunctionModel`` asks for K parallel calls of an async ``add``
tool on each of T turns, then answers. Everything measured is the loop: building requests,
parsing and validating arguments, running tools, recording the transcript, events.

    python bench/overhead.py                      # the full table (~1 min)
    python bench/overhead.py --quick              # fewer repetitions
    python bench/overhead.py --profile run        # cProfile of run() at K=4, T=3 (or conversation, stream)
    python bench/overhead.py --only turns,history,imports
    python bench/overhead.py --trace              # the same with OpenTelemetry tracing every run

Sections:
  turns     CPU and wall µs per model turn for run(), conversation(), stream() and a minimal
            hand-written loop on the same model ("bare"), K=1 and K=4, T=3; medians over reps.
  history   marginal cost of one more turn with 10, 1,000 and 10,000 messages of history
            ((time of a 12-turn run - time of a 2-turn run) / 10), and the per-run fixed cost.
  imports   `python -X importtime -c "import tooloop"`: total and the largest modules, plus
            the wall time of `import tooloop` minus a bare interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # measure this checkout

from tooloop import (  # noqa: E402
    Agent,
    Message,
    ModelRequest,
    ModelResponse,
    RunFinished,
    ToolCall,
    ToolCallMessage,
    Transcript,
    UserMessage,
)
from tooloop.testing import FunctionModel  # noqa: E402

Conversation = Callable[[], Awaitable[str]]


async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


class Script:
    """A model function: K calls per turn for T turns, then the total. O(1) per request."""

    def __init__(self, k: int, t: int):
        self.t = t
        self.turn = 0
        self.replies = [
            ModelResponse(
                tool_calls=[
                    ToolCall(f"call_{r}_{i}", "add", f'{{"a": {10 * r + i + 1}, "b": {i + 2}}}') for i in range(k)
                ]
            )
            for r in range(t)
        ]
        self.answer = ModelResponse("The total is " + str(sum(10 * r + 2 * i + 3 for r in range(t) for i in range(k))))

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if self.turn < self.t:
            self.turn += 1
            return self.replies[self.turn - 1]
        self.turn = 0
        return self.answer


def contestants(k: int, t: int, history: Transcript | None = None) -> dict[str, Conversation]:
    """One conversation per call for each front door, plus the bare floor."""
    script = Script(k, t)
    model = FunctionModel(script)
    agent = Agent(model, tools=[add])

    async def run() -> str:
        model.requests.clear()
        return (await agent.run("add", history=history)).text

    async def conversation() -> str:
        model.requests.clear()
        conv = agent.conversation("add", history=history)
        async for _ in conv:
            pass
        assert conv.result is not None
        return conv.result.text

    async def stream() -> str:
        model.requests.clear()
        async for event in agent.stream("add", history=history):
            if isinstance(event, RunFinished):
                return event.result.text
        raise AssertionError("no RunFinished")

    bare_script = Script(k, t)
    bare_model = FunctionModel(bare_script)
    tools = agent.tools
    definitions = tuple(x.definition for x in tools)
    functions = {x.name: x.function for x in tools}

    async def bare() -> str:
        """The floor: what any loop must do with this model (request, parse, call, remember)."""
        bare_model.requests.clear()
        messages: list[object] = [*(history or ()), UserMessage("add")]
        while True:
            response = await bare_model.respond(ModelRequest(messages, definitions))  # type: ignore[arg-type]
            if not response.tool_calls:
                return response.text
            calls = response.tool_calls
            results = await asyncio.gather(*(functions[c.name](**json.loads(c.arguments)) for c in calls))  # type: ignore[arg-type]
            messages.append(response)
            messages.extend(results)

    return {"bare": bare, "run": run, "conversation": conversation, "stream": stream}


def measure(fn: Conversation, reps: int, n: int) -> tuple[float, float]:
    """Median CPU and wall seconds per conversation over ``reps`` batches of ``n``."""

    async def go() -> tuple[float, float]:
        for _ in range(5):
            await fn()
        cpus, walls = [], []
        for _ in range(reps):
            gc.collect()
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                await fn()
            cpus.append((time.process_time() - c0) / n)
            walls.append((time.perf_counter() - w0) / n)
        return statistics.median(cpus), statistics.median(walls)

    return asyncio.run(go())


def section_turns(reps: int, n: int) -> None:
    print("\n## Per model turn (T=3 tool turns + 1 answer = 4 requests per conversation)\n")
    print("| front door | K | CPU µs/turn | wall µs/turn | CPU µs/conversation | x bare |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in (1, 4):
        t = 3
        floor = None
        for name, fn in contestants(k, t).items():
            cpu, wall = measure(fn, reps, n)
            floor = floor or cpu
            turns = t + 1
            cells = f"{1e6 * cpu / turns:.0f} | {1e6 * wall / turns:.0f} | {1e6 * cpu:.0f} | {cpu / floor:.1f}x"
            print(f"| {name} | {k} | {cells} |")


def history_of(size: int) -> Transcript:
    """A finished conversation of ``size`` messages (user, one call, answer, repeated)."""
    messages: list[Message] = []
    agent = Agent(FunctionModel(Script(1, 1)), tools=[add])
    transcript = asyncio.run(agent.run("add")).transcript
    while len(messages) < size:
        n = len(messages)
        messages.extend(
            replace(m, tool_call_id=f"call_{n}", batch_id=f"batch_{n}") if isinstance(m, ToolCallMessage) else m
            for m in transcript
        )
    return Transcript(messages[:size])


def section_history(reps: int, n: int) -> None:
    print("\n## Cost of one more turn vs history length (K=1; (12-turn run - 2-turn run) / 10)\n")
    print("| front door | history msgs | CPU µs/extra turn | CPU µs per run, fixed (2-turn run - 2 turns) |")
    print("|---|---:|---:|---:|")
    for door in ("run", "conversation", "stream"):
        for size in (10, 1_000, 10_000):
            history = history_of(size)
            short, _ = measure(contestants(1, 1, history)[door], reps, n)
            long, _ = measure(contestants(1, 11, history)[door], reps, n)
            per_turn = (long - short) / 10
            print(f"| {door} | {size:,} | {1e6 * per_turn:.0f} | {1e6 * (short - 2 * per_turn):.0f} |")


def section_imports(reps: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    exe = sys.executable

    def wall(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([exe, "-c", code], env=env, check=True)
        return time.perf_counter() - t0

    wall("import tooloop")
    bare = statistics.median(wall("pass") for _ in range(reps))
    full = statistics.median(wall("import tooloop") for _ in range(reps))
    totals: list[float] = []
    rows: list[tuple[int, int, str]] = []
    for _ in range(reps):
        err = subprocess.run(
            [exe, "-X", "importtime", "-c", "import tooloop"], env=env, check=True, capture_output=True, text=True
        ).stderr
        rows = []
        for line in err.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if m:
                rows.append((int(m.group(1)), int(m.group(2)), m.group(4)))
        totals.append(next(c for s, c, name in rows if name == "tooloop") / 1e3)
    print("\n## Import time\n")
    print(f"`import tooloop`: {1e3 * (full - bare):.0f} ms wall over a bare interpreter (median of {reps}); ")
    print(f"`-X importtime` cumulative for tooloop: {statistics.median(totals):.0f} ms (median of {reps}).\n")
    print("Largest modules by self time (last run):\n")
    print("| module | self ms | cumulative ms |")
    print("|---|---:|---:|")
    for own, cumulative, name in sorted(rows, reverse=True)[:12]:
        print(f"| {name} | {own / 1e3:.1f} | {cumulative / 1e3:.1f} |")
    heavy = {"pydantic", "openai", "httpx", "anthropic", "google", "docstring_parser", "logging", "ssl"}
    loaded = sorted({name.split(".")[0] for _, _, name in rows} & heavy)
    print(f"\nOf {', '.join(sorted(heavy))} it imports: {loaded or 'none'}")


def profile(door: str, k: int, t: int, n: int) -> None:
    fn = contestants(k, t)[door]

    async def go() -> None:
        for _ in range(n):
            await fn()

    asyncio.run(go())  # warm
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(go())
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(30)


def trace_everything() -> None:
    """Every run makes its spans on a real SDK tracer provider, which exports them nowhere."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    from tooloop.telemetry import instrument

    instrument(tracer_provider=provider)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="turns,history,imports")
    ap.add_argument("--profile", choices=["run", "conversation", "stream", "bare"])
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument(
        "--trace", action="store_true", help="trace every run with OpenTelemetry (SDK provider, spans dropped)"
    )
    args = ap.parse_args()
    reps, n = (5, 50) if args.quick else (15, 200)
    if args.trace:
        trace_everything()
    if args.profile:
        profile(args.profile, args.k, 3, 2000)
        return
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; medians of {reps} repetitions x {n} conversations")
    only = args.only.split(",")
    if "turns" in only:
        section_turns(reps, n)
    if "history" in only:
        section_history(reps, max(10, n // 4))
    if "imports" in only:
        section_imports(9 if not args.quick else 3)


if __name__ == "__main__":
    main()
