"""The Chat Completions adapter's lean transport against raw HTTP/1.1 servers on 127.0.0.1.

The wire tests of the adapter run on the lean transport (the default); these add what only a raw
server can show: keep-alive reuse, a server that drops idle connections, close-delimited and
gzip bodies, chunk extensions and trailers, an interim ``100 Continue``, a configured proxy, and
that ``transport="sdk"`` and ``"lean"`` send the same request and read the same answer.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.models.openai_wire import chunk, completion, plain, stream
from tests.support.wire import WireServer, json_reply
from tooloop.errors import ConfigurationError, ProviderConnectionError, RateLimitError
from tooloop.events import TextDelta
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest, get_model
from tooloop.models.openai_chat import OpenAIChatModel

REQUEST = ModelRequest([UserMessage("hi")])
BODY = json.dumps(completion({"content": "Hello!"})).encode()
Answer = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]
"""Writes the response to one request (given its body); returns False to close the connection."""


class RawServer:
    """An asyncio HTTP/1.1 server whose answers are written byte by byte by the test."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                if not await self.answer(body, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(extra: bytes = b"") -> Answer:
    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n" % (len(BODY), extra)
        )
        writer.write(BODY)
        await writer.drain()
        return b"connection: close" not in extra

    return answer


@pytest.fixture
async def lean_models() -> AsyncIterator[list[OpenAIChatModel]]:
    made: list[OpenAIChatModel] = []
    yield made
    for model in made:
        await model.aclose()


@pytest.fixture
def make(lean_models: list[OpenAIChatModel]) -> Callable[..., OpenAIChatModel]:
    def make(url: str, **options: Any) -> OpenAIChatModel:
        options.setdefault("max_retries", 0)
        model = get_model("openai:gpt-4.1-mini", base_url=url, api_key="sk-test-key", **options)
        assert isinstance(model, OpenAIChatModel)
        lean_models.append(model)
        return model

    return make


async def test_one_connection_serves_every_turn(make: Callable[..., OpenAIChatModel]) -> None:
    async with RawServer(ok()) as server:
        model = make(server.url)
        for _ in range(3):
            assert (await model.respond(REQUEST)).text == "Hello!"
    assert server.connections == 1
    head = server.requests[0][0].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert "authorization: bearer sk-test-key\r\n" in head.lower()


async def test_connection_close_opens_a_new_connection_each_time(make: Callable[..., OpenAIChatModel]) -> None:
    async with RawServer(ok(b"connection: close\r\n")) as server:
        model = make(server.url)
        for _ in range(3):
            assert (await model.respond(REQUEST)).text == "Hello!"
    assert server.connections == 3


async def test_an_idle_connection_the_server_dropped_is_replaced_without_a_retry(
    make: Callable[..., OpenAIChatModel],
) -> None:
    async def answer_then_hang_up(body: bytes, writer: asyncio.StreamWriter) -> bool:
        await ok()(body, writer)
        return False  # keep-alive was promised, but the server closes after each answer

    async with RawServer(answer_then_hang_up) as server:
        model = make(server.url)  # max_retries=0: a lost idle connection is not a failed attempt
        for pause in (0, 0.05, 0, 0.05):  # the hang-up seen before the next request, or only while sending it
            assert (await model.respond(REQUEST)).text == "Hello!"
            await asyncio.sleep(pause)
    assert server.connections == 4
    assert len(server.requests) == 4


async def test_close_delimited_gzip_body(make: Callable[..., OpenAIChatModel]) -> None:
    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n\r\n")
        writer.write(gzip.compress(BODY))
        return False

    async with RawServer(answer) as server:
        model = make(server.url)
        assert (await model.respond(REQUEST)).text == "Hello!"
        assert (await model.respond(REQUEST)).text == "Hello!"
    assert b"accept-encoding: gzip, deflate" in server.requests[0][0].lower()


