"""The transport alone, on an in-memory stand-in for the network: framing, keep-alive, the retry
policy, the transport's errors and SSE, through the same code a socket goes through."""

from __future__ import annotations

import gc
import json

import pytest

from tooloop.transport.client import Client, StatusError
from tooloop.transport.memory import MemoryRequest, MemoryResponse, MemoryTransport
from tooloop.transport.retry import RetryPolicy
from tooloop.transport.sse import SSEDecoder


def _client(transport: MemoryTransport, retries: int = 2) -> Client:
    return Client(
        "http://api.test/v1",
        {"Authorization": "Bearer k", "Content-Type": "application/json"},
        retry=RetryPolicy(retries),
        connect_timeout=1,
        read_timeout=2,
        attempt_header="x-attempt",
        connector=transport.connect,
    )


async def test_a_json_post_is_framed_as_a_server_reads_it_and_the_answer_parsed() -> None:
    transport = MemoryTransport(lambda request: MemoryResponse(200, body=b'{"answer": "\\u00e9"}'))
    client = _client(transport)
    assert await client.post_json("/chat/completions", {"q": "é"}) == {"answer": "é"}
    [request] = transport.requests
    assert (request.method, request.target) == ("POST", "/v1/chat/completions")
    assert request.headers["host"] == "api.test"
    assert request.headers["authorization"] == "Bearer k"
    assert request.headers["x-attempt"] == "0"
    assert json.loads(request.body) == {"q": "é"}
    assert int(request.headers["content-length"]) == len(request.body)
    await client.aclose()


async def test_requests_in_turn_share_one_kept_alive_connection() -> None:
    transport = MemoryTransport(lambda request: MemoryResponse(200, body=b"{}"))
    client = _client(transport)
    for _ in range(3):
        assert await client.post_json("/x", {}) == {}
    assert transport.connections == 1
    assert [r.connection for r in transport.requests] == [1, 1, 1]
    await client.aclose()


async def test_a_retryable_status_is_tried_again_after_the_wait_the_server_asked() -> None:
    answers = iter(
        [
            MemoryResponse(503, {"retry-after-ms": "1"}, b'{"error": {"message": "busy"}}'),
            MemoryResponse(429, {"retry-after-ms": "1"}, b"{}"),
            MemoryResponse(200, body=b'{"ok": true}'),
        ]
    )
    transport = MemoryTransport(lambda request: next(answers))
    assert await _client(transport).post_json("/x", {}) == {"ok": True}
    assert [r.headers["x-attempt"] for r in transport.requests] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("status", "headers", "attempts"),
    [
        (400, {}, 1),  # a bad request is not retried
        (500, {"x-should-retry": "false"}, 1),  # the server said no
        (429, {"retry-after": "3600"}, 1),  # a wait longer than the policy obeys is the caller's decision
        (500, {"retry-after-ms": "1"}, 3),  # retried until the retries are spent
    ],
)
async def test_the_retry_policy_decides_from_the_status_and_the_headers(
    status: int, headers: dict[str, str], attempts: int
) -> None:
    body = b'{"error": {"message": "no", "type": "invalid_request_error"}}'
    transport = MemoryTransport(lambda request: MemoryResponse(status, headers, body))
    with pytest.raises(StatusError) as caught:
        await _client(transport).post_json("/x", {})
    assert len(transport.requests) == attempts
    error = caught.value
    assert (error.status, error.body, error.message) == (
        status,
        {"message": "no", "type": "invalid_request_error"},
        f"Error code: {status} - no",
    )
    assert error.headers is not None and all(error.headers[k] == v for k, v in headers.items())


async def test_an_error_body_that_is_not_json_is_kept_as_text() -> None:
    transport = MemoryTransport(lambda request: MemoryResponse(404, body=b"<html>not here</html>"))
    with pytest.raises(StatusError) as caught:
        await _client(transport).post_json("/x", {})
    assert (caught.value.document, caught.value.message) == ("<html>not here</html>", "Error code: 404")


async def test_a_chunked_stream_arrives_piece_by_piece_and_decodes_into_events() -> None:
    pieces = [b'data: {"n": 1}\n\n', b'data: {"n"', b": 2}\n\nevent: end\ndata: [DONE]\n\n"]
    transport = MemoryTransport(lambda request: MemoryResponse(200, {"content-type": "text/event-stream"}, pieces))
    client = _client(transport)
    response = await client.post("/stream", {"stream": True})
    decoder = SSEDecoder()
    events = []
    while piece := await response.piece():
        events += decoder.feed(piece)
    assert events == [(None, b'{"n": 1}'), (None, b'{"n": 2}'), ("end", b"[DONE]")]
    again = await client.post("/stream", {"stream": True})  # the connection went back to the pool
    assert b"".join([piece async for piece in again.iter_bytes()]) == b"".join(pieces)
    assert [r.connection for r in transport.requests] == [1, 1]
    await client.aclose()


async def test_a_handler_may_answer_later() -> None:
    async def later(request: MemoryRequest) -> MemoryResponse:
        return MemoryResponse(200, body=request.body)

    transport = MemoryTransport(later)
    assert await _client(transport).post_json("/echo", {"same": [1, 2]}) == {"same": [1, 2]}


async def test_responses_leave_no_garbage_for_the_cyclic_collector() -> None:
    # At a thousand concurrent conversations every object a request leaves in a reference cycle
    # waits for the cyclic collector, which then walks everything alive: CPU and memory.
    transport = MemoryTransport(lambda request: MemoryResponse(200, body=b'{"a": 1}'))
    client = _client(transport)
    assert await client.post_json("/x", {}) == {"a": 1}
    gc.collect()
    gc.disable()
    try:
        for _ in range(10):
            assert await client.post_json("/x", {}) == {"a": 1}
            response = await client.post("/x", {})
            while await response.piece():
                pass
        assert gc.collect() == 0
    finally:
        gc.enable()
    await client.aclose()
