"""Regression guard: tooloop against the floor, in one run, on the shared mock LLM server.

Starts the shared bench's ``mock_llm.py`` as a subprocess (pinned to its own CPU when there are
two or more), then runs the same conversations (K parallel ``add`` calls for T turns, then the
answer) through

* ``floor``: the same loop on a raw asyncio socket with orjson (``bench/_floor_http.py``), what
  one Python process minimally spends;
* ``bare``: a hand-written loop on ``openai.AsyncOpenAI``;
* ``Agent.run()`` and ``Agent.stream()``,

interleaved, and prints client CPU per conversation and the ratio to the floor. Then, for each
``--concurrency`` level, N concurrent conversations against 50 ms of model latency per request
(floor and ``run()`` interleaved, in this process): conversations per second and their ratio.
Exits 1 when ``run()`` spends more than ``--max-ratio`` times the floor's CPU, or reaches less
than ``--min-throughput`` times its conversations per second. Not part of the test suite.

    bench/.work/venv/bin/python bench/compare.py              # after bench/run_peers.sh made the venv
    bench/.work/venv/bin/python bench/compare.py --reps 15 --n 40 --concurrency 200,1000

The mock is found at ``../shared/bench`` from the repo root (or from the main checkout of a git
worktree); ``TOOLOOP_SHARED_BENCH`` overrides it.

Every provider (OpenAI Chat, OpenAI Responses, Anthropic, Gemini) and both front doors against the
floor of their own wire format, with conversations per second and peak RSS at 1,000 concurrent,
import time, the first request and long histories: ``bench/providers.py``, which this script runs
with ``--providers`` (the other arguments go to it):

    python bench/compare.py --providers --phases cpu --reps 15
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "bench")]

import orjson  # noqa: E402
from _floor_http import FloorClient  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from tooloop import Agent, RunFinished, get_model  # noqa: E402

PROMPT = "Add some numbers with the add tool, then tell me the total."
PARAMS = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
Conversation = Callable[[], Awaitable[str]]


async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


def expected(k: int, t: int) -> str:
    """The mock's final total: call i of turn r adds (10 r + i + 1) and (i + 2)."""
    return str(sum(10 * r + 2 * i + 3 for r in range(t) for i in range(k)))


def shared_bench() -> Path:
    if os.environ.get("TOOLOOP_SHARED_BENCH"):
        return Path(os.environ["TOOLOOP_SHARED_BENCH"])
    common = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    roots = [REPO] + ([Path(common).parent] if common else [])
    for root in roots:
        candidate = root.parent / "shared" / "bench"
        if (candidate / "mock_llm.py").exists():
            return candidate
    raise SystemExit("shared bench not found at ../shared/bench; set TOOLOOP_SHARED_BENCH")


def floor_loop(client: FloorClient, model: str) -> Conversation:
    """The floor: the loop on a raw socket with orjson, no SDK, no framework."""
    tools = [{"type": "function", "function": {"name": "add", "description": add.__doc__, "parameters": PARAMS}}]

    async def run() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        while True:
            body = {"model": model, "messages": messages, "tools": tools}
            (answer,) = await client.post("/v1/chat/completions", body)
            message = answer["choices"][0]["message"]
            calls = message.get("tool_calls")
            if not calls:
                return str(message["content"])
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
            results = await asyncio.gather(*(add(**orjson.loads(c["function"]["arguments"])) for c in calls))
            for call, result in zip(calls, results, strict=True):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})

    return run


def bare_loop(client: AsyncOpenAI, model: str) -> Conversation:
    """A hand-written loop on the official client."""
    tools = [{"type": "function", "function": {"name": "add", "description": add.__doc__, "parameters": PARAMS}}]

    async def run() -> str:
        messages: list[dict[str, object]] = [{"role": "user", "content": PROMPT}]
        while True:
            response = await client.chat.completions.create(model=model, messages=messages, tools=tools)  # type: ignore[arg-type]
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]  # type: ignore[union-attr]
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
                    ],
                }
            )
            results = await asyncio.gather(*(add(**json.loads(a)) for _, _, a in calls))
            messages += [
                {"role": "tool", "tool_call_id": i, "content": str(r)}
                for (i, _, _), r in zip(calls, results, strict=True)
            ]

    return run


def tooloop_doors(llm: Any) -> dict[str, Conversation]:
    agent = Agent(llm, tools=[add])

    async def run() -> str:
        return (await agent.run(PROMPT)).text

    async def stream() -> str:
        async for event in agent.stream(PROMPT):
            if isinstance(event, RunFinished):
                return event.result.text
        raise AssertionError("no RunFinished")

    return {"tooloop.run": run, "tooloop.stream": stream}


