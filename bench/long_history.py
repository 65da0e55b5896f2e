"""Cost per turn as the history grows: tooloop against the floor, T = 3, 10 and 30 tool turns.

Each conversation makes T tool turns and then answers, so request i carries the whole history
before it (the last request of T=30 holds 30 assistant turns and 30 tool results). Sizes are
realistic: every assistant turn says ~300 characters before its call, every tool result is ~2 KB
of JSON text. A scripted Chat Completions server runs in a child process pinned to its own CPU
(its CPU is not counted). Contestants, interleaved:

* ``floor``: the shared bench's ``floor_raw`` code path (raw asyncio sockets + orjson, its own
  loop, no SDK, no framework), taken from the shared bench folder;
* ``tooloop``: ``Agent.run()`` on ``openai-compatible:`` (the default, lean transport);
* ``tooloop.stream``: ``Agent.stream()``, every event consumed.

Printed per T: client CPU per request (median over repetitions), the mean JSON bytes a request
carries, and CPU per request divided by that of T=3 next to the same ratio for the JSON bytes:
cost per turn is flat in the history when CPU grows no faster than the JSON to encode.

    bench/.work/venv/bin/python bench/long_history.py [--reps 7] [--n 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
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
sys.path.insert(0, str(REPO / "bench"))

from compare import shared_bench  # noqa: E402

from tooloop import Agent, Limits, RunFinished, get_model  # noqa: E402

SERVER = r"""
import asyncio, json, re, sys
SAY = "Let me add these with the tool before I answer; " * 6
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            req = json.loads(await reader.readexactly(n))
            turns = int(req["model"].rsplit("-t", 1)[1])
            done = sum(1 for m in req["messages"] if m["role"] == "assistant")
            msg = {"role": "assistant", "content": "The total is 42. " * 4}
            finish = "stop"
            if done < turns:
                args = json.dumps({"a": done, "b": 1})
                msg = {"role": "assistant", "content": SAY,
                       "tool_calls": [{"id": f"call_{done}", "type": "function",
                                       "function": {"name": "add", "arguments": args}}]}
                finish = "tool_calls"
            usage = {"prompt_tokens": n // 4, "completion_tokens": 60, "total_tokens": n // 4 + 60}
            if req.get("stream"):
                delta = dict(msg)
                for i, call in enumerate(delta.get("tool_calls", ())):
                    call["index"] = i
                events = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}]
                body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                kind = b"text/event-stream"
            else:
                choice = {"index": 0, "message": msg, "finish_reason": finish}
                body = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": req["model"],
                                   "choices": [choice], "usage": usage}).encode()
                kind = b"application/json"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n" % (kind, len(body)))
            writer.write(body)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""

RESULT = '{"rows": [' + ", ".join(f'{{"id": {i}, "value": "{"x" * 40}", "ok": true}}' for i in range(30)) + "]}"
BYTES: list[int] = []


async def add(a: int, b: int) -> str:
    """Add two integers and return a report with their sum."""
    return f"sum={a + b} " + RESULT


Conversation = Callable[[], Awaitable[Any]]


def floor_contestant(base_url: str, model: str) -> Conversation:
    spec = importlib.util.spec_from_file_location("floor_raw", shared_bench() / "contestants" / "floor_raw.py")
    assert spec is not None and spec.loader is not None
    floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor)
    run = floor.build(base_url, model, add)
    return lambda: run("Add the numbers with the add tool, then tell me the total.")


def tooloop_contestants(base_url: str, model: str) -> tuple[dict[str, Conversation], Any]:
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    agent = Agent(llm, tools=[add], limits=Limits(max_turns=100))
    prompt = "Add the numbers with the add tool, then tell me the total."

    async def run() -> str:
        return (await agent.run(prompt)).text

    async def stream() -> str:
        async for event in agent.stream(prompt):
            if isinstance(event, RunFinished):
                return event.result.text
        raise AssertionError("no RunFinished")

    return {"tooloop": run, "tooloop.stream": stream}, llm


async def measure(base_url: str, turns: int, reps: int, n: int) -> dict[str, float]:
    model = f"mock-t{turns}"
    doors, llm = tooloop_contestants(base_url, model)
    doors = {"floor": floor_contestant(base_url, model), **doors}
    try:
        for name, fn in doors.items():
            for _ in range(2):
                answer = str(await fn())
                assert "42" in answer, f"{name}: {answer!r}"
        cpu: dict[str, list[float]] = {name: [] for name in doors}
        names = list(doors)
        for rep in range(reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                gc.collect()
                c0 = time.process_time()
                for _ in range(n):
                    await doors[name]()
                cpu[name].append((time.process_time() - c0) / n / (turns + 1))
        return {name: statistics.median(values) for name, values in cpu.items()}
    finally:
        await llm.aclose()


def json_bytes(turns: int) -> float:
    """Mean request size: request i holds the prompt, i assistant turns and i tool results."""
    say = len("Let me add these with the tool before I answer; " * 6)
    per_turn = say + len(RESULT) + 200  # text, result, the call and the JSON around them
    return statistics.mean(300 + i * per_turn for i in range(turns + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--n", type=int, default=5, help="conversations per contestant per repetition")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2
    if pin:
        os.sched_setaffinity(0, set(cpus[:-1]))
    mock = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {cpus[-1]})) if pin else None,
    )
    try:
        assert mock.stdout is not None
        base_url = f"http://127.0.0.1:{int(mock.stdout.readline())}/v1"
        print(f"medians of {args.reps} interleaved repetitions x {args.n} conversations; server pinned: {pin}")
        print(
            "| T | contestant | CPU µs/request | x floor | JSON KB/request | CPU growth vs T=3 | JSON growth vs T=3 |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|")
        first: dict[str, float] = {}
        for turns in (3, 10, 30):
            result = asyncio.run(measure(base_url, turns, args.reps, args.n))
            size = json_bytes(turns)
            for name, value in result.items():
                first.setdefault(name, value)
                growth = value / first[name]
                print(
                    f"| {turns} | {name} | {1e6 * value:.0f} | {value / result['floor']:.2f}x | {size / 1024:.1f} | "
                    f"{growth:.2f}x | {size / json_bytes(3):.2f}x |"
                )
    finally:
        mock.terminate()  # the server this script started, by its handle
        mock.wait(10)


if __name__ == "__main__":
    main()
