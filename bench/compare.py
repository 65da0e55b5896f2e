"""Regression guard: tooloop against a bare-SDK loop, in one run, on the shared mock LLM server.

Starts the shared bench's ``mock_llm.py`` as a subprocess (pinned to its own CPU when there are
two or more), then runs the same conversations (K parallel ``add`` calls for T turns, then the
answer) through a hand-written loop on ``openai.AsyncOpenAI`` and through ``Agent.run()`` /
``Agent.stream()``, interleaved, and prints client CPU per conversation and the ratio. Exits 1
when ``run()`` is slower than ``--max-ratio`` times the bare loop. Not part of the test suite.

    bench/.work/venv/bin/python bench/compare.py              # after bench/run_peers.sh made the venv
    bench/.work/venv/bin/python bench/compare.py --reps 15 --n 40 --max-ratio 1.05

The mock is found at ``../shared/bench`` from the repo root (or from the main checkout of a git
worktree); ``TOOLOOP_SHARED_BENCH`` overrides it.
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
sys.path.insert(0, str(REPO / "src"))

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


def bare_loop(client: AsyncOpenAI, model: str) -> Conversation:
    """The floor: a hand-written loop on the official client."""
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
    client = AsyncOpenAI(base_url=base_url, api_key="mock", max_retries=0)
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    try:
        return await _measure({"bare": bare_loop(client, model), **tooloop_doors(llm)}, expected(k, t), reps, n)
    finally:
        await client.close()
        await llm.aclose()  # type: ignore[attr-defined]


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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--max-ratio", type=float, default=1.0, help="fail when run() CPU exceeds this x bare")
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
    worst = 0.0
    try:
        assert mock.stdout is not None
        base_url = f"http://127.0.0.1:{int(mock.stdout.readline().split()[1])}/v1"
        print(f"medians of {args.reps} interleaved repetitions x {args.n} conversations; mock pinned: {pin}")
        print("| K, T | contestant | CPU ms/conversation | x bare |\n|---|---|---:|---:|")
        for k in (1, 4):
            result = asyncio.run(compare(base_url, k, 3, args.reps, args.n))
            for name, value in result.items():
                ratio = value / result["bare"]
                print(f"| {k}, 3 | {name} | {1e3 * value:.2f} | {ratio:.2f}x |")
            worst = max(worst, result["tooloop.run"] / result["bare"])
    finally:
        mock.terminate()  # the server this script started, by its handle
        mock.wait(10)
    verdict = "ok" if worst <= args.max_ratio else "REGRESSION"
    print(f"\nworst run() ratio {worst:.2f}x (limit {args.max_ratio:.2f}x): {verdict}")
    sys.exit(0 if worst <= args.max_ratio else 1)


if __name__ == "__main__":
    main()