async def compare(base_url: str, k: int, t: int, reps: int, n: int) -> dict[str, float]:
    model = f"mock-k{k}-t{t}"
    floor = FloorClient(base_url, {"content-type": "application/json", "authorization": "Bearer mock"})
    client = AsyncOpenAI(base_url=base_url, api_key="mock", max_retries=0)
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    doors = {"floor": floor_loop(floor, model), "bare": bare_loop(client, model), **tooloop_doors(llm)}
    try:
        return await _measure(doors, expected(k, t), reps, n)
    finally:
        await floor.close()
        await client.close()
        await llm.aclose()  # type: ignore[attr-defined]


async def concurrency(base_url: str, level: int, reps: int) -> dict[str, float]:
    """Conversations per second with ``level`` conversations at once (50 ms per model request)."""
    model = "mock-k1-t3-l50"
    floor = FloorClient(base_url, {"content-type": "application/json", "authorization": "Bearer mock"})
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    doors = {"floor": floor_loop(floor, model), "tooloop.run": tooloop_doors(llm)["tooloop.run"]}
    rates: dict[str, list[float]] = {name: [] for name in doors}
    try:
        for rep in range(reps + 1):  # the first round opens the connections and is not counted
            for name in list(doors)[rep % 2 :] + list(doors)[: rep % 2]:
                gc.collect()
                start = time.perf_counter()
                answers = await asyncio.gather(*(doors[name]() for _ in range(level)))
                elapsed = time.perf_counter() - start
                assert all(expected(1, 3) in a for a in answers), f"{name}: a wrong answer"
                if rep:
                    rates[name].append(level / elapsed)
    finally:
        await floor.close()
        await llm.aclose()  # type: ignore[attr-defined]
    return {name: statistics.median(values) for name, values in rates.items()}


async def _measure(doors: dict[str, Conversation], want: str, reps: int, n: int) -> dict[str, float]:
    for name, fn in doors.items():
        for _ in range(5):
            answer = await fn()
            assert want in answer, f"{name}: wrong answer {answer!r}, want {want}"
    cpu: dict[str, list[float]] = {name: [] for name in doors}
    names = list(doors)
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            gc.collect()
            c0 = time.process_time()
            for _ in range(n):
                await doors[name]()
            cpu[name].append((time.process_time() - c0) / n)
    return {name: statistics.median(values) for name, values in cpu.items()}


def main() -> None:
    if "--providers" in sys.argv[1:]:
        rest = [arg for arg in sys.argv[1:] if arg != "--providers"]
        os.execv(sys.executable, [sys.executable, str(REPO / "bench" / "providers.py"), *rest])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--max-ratio", type=float, default=2.5, help="fail when run() CPU exceeds this x the floor")
    ap.add_argument("--concurrency", default="200,1000", help="levels for the throughput check ('' to skip)")
    ap.add_argument("--min-throughput", type=float, default=0.5, help="fail below this x the floor's conv/s")
    ap.add_argument("--providers", action="store_true", help="run bench/providers.py with the other arguments")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2
    if pin:
        os.sched_setaffinity(0, set(cpus[:-1]))

    def pin_mock() -> None:
        os.sched_setaffinity(0, {cpus[-1]})

    mock = subprocess.Popen(
        [sys.executable, str(shared_bench() / "mock_llm.py")],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=pin_mock if pin else None,
    )
    worst, slowest = 0.0, float("inf")
    try:
        assert mock.stdout is not None
        base_url = f"http://127.0.0.1:{int(mock.stdout.readline().split()[1])}/v1"
        print(f"medians of {args.reps} interleaved repetitions x {args.n} conversations; mock pinned: {pin}")
        print("| K, T | contestant | CPU ms/conversation | x floor |\n|---|---|---:|---:|")
        for k in (1, 4):
            result = asyncio.run(compare(base_url, k, 3, args.reps, args.n))
            for name, value in result.items():
                print(f"| {k}, 3 | {name} | {1e3 * value:.2f} | {value / result['floor']:.2f}x |")
            worst = max(worst, result["tooloop.run"] / result["floor"])
        levels = [int(level) for level in args.concurrency.split(",") if level]
        if levels:
            print("\n| concurrent | contestant | conv/s | x floor |\n|---:|---|---:|---:|")
        for level in levels:
            rates = asyncio.run(concurrency(base_url, level, max(3, args.reps // 3)))
            for name, rate in rates.items():
                print(f"| {level} | {name} | {rate:.0f} | {rate / rates['floor']:.2f}x |")
            slowest = min(slowest, rates["tooloop.run"] / rates["floor"])
    finally:
        mock.terminate()  # the server this script started, by its handle
        mock.wait(10)
    failed = worst > args.max_ratio or slowest < args.min_throughput
    print(f"\nworst run() CPU {worst:.2f}x the floor (limit {args.max_ratio:.2f}x)", end="")
    if slowest != float("inf"):
        print(f"; lowest throughput {slowest:.2f}x the floor (limit {args.min_throughput:.2f}x)", end="")
    print(f": {'REGRESSION' if failed else 'ok'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