async def test_interim_100_continue_then_chunked_with_extensions_and_trailers(
    make: Callable[..., OpenAIChatModel],
) -> None:
    events = [chunk({"role": "assistant", "content": "Hel"}), chunk({"content": "lo!"}), chunk({}, "stop")]
    data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"

    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(0, len(data), 7):  # pieces that cut lines, JSON and UTF-8 anywhere
            piece = data[i : i + 7]
            writer.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\nx-trailer: yes\r\n\r\n")
        return True

    async with RawServer(answer) as server:
        model = make(server.url)
        for _ in range(2):
            response = await model.respond(REQUEST, lambda event: None)
            assert response.text == "Hello!"
    assert server.connections == 1


async def test_a_configured_proxy_is_used_through_the_sdk(
    make: Callable[..., OpenAIChatModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with RawServer(ok()) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        model = make("http://api.example.invalid/v1")
        assert (await model.respond(REQUEST)).text == "Hello!"
    # the request line of a request through a proxy carries the absolute URL
    assert proxy.requests[0][0].startswith(b"POST http://api.example.invalid/v1/chat/completions HTTP/1.1")


async def test_a_server_that_is_down_is_named(make: Callable[..., OpenAIChatModel]) -> None:
    async with RawServer(ok()) as server:
        url = server.url
    with pytest.raises(ProviderConnectionError) as info:
        await make(url, max_retries=1).respond(REQUEST)
    assert url in str(info.value)
    assert "2 attempts" in str(info.value)


def test_the_lean_path_does_not_load_the_sdk() -> None:
    code = (
        "import sys; from tooloop import get_model; "
        "get_model('openai-compatible:m', base_url='http://127.0.0.1:9/v1'); "
        "assert 'openai' not in sys.modules and 'httpx2' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_unknown_transport_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="transport must be 'lean' or 'sdk'"):
        get_model("openai:gpt-4.1-mini", api_key="k", transport="curl")


@pytest.mark.parametrize("mode", ["plain", "stream"])
async def test_both_transports_send_and_read_the_same(
    wire: WireServer, make: Callable[..., OpenAIChatModel], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    streamed = stream(chunk({"role": "assistant", "content": "Hi "}), chunk({"content": "there"}), chunk({}, "stop"))
    answers = {}
    for transport in ("sdk", "lean"):
        wire.queue(streamed if mode == "stream" else plain(completion({"content": "Hi there"})))
        model = make(wire.url + "/v1", transport=transport)
        response = await model.respond(REQUEST, (lambda e: None) if mode == "stream" else None)
        answers[transport] = (response.text, response.stop_reason)
    sdk, lean = wire.requests
    assert sdk.json == lean.json
    assert sdk.path == lean.path
    same = {"authorization", "content-type", "accept", "x-stainless-retry-count", "openai-organization"}
    assert {k: sdk.headers.get(k) for k in same} == {k: lean.headers.get(k) for k in same}
    assert answers["sdk"] == answers["lean"] == ("Hi there", answers["sdk"][1])
    assert lean.headers["openai-organization"] == "org-123"
    assert lean.headers["user-agent"].startswith("tooloop/")


@pytest.mark.parametrize("transport", ["sdk", "lean"])
async def test_both_transports_retry_a_429_then_give_the_same_error(
    wire: WireServer, make: Callable[..., OpenAIChatModel], transport: str
) -> None:
    limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    wire.queue(*[json_reply(limited, 429, {"retry-after-ms": "5"})] * 2)
    with pytest.raises(RateLimitError) as info:
        await make(wire.url + "/v1", transport=transport, max_retries=1).respond(REQUEST)
    assert len(wire.requests) == 2
    assert [r.headers["x-stainless-retry-count"] for r in wire.requests] == ["0", "1"]
    assert info.value.retry_after == pytest.approx(0.005)
    assert "Rate limit reached" in str(info.value)


async def test_a_model_dropped_without_aclose_closes_its_idle_connections(wire: WireServer) -> None:
    import gc
    import warnings

    wire.queue(plain(completion({"role": "assistant", "content": "hi"})))
    model = get_model("openai-compatible:m", base_url=wire.url, api_key="k", max_retries=0)
    assert (await model.respond(ModelRequest([UserMessage("hi")]))).text == "hi"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del model
        gc.collect()
    assert not [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


HELLO_STREAM = _sse(chunk({"role": "assistant", "content": "Hel"}), chunk({"content": "lo!"}), chunk({}, "stop"))


async def test_a_stream_with_a_content_length_gives_its_connection_back(make: Callable[..., OpenAIChatModel]) -> None:
    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(HELLO_STREAM)
        )
        for i in range(0, len(HELLO_STREAM), 50):  # the body in pieces, [DONE] in the last
            writer.write(HELLO_STREAM[i : i + 50])
            await writer.drain()
        return True

    async with RawServer(answer) as server:
        model = make(server.url)
        deltas: list[object] = []
        for _ in range(3):
            assert (await model.respond(REQUEST, deltas.append)).text == "Hello!"
    assert server.connections == 1
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Hello!" * 3


async def test_a_stream_left_open_after_done_ends_at_done_and_its_connection_is_not_reused(
    make: Callable[..., OpenAIChatModel],
) -> None:
    release = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writers.append(writer)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n" % (len(HELLO_STREAM), HELLO_STREAM))
        await writer.drain()
        await release.wait()  # the body is not ended while the client waits
        return False

    async with RawServer(answer) as server:
        model = make(server.url)
        for _ in range(2):  # the drain after [DONE] gives up after half a second, not the 120 s idle timeout
            response = await asyncio.wait_for(model.respond(REQUEST, lambda event: None), 10)
            assert response.text == "Hello!"
        assert server.connections == 2
        release.set()

        async def closed() -> None:
            while not all(writer.is_closing() for writer in writers):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(closed(), 10)


async def test_header_names_and_values_in_any_case_frame_the_body(make: Callable[..., OpenAIChatModel]) -> None:
    # Framing is read from the head without building a header dict: case must not matter.
    compressed = gzip.compress(BODY)

    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200\r\nContent-Type: application/json\r\nCONTENT-ENCODING: GZip\r\n"
            b"Content-Length:   %d  \r\nX-Request-Id: abc\r\n\r\n" % len(compressed)
        )
        writer.write(compressed)
        return True

    async with RawServer(answer) as server:
        model = make(server.url)
        assert (await model.respond(REQUEST)).text == "Hello!"
        assert (await model.respond(REQUEST)).text == "Hello!"
    assert server.connections == 1  # the length framed the body, so the connection was kept


async def test_connection_close_in_any_case_is_obeyed_and_chunked_in_any_case_is_read(
    make: Callable[..., OpenAIChatModel],
) -> None:
    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nConnection: Close\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY))
        return False

    async with RawServer(answer) as server:
        model = make(server.url)
        assert (await model.respond(REQUEST)).text == "Hello!"
        assert (await model.respond(REQUEST)).text == "Hello!"
    assert server.connections == 2


async def test_a_bad_content_length_or_status_line_is_a_connection_error(make: Callable[..., OpenAIChatModel]) -> None:
    for head in (b"HTTP/1.1 200 OK\r\ncontent-length: lots\r\n\r\n", b"HTTX/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"):

        async def answer(body: bytes, writer: asyncio.StreamWriter, head: bytes = head) -> bool:
            writer.write(head + b"{}")
            return False

        async with RawServer(answer) as server:
            with pytest.raises(ProviderConnectionError):
                await make(server.url).respond(REQUEST)


async def test_error_answers_still_expose_every_header(make: Callable[..., OpenAIChatModel]) -> None:
    error = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()

    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nX-Thing: a\r\nx-thing: b\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(error), error)
        )
        return True

    async with RawServer(answer) as server:
        with pytest.raises(RateLimitError) as caught:
            await make(server.url).respond(REQUEST)
    assert caught.value.retry_after == 7
