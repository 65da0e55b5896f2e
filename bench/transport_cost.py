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
    python bench/transport_cost.py --real-headers      # answers with the headers a real API sends

``--real-headers``: the mock's answers carry, besides their framing, the twenty-odd headers the
OpenAI API sends (rate limits, request id, cookies, CDN headers; the values made up), where the
mock alone sends two: a real server's head costs a client more to read.
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

REAL_HEADERS = (
    b"date: Sat, 28 Nov 2026 20:00:00 GMT\r\n"
    b"connection: keep-alive\r\n"
    b"access-control-expose-headers: X-Request-ID\r\n"
    b"openai-organization: org-bench\r\n"
    b"openai-processing-ms: 412\r\n"
    b"openai-project: proj_bench\r\n"
    b"openai-version: 2020-10-01\r\n"
    b"x-envoy-upstream-service-time: 415\r\n"
    b"x-ratelimit-limit-requests: 10000\r\n"
    b"x-ratelimit-limit-tokens: 2000000\r\n"
    b"x-ratelimit-remaining-requests: 9999\r\n"
    b"x-ratelimit-remaining-tokens: 1999975\r\n"
    b"x-ratelimit-reset-requests: 6ms\r\n"
    b"x-ratelimit-reset-tokens: 0s\r\n"
    b"x-request-id: req_0123456789abcdef0123456789abcdef\r\n"
    b"strict-transport-security: max-age=31536000; includeSubDomains; preload\r\n"
    b"cf-cache-status: DYNAMIC\r\n"
    b"set-cookie: __cf_bm=0123456789abcdefghijklmnopqrstuvwxyz0123456789; path=/; expires=Sat, 28-Nov-26 20:30:00"
    b" GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None\r\n"
    b"set-cookie: _cfuvid=0123456789abcdefghijklmnopqrstuvwxyz-0123456789; path=/; domain=.api.openai.com;"
    b" HttpOnly; Secure; SameSite=None\r\n"
    b"x-content-type-options: nosniff\r\n"
    b"server: cloudflare\r\n"
    b"cf-ray: 8e1f0123456789ab-SJC\r\n"
    b'alt-svc: h3=":443"; ma=86400\r\n'
)
"""What the OpenAI API sends in an answer's head besides its framing (the values made up)."""

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


def _serve() -> None:
    """The mock, its answers' heads with :data:`REAL_HEADERS` after the status line."""
    import mock_wire

    framed = mock_wire.framed

    def with_headers(status: bytes, pieces: list[bytes], sse: bool, chunked: bool, keep: bool) -> bytes:
        return framed(status, pieces, sse, chunked, keep).replace(b"\r\n", b"\r\n" + REAL_HEADERS, 1)

    mock_wire.framed = with_headers
    sys.argv = sys.argv[:1]
    mock_wire.main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", type=int, default=500, help="clients at once")
    parser.add_argument("--requests", type=int, default=3, help="requests per client, in a row")
    parser.add_argument("--doors", default="floor,transport", help="comma-separated: floor, transport")
    parser.add_argument("--stream", action="store_true", help="streamed answers (SSE) instead of JSON")
    parser.add_argument("--real-headers", action="store_true", help="answers with a real API's headers")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve()
        return
    if args.worker:
        asyncio.run(_requests(args.worker, args.url, args.level, args.requests, args.stream))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    import providers

    mock = providers.Mock(command=[sys.executable, __file__, "--serve"] if args.real_headers else None)
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
    what = ("streamed requests" if args.stream else "requests") + (" (real headers)" if args.real_headers else "")
    print(f"{args.level} at once, {args.requests} {what} each: " + ", ".join(parts) + " instructions/request")


if __name__ == "__main__":
    main()
