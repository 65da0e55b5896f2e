"""How the transport opens connections, on real sockets: addresses looked up once per host name and
shared, the same errors (and words) as asyncio's own connect, a connect timeout that leaves nothing open,
TLS checked against the host name."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.transport.servers import Authorities, Nginx, Upstream, unanswered_port
from tooloop.transport import connect as connecting
from tooloop.transport.http import ConnectTimeout, Endpoint, Pool, TransportError

HEAD = b"POST /x HTTP/1.1\r\nhost: test\r\ncontent-length: 2\r\n\r\n"
Make = Callable[..., Any]


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(2)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


@pytest.fixture
async def port() -> AsyncIterator[int]:
    """A local server answering ``ok`` to every request, on kept-alive connections."""
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _count_lookups(monkeypatch: pytest.MonkeyPatch, answer: list[Any] | None = None, delay: float = 0) -> list[str]:
    """Record every ``getaddrinfo`` the running loop makes (its answer replaced by ``answer`` if given)."""
    loop = asyncio.get_running_loop()
    looked_up: list[str] = []
    real = loop.getaddrinfo

    async def getaddrinfo(host: Any, port: Any, **options: Any) -> Any:
        looked_up.append(host)
        await asyncio.sleep(delay)
        return answer if answer is not None else await real(host, port, **options)

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    return looked_up


async def _open_many(pool: Pool, n: int) -> None:
    """``n`` requests at once, each on a connection of its own (none is idle to share)."""
    responses = await asyncio.gather(*(pool.request(HEAD, b"{}") for _ in range(n)))
    assert [await response.read() for response in responses] == [b"ok"] * n


async def test_numeric_and_named_hosts_answer_and_a_name_is_looked_up_once_for_a_burst(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up = _count_lookups(monkeypatch)
    numeric = Pool(Endpoint.parse(f"http://127.0.0.1:{port}"), connect_timeout=5, read_timeout=5)
    named = Pool(Endpoint.parse(f"http://localhost:{port}"), connect_timeout=5, read_timeout=5)
    await _open_many(numeric, 20)
    await _open_many(named, 20)
    assert looked_up == ["localhost"]  # twenty new connections, one lookup; none for the address
    await numeric.aclose()
    await named.aclose()


async def test_a_name_is_looked_up_again_after_its_time_and_after_a_failure(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up = _count_lookups(monkeypatch)
    monkeypatch.setattr(connecting, "TTL", 1.0)  # the two bursts fit in it on a loaded machine too
    pool = Pool(Endpoint.parse(f"http://localhost:{port}"), connect_timeout=5, read_timeout=5)
    await _open_many(pool, 2)
    await _open_many(pool, 3)  # new connections within the time: no lookup
    assert len(looked_up) == 1
    await asyncio.sleep(1.1)
    await _open_many(pool, 6)
    assert len(looked_up) == 2
    await pool.aclose()

    dead = Pool(Endpoint.parse(f"http://localhost:{_unused_port()}"), connect_timeout=5, read_timeout=5)
    for _ in range(2):  # nothing there: the next connection looks again (the name may have moved)
        with pytest.raises(TransportError, match="could not connect"):
            await dead.request(HEAD, b"{}")
    assert len(looked_up) == 4


async def test_a_connection_given_up_during_the_lookup_leaves_it_to_the_others(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up = _count_lookups(monkeypatch, delay=0.2)
    pool = Pool(Endpoint.parse(f"http://localhost:{port}"), connect_timeout=5, read_timeout=5)
    first = asyncio.ensure_future(pool.request(HEAD, b"{}"))
    second = asyncio.ensure_future(pool.request(HEAD, b"{}"))
    while not looked_up:  # the lookup is under way (it lasts 0.2 s): cut the first connection now
        await asyncio.sleep(0)
    first.cancel()
    assert await (await second).read() == b"ok"
    assert first.cancelled() and looked_up == ["localhost"]
    await pool.aclose()


async def _asyncio_error(host: str, port: int) -> str:
    """The error asyncio's own connect gives for ``host:port``."""
    loop = asyncio.get_running_loop()
    with pytest.raises(OSError) as caught:
        await loop.create_connection(asyncio.Protocol, host, port)
    return str(caught.value)


