"""Real HTTP servers for the transport tests, all on 127.0.0.1 with free ports.

- :class:`Upstream`: a mock provider speaking the OpenAI Chat Completions wire format (JSON and
  SSE) on uvicorn + Starlette + sse-starlette, misbehaving on demand. The scenario is the first
  segment of the path (``/{scenario}/{token}/v1/chat/completions``), the token keeps one test's
  counters apart from another's.
- :class:`RawPeer`: a plain socket server for what an ASGI app cannot do (reset a connection in the
  middle of an upload, answer 413 and reset before reading the body).
- :class:`Nginx`: nginx from the system packages as reverse proxy and TLS terminator
  (``keepalive_timeout``, ``limit_rate``, gzip, redirects), run as a child process.
- :class:`Tinyproxy`: tinyproxy for the proxy variables.
- :class:`Authorities`: two certificate authorities made with trustme.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

BASIC_USER, BASIC_PASSWORD = "ops", "p@ss:w/rd"
"""The credentials of the ``basic`` scenario (reserved characters included, percent-encoded in URLs)."""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A port on 127.0.0.1 whose accept queue is full: connection attempts to it get no answer."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        held = []
        try:
            while True:
                client = socket.socket()
                held.append(client)
                client.settimeout(0.3)
                try:
                    client.connect(("127.0.0.1", port))
                except TimeoutError:
                    break
            yield port
        finally:
            for client in held:
                client.close()


def completion(text: str) -> dict[str, Any]:
    """A Chat Completions answer with ``text``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


