"""The default transport behaves as the SDK's on the real wire: nginx, uvicorn + sse-starlette, raw sockets.

Each test runs on both transports (the ``transport`` fixture) against the same real servers.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from tests.transport.conftest import KEY
from tests.transport.servers import BASIC_PASSWORD, BASIC_USER, Authorities, Nginx, RawPeer, Upstream, unanswered_port
from tooloop.errors import ConfigurationError, ProviderError, ProviderOverloadedError, ProviderTimeoutError
from tooloop.messages import ModelResponse, UserMessage
from tooloop.models import ModelRequest

REQUEST = ModelRequest([UserMessage("ping")])
Make = Callable[..., Any]


def big(megabytes: int) -> ModelRequest:
    """A request whose body is ``megabytes`` long: a long conversation."""
    return ModelRequest([UserMessage("x" * (megabytes << 20))])


async def ask(model: Any, streamed: bool, request: ModelRequest = REQUEST) -> ModelResponse:
    """One answer, streamed (someone listens) or plain."""
    response: ModelResponse = await model.respond(request, (lambda event: None) if streamed else None)
    return response


def everything(exc: BaseException) -> str:
    """The error as a user may see it: its text, its repr, and the whole chain as a traceback prints it."""
    return f"{exc}\n{exc!r}\n" + "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("streamed", [False, True])
async def test_answers_through_nginx_with_gzip(
    make: Make, nginx: Nginx, upstream: Upstream, token: str, streamed: bool
) -> None:
    model = make(nginx.url("ok", token))
    assert (await ask(model, streamed)).text == "pong from ok"
    assert "gzip" in upstream.seen[token].headers[0]["accept-encoding"]


async def test_reuses_connections_after_nginx_keepalive_timeout_closed_them(
    make: Make, nginx: Nginx, upstream: Upstream, token: str
) -> None:
    model = make(nginx.url("ok", token))
    assert (await ask(model, False)).text == "pong from ok"
    await asyncio.sleep(nginx.KEEPALIVE + 0.4)  # nginx has closed the idle connection by now
    assert (await ask(model, True)).text == "pong from ok"
    assert (await ask(model, False)).text == "pong from ok"
    assert upstream.seen[token].hits == 3


# 1. every write is bounded like every read


async def test_upload_to_a_peer_that_stops_reading_times_out(make: Make, upstream: Upstream, token: str) -> None:
    model = make(upstream.url("sink", token), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(ProviderTimeoutError):
        await ask(model, False, big(32))
    assert time.monotonic() - started < 6


async def test_a_server_that_never_takes_the_connection_is_a_connect_timeout_not_silence(make: Make) -> None:
    with unanswered_port() as port:
        model = make(f"http://127.0.0.1:{port}/v1", timeout=0.5)
        with pytest.raises(ProviderTimeoutError) as caught:
            await ask(model, False)
    assert "did not accept a connection" in str(caught.value)
    assert "sent nothing" not in str(caught.value)


# 2. errors while sending are transport errors, retried on a fresh connection


async def test_reset_during_upload_on_a_reused_connection_is_retried_on_a_fresh_one(
    make: Make, raw_peer: RawPeer, token: str
) -> None:
    model = make(raw_peer.url("rstreused", token), max_retries=2)
    assert (await ask(model, False)).text == "pong from rstreused"
    assert (await ask(model, False, big(4))).text == "pong from rstreused"
    seen = raw_peer.seen[token]
    assert len(seen.connections) == 2 and seen.body_sizes[-1] > 4 << 20


async def test_413_then_reset_before_the_body_was_read_is_retried(make: Make, raw_peer: RawPeer, token: str) -> None:
    model = make(raw_peer.url("reject", token), max_retries=2)
    assert (await ask(model, False, big(4))).text == "pong from reject"
    assert len(raw_peer.seen[token].connections) == 2


# 3. a plain body is timed per read (idle), not as a whole


@pytest.mark.parametrize("streamed", [False, True])
async def test_rate_limited_gateway_body_is_timed_per_read_not_as_a_whole(
    make: Make, nginx: Nginx, token: str, streamed: bool
) -> None:
    model = make(nginx.url("padded", token, prefix="/rate"), timeout=0.8)
    started = time.monotonic()
    assert (await ask(model, streamed)).text.startswith("pong from padded")
    assert time.monotonic() - started > 1.2  # longer than the idle timeout, while bytes kept flowing


async def test_slow_plain_body_is_timed_per_read(make: Make, upstream: Upstream, token: str) -> None:
    model = make(upstream.url("slow", token), timeout=1.0)
    assert (await ask(model, False)).text == "pong from slow"


# 4. redirects


@pytest.mark.parametrize("status", [307, 308])
async def test_follows_307_and_308_with_the_same_method_and_body(
    make: Make, upstream: Upstream, token: str, status: int
) -> None:
    model = make(upstream.url(f"redirect{status}", token))
    assert (await ask(model, True)).text == "pong from ok"
    seen = upstream.seen[token]
    assert seen.hits == 2 and seen.body_sizes[0] == seen.body_sizes[1]
    assert seen.headers[1]["authorization"] == f"Bearer {KEY}"


async def test_follows_an_http_to_https_redirect_at_the_gateway(
    make: Make, nginx: Nginx, upstream: Upstream, authorities: Authorities, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.ca_file))
    model = make(nginx.url("ok", token, prefix="/to-tls"))
    assert (await ask(model, False)).text == "pong from ok"
    # another origin (the port changed): the key stays behind, as httpx leaves it
    assert "authorization" not in upstream.seen[token].headers[0]


async def test_a_redirect_from_https_down_to_http_never_carries_the_key(
    make: Make,
    transport: str,
    nginx: Nginx,
    upstream: Upstream,
    authorities: Authorities,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.ca_file))
    model = make(nginx.url("ok", token, tls=True, prefix="/to-plain"))
    if transport == "default":  # refused outright, with the reason
        with pytest.raises(ProviderError, match="https to http"):
            await ask(model, False)
        assert upstream.seen[token].hits == 0
    else:  # httpx follows it without the Authorization header
        await ask(model, False)
        assert "authorization" not in upstream.seen[token].headers[0]


async def test_a_redirect_loop_ends_with_a_clear_error(make: Make, upstream: Upstream, token: str) -> None:
    model = make(upstream.url("loop", token))
    with pytest.raises(ProviderError, match="redirect") as caught:
        await ask(model, False)
    assert not isinstance(caught.value, ProviderOverloadedError)
    assert upstream.seen[token].hits <= 21


# 5. credentials in the base URL


@pytest.mark.parametrize("streamed", [False, True])
async def test_credentials_in_the_base_url_are_sent_as_basic_auth(
    make: Make, upstream: Upstream, token: str, streamed: bool
) -> None:
    url = upstream.url("basic", token).replace("://", f"://{quote(BASIC_USER)}:{quote(BASIC_PASSWORD, safe='')}@")
    model = make(url)
    assert (await ask(model, streamed)).text == "pong from basic"


# 6. TLS trust is built as httpx builds it


async def test_ssl_cert_file_naming_the_servers_ca_is_trusted(
    make: Make, nginx: Nginx, authorities: Authorities, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.ca_file))
    assert (await ask(make(nginx.url("ok", token, tls=True)), True)).text == "pong from ok"


async def test_ssl_cert_dir_alone_is_trusted(
    make: Make, nginx: Nginx, authorities: Authorities, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_DIR", str(authorities.hashed_dir()))
    assert (await ask(make(nginx.url("ok", token, tls=True)), False)).text == "pong from ok"


async def test_ssl_cert_file_trusts_only_that_file(
    make: Make, nginx: Nginx, upstream: Upstream, authorities: Authorities, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SSL_CERT_DIR holds the server's CA, but SSL_CERT_FILE wins and names another: nothing else is trusted
    monkeypatch.setenv("SSL_CERT_DIR", str(authorities.hashed_dir()))
    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.other_file))
    with pytest.raises(ProviderError, match=r"(?i)certificate"):
        await ask(make(nginx.url("ok", token, tls=True)), False)
    assert upstream.seen[token].hits == 0


async def test_a_private_ca_is_not_trusted_by_default(make: Make, nginx: Nginx, upstream: Upstream, token: str) -> None:
    with pytest.raises(ProviderError, match=r"(?i)certificate"):
        await ask(make(nginx.url("ok", token, tls=True)), False)
    assert upstream.seen[token].hits == 0


# 8. header values are checked where they are given, and the key is never printed


def test_a_header_value_with_cr_lf_is_refused_before_anything_is_sent(
    transport: str, upstream: Upstream, token: str
) -> None:
    from tooloop.models import get_model

    options = {} if transport == "default" else {"transport": transport}
    with pytest.raises(ConfigurationError, match="x-team") as caught:
        get_model(
            "openai:gpt-4.1-mini",
            base_url=upstream.url("ok", token),
            api_key=KEY,
            default_headers={"x-team": "eval\r\nx-smuggled: 1"},
            **options,
        )
    assert "x-smuggled" not in str(caught.value)
    assert upstream.seen[token].hits == 0


def test_an_api_key_with_a_trailing_newline_is_refused_without_printing_it(transport: str, upstream: Upstream) -> None:
    from tooloop.models import get_model

    options = {} if transport == "default" else {"transport": transport}
    with pytest.raises(ConfigurationError, match=r"(?i)api key") as caught:
        get_model("openai:gpt-4.1-mini", base_url=upstream.url("ok", "x"), api_key=KEY + "\n", **options)
    assert KEY not in everything(caught.value)


# 9. SSE with lone CR line endings


async def test_sse_with_lone_cr_line_endings_is_read(make: Make, upstream: Upstream, token: str) -> None:
    assert (await ask(make(upstream.url("lonecr", token)), True)).text == "pong from lonecr"


# 10. raw deflate


@pytest.mark.parametrize("streamed", [False, True])
async def test_raw_deflate_body_is_decoded(make: Make, upstream: Upstream, token: str, streamed: bool) -> None:
    assert (await ask(make(upstream.url("deflate", token)), streamed)).text == "pong from deflate"


async def test_an_endless_trailer_is_an_error_not_a_hang(make: Make, raw_peer: RawPeer, token: str) -> None:
    model = make(raw_peer.url("endless", token), timeout=2.0)
    started = time.monotonic()
    with pytest.raises(ProviderError):
        await ask(model, False)
    assert time.monotonic() - started < 1.5  # refused by its size, before the idle timeout


# 11. 204 and 304 have no body


@pytest.mark.parametrize("status", [204, 304])
async def test_204_and_304_answers_fail_at_once_and_keep_the_connection(
    make: Make, upstream: Upstream, token: str, status: int
) -> None:
    model = make(upstream.url(f"status{status}", token), timeout=3.0)
    started = time.monotonic()
    for _ in range(2):
        with pytest.raises(ProviderError):
            await ask(model, False)
    assert time.monotonic() - started < 2
    assert upstream.seen[token].hits == 2 and len(upstream.seen[token].connections) == 1
