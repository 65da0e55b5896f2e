"""Rollouts: N concurrent multi-turn tool conversations against an OpenAI-compatible server.

The shape of an evaluation or reinforcement-learning rollout: many independent conversations at
once (each one: model turn, tool calls, results back, until an answer), a progress line while
they run, and a throughput summary at the end (conversations and model turns per second, client
CPU, latency percentiles, failures).

Against a real server (vLLM, SGLang, Ollama, llama.cpp, any OpenAI-compatible endpoint)::

    python examples/rollout.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B -n 2000 -c 500

Offline, against a scripted mock server this example starts in a child process (it asks for
``--turns`` rounds of ``--calls`` parallel ``add`` calls, then answers with the total)::

    python examples/rollout.py --mock -n 2000 -c 1000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time

from tooloop import Agent, get_model, tool

PROMPT = "Add the numbers the task needs with the add tool, then tell me the total."


@tool
async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


async def rollout(agent: Agent, n: int, concurrency: int, *, freeze: bool = True) -> None:
    """Run ``n`` conversations, at most ``concurrency`` at once; print progress, then a summary.

    ``freeze``: move what exists before the burst out of the garbage collector's scans (``gc.freeze``).
    """
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    failures: dict[str, int] = {}
    turns = 0

    async def one() -> None:
        nonlocal turns
        async with gate:
            start = time.perf_counter()
            try:
                result = await agent.run(PROMPT)
            except Exception as exc:  # a rollout counts failures and goes on
                failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
                return
            latencies.append(time.perf_counter() - start)
            turns += result.usage.requests if result.usage.requests else 1

    if freeze:
        # Everything made so far (modules, the agent, the model) lives as long as the process: out
        # of the collector's way, its full scans at thousands of live conversations cost far less.
        gc.collect()
        gc.freeze()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    while not all(task.done() for task in tasks):
        await asyncio.wait(tasks, timeout=1.0)
        done = len(latencies) + sum(failures.values())
        rate = done / (time.perf_counter() - wall0)
        print(f"\r{done}/{n} conversations  {rate:7.0f}/s  failed {sum(failures.values())}", end="", flush=True)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    print()
    summarize(n, wall, cpu, latencies, turns, failures)


def summarize(n: int, wall: float, cpu: float, latencies: list[float], turns: int, failures: dict[str, int]) -> None:
    ok = len(latencies)
    print(f"conversations  {ok} ok, {n - ok} failed {failures or ''}".rstrip())
    print(f"wall           {wall:.2f} s  ({ok / wall:.0f} conversations/s, {turns / wall:.0f} model turns/s)")
    print(f"client CPU     {cpu:.2f} s  ({1e3 * cpu / max(ok, 1):.2f} ms per conversation)")
    if latencies:
        cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
        p50, p95, worst = 1e3 * cuts[49], 1e3 * cuts[94], 1e3 * max(latencies)
        print(f"latency        p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {worst:.0f} ms")


# -- the offline mock: a scripted OpenAI-compatible server ---------------------------------------


def serve_mock(calls: int, turns: int, latency_ms: float) -> None:
    """A Chat Completions server: ``turns`` rounds of ``calls`` parallel add calls, then the total."""

    def answer(request: dict[str, object]) -> dict[str, object]:
        messages = request["messages"]
        assert isinstance(messages, list)
        results = [int(m["content"]) for m in messages if m["role"] == "tool"]
        done = sum(1 for m in messages if m["role"] == "assistant")
        message: dict[str, object] = {"role": "assistant", "content": f"The total is {sum(results)}."}
        if done < turns:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{done}_{i}",
                    "type": "function",
                    "function": {"name": "add", "arguments": json.dumps({"a": done, "b": i})},
                }
                for i in range(calls)
            ]
        finish = "tool_calls" if done < turns else "stop"
        return {
            "id": "x",
            "object": "chat.completion",
            "model": "mock",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                body = json.dumps(answer(json.loads(await reader.readexactly(length)))).encode()
                await asyncio.sleep(latency_ms / 1000)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(body), body)
                )
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())


def start_mock(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, __file__, "--serve-mock", "--calls", str(args.calls), "--turns", str(args.turns)]
    mock = subprocess.Popen([*command, "--latency-ms", str(args.latency_ms)], stdout=subprocess.PIPE, text=True)
    assert mock.stdout is not None
    return mock, f"http://127.0.0.1:{int(mock.stdout.readline())}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default="mock")
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    parser.add_argument("-n", type=int, default=1000, help="conversations in all")
    parser.add_argument("-c", "--concurrency", type=int, default=500, help="conversations at once")
    parser.add_argument("--mock", action="store_true", help="start the offline mock server and use it")
    parser.add_argument("--calls", type=int, default=1, help="mock: parallel tool calls per turn")
    parser.add_argument("--turns", type=int, default=3, help="mock: tool turns before the answer")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="mock: latency per request")
    parser.add_argument("--no-gc-freeze", action="store_true", help="leave the garbage collector as it is")
    parser.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_mock:
        serve_mock(args.calls, args.turns, args.latency_ms)
        return
    mock = None
    if args.mock:
        mock, args.base_url = start_mock(args)
    if not args.base_url:
        parser.error("give --base-url (or set OPENAI_BASE_URL), or --mock")
    try:
        asyncio.run(run(args))
    finally:
        if mock is not None:
            mock.terminate()  # the mock this script started, by its handle
            mock.wait()


async def run(args: argparse.Namespace) -> None:
    key = {"api_key": args.api_key} if args.api_key else {"api_key_optional": True}
    async with get_model("openai-compatible:" + args.model, base_url=args.base_url, **key) as llm:
        await rollout(Agent(llm, tools=[add]), args.n, args.concurrency, freeze=not args.no_gc_freeze)


if __name__ == "__main__":
    main()
