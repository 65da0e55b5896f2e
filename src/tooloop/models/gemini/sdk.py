"""The Gemini adapter's SDK path: ``genai.Client`` clients, the call, its answers as wire JSON, its errors.

Imported only when a model goes through ``google-genai`` (``transport="sdk"``, a ``client`` you
pass, or a proxy configured for the URL), so the lean path never loads the SDK. The adapter hands
over the request body it built in the wire format; here it becomes the SDK's ``contents`` and
``config`` (which accept the wire's camelCase names), and each answer goes back as the wire's
JSON, so one parser reads both paths.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from ...transport.client import SdkFallback, StatusError, StreamError
from ...transport.http import TransportError
from ...transport.perloop import PerLoop
from .chunks import Chunk, chunk_from

__all__ = ["SdkChannel", "arguments", "client_factory", "close_client", "generate", "stream", "translate"]

_API_VERSION = "v1beta"
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def client_factory(key: str, base_url: str | None, idle: float, deadline: str) -> Callable[[], genai.Client]:
    """Makes the ``genai.Client`` clients of one model (one per event loop).

    v1beta carries parametersJsonSchema / responseJsonSchema. The SDK's own retries stay off (no
    retry_options): the adapter's honour Retry-After and RetryInfo. The SDK turns ``timeout``
    into the client's timeout and into an ``X-Server-Timeout`` header; the header is set here to
    the adapter's generous server-side deadline.
    """
    options = genai_types.HttpOptions(
        base_url=base_url,
        api_version=_API_VERSION,
        timeout=int(idle * 1000),
        headers={"X-Server-Timeout": deadline},
    )
    return functools.partial(genai.Client, api_key=key, vertexai=False, http_options=options)


async def close_client(client: genai.Client) -> None:
    """Close one client's connections."""
    await client.aio.aclose()


def arguments(body: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's ``contents`` and ``config`` for a wire-format request body (``extra`` as the SDK's config names)."""
    config: dict[str, Any] = {"automatic_function_calling": {"disable": True}}
    for name, value in body.items():
        if name not in ("contents", "generationConfig"):
            config[_snake(name)] = value
    for name, value in body["generationConfig"].items():
        config[_snake(name)] = value
    config.update(extra)
    return {"contents": body["contents"], "config": config}


def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _wire(response: genai_types.GenerateContentResponse) -> dict[str, Any]:
    """An SDK response as the JSON the server sent (camelCase, bytes as URL-safe base64)."""
    data = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("sdkHttpResponse", None)
    return data


async def generate(client: genai.Client, model: str, args: Mapping[str, Any]) -> Any:
    """One plain request through the SDK (``args`` from :func:`arguments`); the answer as wire JSON."""
    return _wire(await client.aio.models.generate_content(model=model, **args))


async def stream(client: genai.Client, model: str, args: Mapping[str, Any]) -> AsyncIterator[Any]:
    """One streamed request through the SDK; its chunks as wire JSON."""
    chunks = await client.aio.models.generate_content_stream(model=model, **args)
    async for chunk in chunks:
        yield _wire(chunk)


def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Transport and timeout errors of the HTTP libraries the SDK may use (httpx, its fork httpx2)."""
    transport: list[type[Exception]] = []
    timeout: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        transport.append(module.HTTPError)
        timeout.append(module.TimeoutException)
    return tuple(transport), tuple(timeout)


_TRANSPORT_ERRORS, _TIMEOUT_ERRORS = _http_errors()


def translate(exc: Exception) -> Exception | None:
    """The transport's error for a ``google-genai`` exception (or its HTTP library's); None for any other."""
    if isinstance(exc, _TIMEOUT_ERRORS):
        return TransportError.timeout(exc)
    if isinstance(exc, _TRANSPORT_ERRORS):
        return TransportError.caused_by(exc)
    if isinstance(exc, genai_errors.APIError):
        if not isinstance(exc.code, int):
            return StreamError(exc.details)
        return StatusError(exc.code, getattr(exc.response, "headers", None), exc.details, str(exc))
    return None


class SdkEvents:
    """The chunks of one streamed answer through the SDK, as wire JSON, with the lean stream's members."""

    def __init__(self, chunks: AsyncIterator[Any]) -> None:
        self._chunks = chunks

    async def read(self, take: Callable[[list[Chunk]], None]) -> None:
        """Call ``take`` with each chunk (as a record), in order, until the end of the stream."""
        async for chunk in self._chunks:
            take([chunk_from(chunk)])

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks

    def close(self) -> None:
        """Nothing to drop: the SDK's stream lets its connection go when it is collected."""


class SdkChannel(SdkFallback):
    """The SDK fallback behind the transport's face: ``genai.Client`` clients (one per event loop)."""

    translate = staticmethod(translate)
    attempts = 1  # the SDK's retries stay off: the adapter retries
    """Requests one call makes: the adapter's retries are counted by the adapter."""

    def __init__(self, clients: PerLoop[genai.Client], model: str, base_url: str, read_timeout: float) -> None:
        super().__init__(clients)
        self._model = model
        self._base_url = base_url
        self.read_timeout = read_timeout

    @property
    def base_url(self) -> str:
        """The base URL as given."""
        return self._base_url

    def check_extra(self, extra: Mapping[str, Any]) -> None:
        """Every ``settings.extra`` field is the SDK's to judge."""

    def prepare(self, body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
        """The SDK's ``contents`` and ``config`` for ``body``."""
        return arguments(body, extra)

    def shown(self, sent: dict[str, Any]) -> dict[str, Any]:
        """What a payload listener sees of a request: the SDK call's arguments."""
        return {"model": self._model, **sent}

    async def generate(self, sent: dict[str, Any], typed: bool) -> Any:
        """One plain request; the answer as a chunk record when ``typed``, else as wire JSON."""
        data = await generate(self.clients.get(), self._model, sent)
        return chunk_from(data) if typed else data

    async def create_cache(self, resource: dict[str, Any]) -> Any:
        """``client.aio.caches.create``: the ``CachedContent`` made from ``resource`` as wire JSON."""
        config = {_snake(name): value for name, value in resource.items() if name != "model"}
        made = await self.clients.get().aio.caches.create(model=resource["model"], config=config)
        return made.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def stream(self, sent: dict[str, Any]) -> SdkEvents:
        """One streamed request; its chunks as wire JSON."""
        return SdkEvents(stream(self.clients.get(), self._model, sent))
