"""Fixtures of the transport suite: real servers (started once per session) and models on both transports.

Every test takes ``transport`` and so runs twice: on the default transport and on the SDK's
(``transport="sdk"``), against the same servers.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.transport.servers import Authorities, Nginx, RawPeer, Tinyproxy, Upstream, which
from tooloop.models import get_model
from tooloop.models.base import Model

KEY = "sk-transport-test-0123456789"

_ENVIRONMENT = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or trust settings from the machine leak into a test."""
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture(params=["default", "sdk"])
def transport(request: pytest.FixtureRequest) -> str:
    """The transport under test: ``default`` (no ``transport`` option) or ``sdk``."""
    return str(request.param)


@pytest.fixture
def token() -> str:
    """A name for this test's requests, so the servers count them apart from other tests'."""
    return uuid.uuid4().hex[:12]


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def raw_peer() -> Iterator[RawPeer]:
    peer = RawPeer()
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def authorities(tmp_path_factory: pytest.TempPathFactory) -> Authorities:
    return Authorities(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def nginx(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream, authorities: Authorities) -> Iterator[Nginx]:
    if which("nginx") is None:
        pytest.skip("nginx is not installed (.ci/run installs it)")
    server = Nginx(tmp_path_factory.mktemp("nginx"), upstream, authorities)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tinyproxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tinyproxy]:
    if which("tinyproxy") is None:
        pytest.skip("tinyproxy is not installed (.ci/run installs it)")
    proxy = Tinyproxy(tmp_path_factory.mktemp("tinyproxy"))
    yield proxy
    proxy.stop()


@pytest.fixture
async def make(transport: str) -> AsyncIterator[Callable[..., Model]]:
    """``make(base_url, **options)``: an OpenAI Chat model on the transport under test, closed at the end."""
    made: list[Model] = []

    def build(base_url: str, **options: Any) -> Model:
        options.setdefault("api_key", KEY)
        options.setdefault("max_retries", 0)
        options.setdefault("timeout", 5.0)
        if transport != "default":
            options["transport"] = transport
        model = get_model("openai:gpt-4.1-mini", base_url=base_url, **options)
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()
