"""Instructions the transport alone spends per request at a burst, against the floor's raw sockets.

``--level`` clients at once each send ``--requests`` OpenAI Chat requests in a row (one kept-alive
connection each, opened by the first) to `bench/mock_wire.py`, 50 ms per answer as in the burst
phase, and read the JSON answers: through the transport (``tooloop.transport.client.Client``,
``post_json``: the path every lean provider's plain request takes) and through the floor's client
(`bench/_floor_http.py`, asyncio streams and orjson). valgrind counts the client's instructions
between two marks (see `bench/_callgrind.py`), divided by the requests: a figure load does not
move, for the transport's share of a conversation without the loop and the adapters around it.

``--stream`` asks for streamed answers instead: the transport sends with ``post`` and reads the
body piece by piece (``Response.piece``), its events split by ``tooloop.transport.sse.SSEDecoder``
and parsed with orjson, one array per piece (as the Chat Completions reader does); the floor
(`bench/_floors.py`, the providers' ``floor_sse``) reads the whole body and parses each ``data:`` line.

    python bench/transport_cost.py                      # 500 at once, 3 requests each
    python bench/transport_cost.py --level 1000 --doors transport
    python bench/transport_cost.py --stream --level 300
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _callgrind import counted  # noqa: E402

PATH = "/v1/chat/completions"
BODY = {"model": "mock-k1-t1-l50", "messages": [{"role": "user", "content": "What is 1 + 2? Use the tool."}]}
HEADERS = {"authorization": "Bearer sk-bench", "content-type": "application/json", "user-agent": "bench"}


async def _requests(door: str, url: str, level: int, requests: int, stream: bool) -> None:
    body = {**BODY, "stream": True, "stream_options": {"include_usage": True}} if stream else BODY
    post: Callable[[], Awaitable[Any]]
    if door == "transport":
        from tooloop.transport.client import Client
        from tooloop.transport.retry import RetryPolicy

        client = Client(url, HEADERS, retry=RetryPolicy(max_retries=0), connect_timeout=600, read_timeout=600)

        async def post_json() -> Any:
            return await client.post_json(PATH, body)

        post = _streamer(client, body) if stream else post_json
    elif stream:
        from _floors import Pool, events

        pool = Pool(url, HEADERS)

        async def floor_stream() -> Any:
            return events((await pool.post(PATH, body))[0])

        post = floor_stream
    else:
        from _floor_http import FloorClient

        floor = FloorClient(url, HEADERS)

        async def floor_post() -> Any:
            return (await floor.post(PATH, body))[0]

        post = floor_post

    async def one() -> None:
        for _ in range(requests):
            answer = await post()
            assert answer if stream else answer["choices"], answer

    for _ in range(3):
        await one()
    os.sched_yield()  # counting starts
    await asyncio.gather(*(one() for _ in range(level)))
    os.sched_yield()  # and ends


def _streamer(client: Any, body: Any) -> Callable[[], Awaitable[Any]]:
    """A streamed request through the transport: its events, parsed one array per piece of the body."""
    import orjson

    from tooloop.transport.sse import SSEDecoder

    async def post() -> list[Any]:
        response = await client.post(PATH, body)
        decoder = SSEDecoder()
        events: list[Any] = []
        while piece := await response.piece():
            usual = decoder.joined(piece, b",")
            if usual is not None:
                events += orjson.loads(b"[" + usual[0].removesuffix(b",[DONE]") + b"]")
            else:
                events += [orjson.loads(data) for data in decoder.data(piece) if data != b"[DONE]"]
        return events

    return post


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", type=int, default=500, help="clients at once")
    parser.add_argument("--requests", type=int, default=3, help="requests per client, in a row")
    parser.add_argument("--doors", default="floor,transport", help="comma-separated: floor, transport")
    parser.add_argument("--stream", action="store_true", help="streamed answers (SSE) instead of JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_requests(args.worker, args.url, args.level, args.requests, args.stream))
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
            command += ["--stream"] if args.stream else []
            counts[door] = counted(command)[0] / (args.level * args.requests)
    finally:
        mock.close()
    floor = counts.get("floor")
    parts = [
        f"{door} {count / 1e3:.1f} k" + (f" ({count / floor:.2f}x)" if floor else "") for door, count in counts.items()
    ]
    what = "streamed requests" if args.stream else "requests"
    print(f"{args.level} at once, {args.requests} {what} each: " + ", ".join(parts) + " instructions/request")


if __name__ == "__main__":
    main()
