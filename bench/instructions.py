"""Machine instructions per conversation, counted by valgrind: a measure that load does not move.

Timings on a shared machine move by ten percent or more from one run to the next, more than most
changes a profile suggests. This script counts the instructions the client process executes (user
space: the kernel's share of send, receive and epoll is not counted) for the two tooloop front doors
(`bench/peers/tooloop.py`: ``agent.run``, `bench/peers/tooloop_stream.py`: ``agent.stream``) on the
shared bench's mock, one conversation at a time, or a burst of concurrent ones in a fresh process
(the garbage collector's work included). Each figure is what the process executes between the end
of its warm-up and the end of its conversations (valgrind dumps a part of the profile at each of
the two marks, ``os.sched_yield()`` calls), divided by their number: start-up and imports stay out
whether or not their bytecode was cached (counting a whole process and subtracting one that only
warmed up did not: when a module's cached bytecode appeared or went stale between the two runs,
hundreds of millions of compile instructions landed in one of them). The counts repeat within
about 1%; valgrind runs the client about fifty times slower, so keep the numbers small.

    python bench/instructions.py                    # K=1 and K=4, 100 sequential conversations
    python bench/instructions.py -k 4 -n 50
    python bench/instructions.py --burst 1000       # 1000 concurrent (K=1 T=3, 50 ms per request)
    python bench/instructions.py --provider anthropic -k 1 -n 50    # a provider against its floors

Needs ``valgrind`` on the PATH. The mock is found and started as in `bench/stream_vs_run.py`.

With ``--provider`` (``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``) the
conversations run against `bench/mock_wire.py` speaking that provider's wire format, through the
contestants of `bench/providers.py`: the floor on raw sockets (``floor``: plain answers,
``floor_sse``: streamed) besides ``run`` and ``stream``, each front door's count also given as a
ratio to its floor's (``run`` to ``floor``, ``stream`` to ``floor_sse``). ``--doors`` picks some.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import providers  # noqa: E402
from _callgrind import counted  # noqa: E402
from stream_vs_run import PROMPT, Mock, build, expected  # noqa: E402


def _stretch_deadlines(factor: float) -> None:
    """Make every ``tooloop._deadline`` scope ``factor`` times longer.

    Under valgrind a burst's first connections wait for the slowed-down loop to start all the
    others (a thousand conversations at ~50x the CPU) and would hit the 10 s connect timeout; the
    work counted is the same, only the deadlines move.
    """
    from tooloop import _deadline

    enter = _deadline._Wheel.enter

    def stretched(self, seconds, task, started=None):  # type: ignore[no-untyped-def]
        return enter(self, seconds * factor, task, started)

    _deadline._Wheel.enter = stretched  # type: ignore[method-assign]


async def _conversations(door: str, url: str, k: int, n: int, burst: bool) -> None:
    if burst and not door.endswith(("/floor", "/floor_sse")):
        _stretch_deadlines(100)
    model = f"mock-k{k}-t3" + ("-l50" if burst else "")
    run = providers.build(door, url, model)[0] if "/" in door else build(door, url, model)
    for _ in range(3 if burst else 10):
        assert expected(k, 3) in await run(PROMPT)
    os.sched_yield()  # the mark where valgrind starts the counted part of the profile
    if burst:
        answers = await asyncio.gather(*(run(PROMPT) for _ in range(n)))
    else:
        answers = [await run(PROMPT) for _ in range(n)]
    os.sched_yield()  # and where it ends it
    assert all(expected(k, 3) in answer for answer in answers)


def _count(door: str, url: str, k: int, n: int, burst: bool) -> int:
    """Instructions executed between the worker's two marks."""
    command = [sys.executable, __file__, "--worker", door, "--url", url, "-k", str(k), "-n", str(n)]
    if burst:
        command.append("--burst-worker")
    return counted(command)[0]


def per_conversation(door: str, url: str, k: int, n: int, burst: bool) -> float:
    """Instructions per conversation, counted between the end of the warm-up and the last answer."""
    return _count(door, url, k, n, burst) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", type=int, action="append", help="tool calls per turn (default: 1 and 4)")
    parser.add_argument("-n", type=int, default=100, help="sequential conversations per count")
    parser.add_argument("--burst", type=int, help="count this many concurrent conversations instead (K=1)")
    parser.add_argument("--provider", choices=providers.PROVIDERS, help="count against bench/mock_wire.py")
    parser.add_argument("--doors", help="with --provider: comma-separated, from floor, floor_sse, run, stream")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--burst-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_conversations(args.worker, args.url, args.k[0], args.n, args.burst_worker))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    if args.provider:
        per_provider(args)
        return
    mock = Mock()
    try:
        cases = [(1, args.burst, True)] if args.burst else [(k, args.n, False) for k in args.k or [1, 4]]
        for k, n, burst in cases:
            counts = {door: per_conversation(door, mock.url, k, n, burst) for door in ("run", "stream")}
            label = f"{n} concurrent, K=1 T=3" if burst else f"one at a time, K={k} T=3"
            print(
                f"{label}: run {counts['run'] / 1e6:.3f} M instructions/conversation, "
                f"stream {counts['stream'] / 1e6:.3f} M, stream / run {counts['stream'] / counts['run']:.3f}x",
                flush=True,
            )
    finally:
        mock.close()


def per_provider(args: argparse.Namespace) -> None:
    """Counts of one provider's contestants (floors included) against bench/mock_wire.py."""
    doors = (args.doors or ",".join(providers.DOORS)).split(",")
    mock = providers.Mock(chunked=False)
    try:
        cases = [(1, args.burst, True)] if args.burst else [(k, args.n, False) for k in args.k or [1, 4]]
        for k, n, burst in cases:
            counts = {door: per_conversation(f"{args.provider}/{door}", mock.url, k, n, burst) for door in doors}
            label = f"{n} concurrent, K=1 T=3" if burst else f"one at a time, K={k} T=3"
            parts = []
            for door, count in counts.items():
                floor = counts.get(providers.FLOOR_OF.get(door, ""))
                parts.append(f"{door} {count / 1e6:.3f} M" + (f" ({count / floor:.2f}x)" if floor else ""))
            print(f"{args.provider}, {label}: " + ", ".join(parts) + " instructions/conversation", flush=True)
    finally:
        mock.close()


if __name__ == "__main__":
    main()