async def _our_error(host: str, port: int) -> TransportError:
    pool = Pool(Endpoint.parse(f"http://{host}:{port}"), connect_timeout=5, read_timeout=5)
    with pytest.raises(TransportError) as caught:
        await pool.request(HEAD, b"{}")
    return caught.value


async def test_a_refused_connection_fails_with_asyncios_words(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _unused_port()
    error = await _our_error("127.0.0.1", port)
    assert isinstance(error.__cause__, ConnectionRefusedError)
    assert str(error) == f"could not connect to http://127.0.0.1:{port}: {error.__cause__.strerror}"
    assert str(error.__cause__) == await _asyncio_error("127.0.0.1", port)

    # a name with two addresses, both refusing: both reasons, as asyncio joins them
    other = _unused_port()
    two = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", p)) for p in (port, other)]
    _count_lookups(monkeypatch, two)
    error = await _our_error("somewhere.test", 443)
    assert str(error.__cause__) == await _asyncio_error("somewhere.test", 443)
    assert f"('127.0.0.1', {port})" in str(error) and f"('127.0.0.1', {other})" in str(error)


async def test_the_next_address_is_tried_when_one_refuses(port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    two = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", p)) for p in (_unused_port(), port)]
    _count_lookups(monkeypatch, two)
    pool = Pool(Endpoint.parse("http://somewhere.test"), connect_timeout=5, read_timeout=5)
    assert await (await pool.request(HEAD, b"{}")).read() == b"ok"
    await pool.aclose()


async def test_a_name_that_does_not_resolve_says_so() -> None:
    error = await _our_error("no-such-host.invalid", 80)
    assert isinstance(error.__cause__, socket.gaierror)
    assert str(error) == f"could not connect to http://no-such-host.invalid:80: {error.__cause__.strerror}"


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_a_connect_timeout_closes_the_half_open_socket() -> None:
    with unanswered_port() as port:
        before = _open_descriptors()
        pool = Pool(Endpoint.parse(f"http://127.0.0.1:{port}"), connect_timeout=0.3, read_timeout=5)
        for _ in range(3):
            with pytest.raises(ConnectTimeout, match=r"could not connect to .* within 0.3 s"):
                await pool.request(HEAD, b"{}")
        assert _open_descriptors() == before
        assert pool._open_count == 0


async def test_tls_to_a_host_name_is_checked_against_that_name(
    make: Make, nginx: Nginx, upstream: Upstream, authorities: Authorities, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.transport.test_parity import ask

    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.ca_file))
    url = f"https://localhost:{nginx.tls_port}/ok/{token}/v1"  # the certificate names localhost and 127.0.0.1
    assert (await ask(make(url), False)).text == "pong from ok"
    assert upstream.seen[token].hits == 1


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_a_large_upload_to_a_slow_reader_arrives_whole_and_closing_ends_every_connection() -> None:
    body = os.urandom(6 * 1024 * 1024)  # far more than the kernel's socket buffers: most of it waits in ours
    ended = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal ended
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                digest = hashlib.sha256()
                while length:
                    piece = await reader.read(min(length, 65536))
                    digest.update(piece)
                    length -= len(piece)
                    await asyncio.sleep(0.001)  # a slow reader: the client's writes pause and resume
                answer = digest.hexdigest().encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer))
        except asyncio.IncompleteReadError:  # the client closed the connection
            ended += 1
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    before = _open_descriptors()
    pool = Pool(Endpoint.parse(f"http://127.0.0.1:{port}"), connect_timeout=5, read_timeout=5)
    head = b"POST /x HTTP/1.1\r\nhost: test\r\ncontent-length: %d\r\n\r\n" % len(body)
    answers = await asyncio.gather(*(pool.request(head, body) for _ in range(3)))
    assert [await answer.read() for answer in answers] == [hashlib.sha256(body).hexdigest().encode()] * 3
    await pool.aclose()
    deadline = time.monotonic() + 10  # the server's ends of the connections close a few loop turns later
    while (ended < 3 or _open_descriptors() != before) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert ended == 3  # each connection's server side saw its end
    assert _open_descriptors() == before
    server.close()
    await server.wait_closed()
