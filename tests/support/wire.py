"""A scripted HTTP server on 127.0.0.1 that speaks a provider's wire format, for adapter tests.

Tests queue replies (JSON bodies, SSE streams, error statuses) and read back the requests the
official SDK actually sent, so both directions of an adapter are checked without mocks.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    """What the server answers to one request.

    ``chunks`` are written one after another with a flush between them (SSE or NDJSON streams);
    ``stall`` seconds pass after the chunks with nothing sent (a server that hangs mid-stream);
    ``cut`` closes the connection after the chunks without finishing the response properly.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None
    cut: bool = False
    stall: float = 0.0


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON response."""
    return Reply(status, {"content-type": "application/json", **(headers or {})}, json.dumps(payload).encode())


def sse_reply(events: Iterable[Any], *, done: bool = False, named: bool = False, cut: bool = False) -> Reply:
    """A ``text/event-stream`` response.

    Each item is a payload dict (written as ``data: {json}``) or, with ``named=True``, a pair
    ``(event_name, payload)`` written as ``event: name`` + ``data: {json}`` (Anthropic's format).
    A ``str`` item is written as it is (to send broken or raw data).
    """
    chunks = []
    for item in events:
        if isinstance(item, str):
            chunks.append(item.encode())
        elif named:
            name, payload = item
            chunks.append(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
        else:
            chunks.append(f"data: {json.dumps(item)}\n\n".encode())
    if done:
        chunks.append(b"data: [DONE]\n\n")
    return Reply(200, {"content-type": "text/event-stream"}, chunks=chunks, cut=cut)


Handler = Callable[[Recorded], Reply]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a cut stream, a cancelled request) is expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class WireServer:
    """A threaded HTTP server on 127.0.0.1 answering from a queue of replies or a handler."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.connections = 0
        """TCP connections accepted so far (a client that reuses its connection opens one)."""
        self._replies: list[Reply | Handler] = []
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                with server._lock:
                    server.connections += 1
                super().setup()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                recorded = Recorded(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
                )
                reply = server._next(recorded)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.chunks is None:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in reply.chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                if reply.stall:
                    time.sleep(reply.stall)
                if reply.cut:
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self._server = _QuietServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply | Handler) -> WireServer:
        """Answer the next requests with these replies (or handlers), in order."""
        with self._lock:
            self._replies.extend(replies)
        return self

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if not self._replies:
                return json_reply({"error": {"message": "no reply queued in the test server"}}, status=599)
            item = self._replies.pop(0)
        return item(recorded) if callable(item) else item

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve() -> Iterator[WireServer]:
    """Generator for a pytest fixture: ``server = pytest.fixture(serve)``."""
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()