def chunks(text: str) -> list[dict[str, Any]]:
    """The streamed chunks of an answer with ``text`` (two content pieces, the finish, the usage)."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4.1-mini"}
    half = len(text) // 2
    pieces = [{"role": "assistant", "content": text[:half]}, {"content": text[half:]}]
    out = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in pieces]
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out.append({**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
    return out


def sse_bytes(text: str, sep: str = "\n") -> bytes:
    """The SSE body of an answer with ``text``, lines ended by ``sep``, closed by ``[DONE]``."""
    events = [json.dumps(chunk) for chunk in chunks(text)] + ["[DONE]"]
    return "".join(f"data: {event}{sep}{sep}" for event in events).encode()


@dataclass
class Seen:
    """What the servers saw for one token."""

    hits: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)
    body_sizes: list[int] = field(default_factory=list)
    connections: set[tuple[str, int]] = field(default_factory=set)


class Upstream:
    """The mock provider on uvicorn (see the module docstring); ``seen[token]`` records requests."""

    def __init__(self) -> None:
        self.seen: defaultdict[str, Seen] = defaultdict(Seen)
        self.release = threading.Event()
        route = Route("/{scenario}/{token}/v1/chat/completions", self._chat, methods=["POST"])
        self._server = uvicorn.Server(
            uvicorn.Config(
                Starlette(routes=[route]),
                lifespan="off",
                log_level="critical",
                ws="none",
                timeout_keep_alive=30,
                timeout_graceful_shutdown=1,
            )
        )
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4096)
        self.port: int = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> Upstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.release.set()
        self._server.should_exit = True
        self._thread.join(5)
        self._sock.close()

    def url(self, scenario: str, token: str) -> str:
        return f"http://127.0.0.1:{self.port}/{scenario}/{token}/v1"

    async def _chat(self, request: Request) -> Response:
        scenario, token = request.path_params["scenario"], request.path_params["token"]
        seen = self.seen[token]
        seen.hits += 1
        seen.headers.append({name.lower(): value for name, value in request.headers.items()})
        if request.client is not None:
            seen.connections.add((request.client.host, request.client.port))
        if scenario == "sink":  # never reads the body: uvicorn stops reading the socket, the sender's writes block
            await asyncio.to_thread(self.release.wait, 8)
            return JSONResponse(completion("too late"))
        body = await request.body()
        seen.body_sizes.append(len(body))
        stream = bool(json.loads(body).get("stream"))
        return await _SCENARIOS[scenario](request, stream, seen)


async def _ok(request: Request, stream: bool, seen: Seen) -> Response:
    scenario = request.path_params["scenario"]
    if stream:
        return EventSourceResponse(_events(f"pong from {scenario}", "\n"), sep="\n", ping=600)
    return JSONResponse(completion(f"pong from {scenario}"))


async def _events(text: str, sep: str) -> AsyncIterator[dict[str, str]]:
    for chunk in chunks(text):
        yield {"data": json.dumps(chunk)}
    yield {"data": "[DONE]"}


async def _lone_cr(request: Request, stream: bool, seen: Seen) -> Response:
    """Events whose lines end with a lone CR, as sse-starlette writes them with ``sep="\\r"``."""
    if stream:
        return EventSourceResponse(_events("pong from lonecr", "\r"), sep="\r", ping=600)
    return JSONResponse(completion("pong from lonecr"))


async def _slow(request: Request, stream: bool, seen: Seen) -> Response:
    """A JSON body (with its length) or a stream sent in ten pieces, a quarter of a second apart."""
    data = sse_bytes("pong from slow") if stream else json.dumps(completion("pong from slow")).encode()
    step = -(-len(data) // 10)

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(data), step):
            yield data[start : start + step]
            await asyncio.sleep(0.25)

    kind = "text/event-stream" if stream else "application/json"
    return StreamingResponse(pieces(), media_type=kind, headers={"content-length": str(len(data))})


async def _padded(request: Request, stream: bool, seen: Seen) -> Response:
    """A large answer (48 KB of text that does not compress away), for rate-limited gateways."""
    text = "pong from padded " + base64.b64encode(os.urandom(36 * 1024)).decode()
    if stream:
        return Response(sse_bytes(text), media_type="text/event-stream")
    return JSONResponse(completion(text))


async def _deflate(request: Request, stream: bool, seen: Seen) -> Response:
    """The answer as a raw deflate stream (no zlib header) labelled ``content-encoding: deflate``."""
    data = sse_bytes("pong from deflate") if stream else json.dumps(completion("pong from deflate")).encode()
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = packer.compress(data) + packer.flush()
    kind = "text/event-stream" if stream else "application/json"
    return Response(raw, media_type=kind, headers={"content-encoding": "deflate"})


async def _basic(request: Request, stream: bool, seen: Seen) -> Response:
    expected = "Basic " + base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()
    if request.headers.get("authorization") != expected:
        error = {"error": {"message": "basic auth required", "type": "invalid_request_error", "code": "unauthorized"}}
        return JSONResponse(error, status_code=401, headers={"www-authenticate": 'Basic realm="llm"'})
    return await _ok(request, stream, seen)


async def _status(request: Request, stream: bool, seen: Seen) -> Response:
    """``/status204/`` or ``/status304/``: that status, no body (Starlette sends no length for them)."""
    return Response(status_code=int(request.path_params["scenario"][6:]))


async def _redirect(request: Request, stream: bool, seen: Seen) -> Response:
    """``/redirect307/`` and ``/redirect308/``: to the same token's ``ok`` path, relative Location."""
    status = int(request.path_params["scenario"][8:])
    return Response(status_code=status, headers={"location": f"/ok/{request.path_params['token']}/v1/chat/completions"})


async def _loop(request: Request, stream: bool, seen: Seen) -> Response:
    """A 307 to itself, for ever."""
    return Response(status_code=307, headers={"location": request.url.path})


async def _delay(request: Request, stream: bool, seen: Seen) -> Response:
    await asyncio.sleep(0.3)
    return await _ok(request, stream, seen)


_SCENARIOS = {
    "ok": _ok,
    "lonecr": _lone_cr,
    "slow": _slow,
    "padded": _padded,
    "deflate": _deflate,
    "basic": _basic,
    "status204": _status,
    "status304": _status,
    "redirect307": _redirect,
    "redirect308": _redirect,
    "loop": _loop,
    "delay": _delay,
}


