"""Instructions the client spends per new connection of the transport, counted by valgrind.

Opens ``-n`` connections through a transport pool (``tooloop.transport.http.Pool``, the path every
lean provider takes for a new connection: address, socket, connect, protocol) to a local server
that only accepts them, either one after another or all at once (``--concurrent``, as a burst's
first requests do), and counts the instructions the client executes between two marks (see
`bench/_callgrind.py`), divided by ``-n``. ``--host localhost`` counts a name that needs resolving.

    python bench/connect_cost.py -n 200
    python bench/connect_cost.py -n 500 --concurrent --host localhost
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _callgrind import counted  # noqa: E402

_ACCEPTOR = """
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(4096)
print(server.getsockname()[1], flush=True)
held = []
while True:
    held.append(server.accept()[0])
"""


async def _open(host: str, port: int, n: int, concurrent: bool) -> None:
    from tooloop.transport.http import Endpoint, Pool

    pool = Pool(Endpoint.parse(f"http://{host}:{port}"), connect_timeout=600, read_timeout=600, max_connections=n + 10)
    warm = [await pool._open() for _ in range(5)]
    os.sched_yield()  # counting starts
    if concurrent:
        conns = await asyncio.gather(*(pool._open() for _ in range(n)))
    else:
        conns = [await pool._open() for _ in range(n)]
    os.sched_yield()  # and ends
    for conn in [*warm, *conns]:
        conn.abort()
    await asyncio.sleep(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=200, help="connections counted")
    parser.add_argument("--concurrent", action="store_true", help="open them all at once")
    parser.add_argument("--host", default="127.0.0.1", help="the server's address as the base URL names it")
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_open(args.host, args.port, args.n, args.concurrent))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    acceptor = subprocess.Popen([sys.executable, "-c", _ACCEPTOR], stdout=subprocess.PIPE, text=True)
    try:
        assert acceptor.stdout is not None
        port = int(acceptor.stdout.readline())
        with socket.create_connection(("127.0.0.1", port)):
            pass  # it is listening
        command = [sys.executable, __file__, "--worker", "--host", args.host, "--port", str(port), "-n", str(args.n)]
        if args.concurrent:
            command.append("--concurrent")
        total = counted(command)[0]
    finally:
        acceptor.kill()
        acceptor.wait()
    how = "at once" if args.concurrent else "one after another"
    print(f"{args.n} connections to {args.host} {how}: {total / args.n / 1e3:.1f} k instructions/connection")


if __name__ == "__main__":
    main()
