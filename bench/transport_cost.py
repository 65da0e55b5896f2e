"""Instructions the transport alone spends per request at a burst, against the floor's raw sockets.

``--level`` clients at once each send ``--requests`` OpenAI Chat requests in a row (one kept-alive
connection each, opened by the first) to `bench/mock_wire.py`, 50 ms per answer as in the burst
phase, and read the JSON answers: through the transport (``tooloop.transport.client.Client``,
``post_json``: the path every lean provider's plain request takes) and through the floor's client
(`bench/_floor_http.py`, asyncio streams and orjson). valgrind counts the client's instructions
between two marks (see `bench/_callgrind.py`), divided by the requests: a figure load does not
move, for the transport's share of a conversation without the loop and the adapters around it.

    python bench/transport_cost.py                      # 500 at once, 3 requests each
    python bench/transport_cost.py --level 1000 --doors transport
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _callgrind import counted  # noqa: E402

PATH = "/v1/chat/completions"
BODY = {"model": "mock-k1-t1-l50", "messages": [{"role": "user", "content": "What is 1 + 2? Use the tool."}]}
HEADERS = {"authorization": "Bearer sk-bench", "content-type": "application/json", "user-agent": "bench"}


async def _requests(door: str, url: str, level: int, requests: int) -> None:
    if door == "transport":
        from tooloop.transport.client import Client
        from tooloop.transport.retry import RetryPolicy

        client = Client(url, HEADERS, retry=RetryPolicy(max_retries=0), connect_timeout=600, read_timeout=600)

        async def post() -> Any:
            return await client.post_json(PATH, BODY)
    else:
        from _floor_http import FloorClient

        floor = FloorClient(url, HEADERS)

        async def post() -> Any:
            return (await floor.post(PATH, BODY))[0]

    async def one() -> None:
        for _ in range(requests):
            answer = await post()
            assert answer["choices"], answer

    for _ in range(3):
        await one()
    os.sched_yield()  # counting starts
    await asyncio.gather(*(one() for _ in range(level)))
    os.sched_yield()  # and ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", type=int, default=500, help="clients at once")
    parser.add_argument("--requests", type=int, default=3, help="requests per client, in a row")
    parser.add_argument("--doors", default="floor,transport", help="comma-separated: floor, transport")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_requests(args.worker, args.url, args.level, args.requests))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    import providers

    mock = providers.Mock(chunked=False)
    try:
        counts: dict[str, float] = {}
        for door in args.doors.split(","):
            command = [sys.executable, __file__, "--worker", door, "--url", mock.url]
            command += ["--level", str(args.level), "--requests", str(args.requests)]
            counts[door] = counted(command)[0] / (args.level * args.requests)
    finally:
        mock.close()
    floor = counts.get("floor")
    parts = [
        f"{door} {count / 1e3:.1f} k" + (f" ({count / floor:.2f}x)" if floor else "") for door, count in counts.items()
    ]
    print(f"{args.level} at once, {args.requests} requests each: " + ", ".join(parts) + " instructions/request")


if __name__ == "__main__":
    main()