class RawPeer:
    """A socket server answering Chat Completions requests by hand, with two misbehaviours.

    ``/rstreused/``: a request with a body over 1 MB on a connection that already served a request
    is reset after 64 KB of its body (a keep-alive connection the server dropped mid-upload).
    ``/reject/``: the first connection of a token gets a 413 and a reset before its body is read;
    later ones are served. ``/endless/``: a chunked answer whose trailer never ends.
    """

    def __init__(self) -> None:
        self.seen: defaultdict[str, Seen] = defaultdict(Seen)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.port: int = self._sock.getsockname()[1]
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, scenario: str, token: str) -> str:
        return f"http://127.0.0.1:{self.port}/{scenario}/{token}/v1"

    def stop(self) -> None:
        self._stopped = True
        self._sock.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            served = 0
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = _recv(conn)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                _, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
                _, scenario, token, *_ = path.split("/")
                length = int(_header(head, b"content-length") or b"0")
                with self._lock:
                    seen = self.seen[token]
                    seen.hits += 1
                    first_connection = not seen.connections
                    seen.connections.add(conn.getpeername())
                if scenario == "reject" and first_connection:
                    reply = json.dumps({"error": {"message": "too large", "type": "invalid_request_error"}}).encode()
                    conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\n")
                    conn.sendall(b"content-length: %d\r\n\r\n%s" % (len(reply), reply))
                    return _reset(conn)
                if scenario == "endless":  # a chunked answer whose trailer never ends
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    )
                    conn.sendall(b"2\r\n{}\r\n0\r\nx-trailer: " + b"v" * (256 << 10))
                    time.sleep(3)
                    return None
                if scenario == "rstreused" and served and length > 1 << 20:
                    while len(buffer) < 65536:
                        buffer += _recv(conn)
                    return _reset(conn)
                while len(buffer) < length:
                    data = _recv(conn)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                seen.body_sizes.append(len(body))
                reply = json.dumps(completion(f"pong from {scenario}")).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(reply)
                )
                conn.sendall(reply)
                served += 1


def _recv(conn: socket.socket) -> bytes:
    try:
        return conn.recv(65536)
    except OSError:
        return b""


def _reset(conn: socket.socket) -> None:
    """Close with an RST (linger on, zero seconds) instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


@dataclass
class Authorities:
    """Two certificate authorities: ``ca`` signs nginx's certificate, ``other`` signs nothing we serve."""

    directory: Path
    ca: trustme.CA = field(default_factory=trustme.CA)
    other: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self) -> None:
        self.server = self.ca.issue_cert("127.0.0.1", "localhost")
        self.ca_file = self.directory / "ca.pem"
        self.other_file = self.directory / "other.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.other.cert_pem.write_to_path(str(self.other_file))
        self.cert_file = self.directory / "server.pem"
        self.key_file = self.directory / "server.key"
        self.server.private_key_pem.write_to_path(str(self.key_file))
        self.cert_file.write_bytes(b"".join(blob.bytes() for blob in self.server.cert_chain_pems))

    def hashed_dir(self) -> Path:
        """A directory in OpenSSL's hashed layout (as ``SSL_CERT_DIR`` wants) holding ``ca``."""
        folder = self.directory / "hashed"
        folder.mkdir(exist_ok=True)
        digest = subprocess.run(
            ["openssl", "x509", "-hash", "-noout", "-in", str(self.ca_file)], capture_output=True, text=True, check=True
        ).stdout.strip()
        shutil.copy(self.ca_file, folder / f"{digest}.0")
        return folder


class _Child:
    """A server program run in the foreground as our child, killed at the end."""

    process: subprocess.Popen[bytes]
    log: Path

    def _start(self, command: list[str], port: int) -> None:
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = self.log.read_text() if self.log.exists() else ""
                    raise RuntimeError(f"{command[0]} did not start: {log[-2000:]}") from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)


class Nginx(_Child):
    """nginx in front of the upstream: plain HTTP on ``port``, TLS on ``tls_port``.

    Locations: ``/`` proxies (gzip on, ``keepalive_timeout`` 1 s), ``/rate/`` proxies at 24 KB/s in 2 KB
    sends (``limit_rate``), ``/to-tls/`` redirects (308) to the same path on the TLS port, and on the TLS
    port ``/to-plain/`` redirects (308) down to plain HTTP.
    """

    KEEPALIVE = 1.0

    def __init__(self, directory: Path, upstream: Upstream, tls: Authorities) -> None:
        self.directory = directory
        self.port, self.tls_port = free_port(), free_port()
        self.log = directory / "error.log"
        for temp in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (directory / temp).mkdir(exist_ok=True)
        locations = f"""
            location / {{ proxy_pass http://upstream; }}
            location /rate/ {{
                proxy_pass http://upstream/; limit_rate 24k; sendfile_max_chunk 2k; proxy_buffering on; gzip off;
            }}
            location ~ ^/to-tls/(.*)$ {{ return 308 https://127.0.0.1:{self.tls_port}/$1; }}
            location ~ ^/to-plain/(.*)$ {{ return 308 http://127.0.0.1:{self.port}/$1; }}
        """
        temps = " ".join(f"{kind}_temp_path {directory / name};" for kind, name in _TEMPS)
        conf = f"""
            daemon off;
            master_process off;
            pid {directory / "nginx.pid"};
            error_log {self.log} warn;
            events {{ worker_connections 4096; }}
            http {{
                access_log off;
                {temps}
                client_max_body_size 256m;
                keepalive_timeout {self.KEEPALIVE:g}s;
                gzip on;
                gzip_types application/json text/event-stream;
                gzip_min_length 1;
                gzip_proxied any;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_buffering off;
                upstream upstream {{ server 127.0.0.1:{upstream.port}; keepalive 16; }}
                server {{ listen 127.0.0.1:{self.port}; {locations} }}
                server {{
                    listen 127.0.0.1:{self.tls_port} ssl;
                    ssl_certificate {tls.cert_file};
                    ssl_certificate_key {tls.key_file};
                    {locations}
                }}
            }}
        """
        (directory / "nginx.conf").write_text(conf)
        command = [
            which("nginx") or "nginx",
            "-p",
            str(directory),
            "-e",
            str(self.log),
            "-c",
            str(directory / "nginx.conf"),
        ]
        self._start(command, self.port)

    def url(self, scenario: str, token: str, *, tls: bool = False, prefix: str = "") -> str:
        base = f"https://127.0.0.1:{self.tls_port}" if tls else f"http://127.0.0.1:{self.port}"
        return f"{base}{prefix}/{scenario}/{token}/v1"


_TEMPS = (("client_body", "body"), ("proxy", "proxy"), ("fastcgi", "fastcgi"), ("uwsgi", "uwsgi"), ("scgi", "scgi"))


class Tinyproxy(_Child):
    """tinyproxy on ``port``, logging every request (CONNECT included) to ``log``."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.log = directory / "tinyproxy.log"
        conf = directory / "tinyproxy.conf"
        conf.write_text(
            f"Port {self.port}\nListen 127.0.0.1\nTimeout 30\n"
            f'Allow 127.0.0.1\nLogFile "{self.log}"\nLogLevel Connect\nMaxClients 200\n'
        )
        self._start([which("tinyproxy") or "tinyproxy", "-d", "-c", str(conf)], self.port)

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def which(program: str) -> str | None:
    """``program`` on the PATH or in the system's sbin directories (nginx lives in /usr/sbin)."""
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/local/sbin:/sbin")


def iter_tokens() -> Iterator[str]:
    count = 0
    while True:
        count += 1
        yield f"t{os.getpid()}x{count}"
