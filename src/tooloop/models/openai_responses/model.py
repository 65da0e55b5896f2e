"""The OpenAI Responses API adapter (``"openai-responses:..."``).

By default its requests go out on the lean transport (:class:`tooloop.transport.client.Client`,
the one the Chat Completions adapter uses), which sends the headers the ``openai`` SDK sends and
keeps its base URL, retries and timeouts at a fraction of the client CPU, without importing the
SDK. ``transport="sdk"`` sends them through ``AsyncOpenAI`` (always the case for a ``client`` you
pass, and when a proxy is configured for the URL). Either way the request body comes from
:mod:`.request`, the raw JSON answer is read by :mod:`.response` and the event stream by
:mod:`.stream`; failures go through the one error table. :mod:`.sdk` is the SDK fallback.

Requests are stateless: ``store=False`` and, for reasoning models, ``include=["reasoning.encrypted_content"]``,
so a response's reasoning items (kept in ``provider_data["openai-responses"]``) can be sent back
with the conversation instead of being looked up on OpenAI's servers. See docs/providers.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError, ProviderError
from ...events import EventHandler
from ...messages import ModelResponse
from ...transport.client import StatusError, StreamError, lean_eligible
from ...transport.http import DEFAULT_MAX_CONNECTIONS
from ...transport.perloop import PerLoop
from ...transport.retry import RetryPolicy
from ..adapter import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    ErrorBody,
    ProviderModel,
    check_max_connections,
    check_retries,
    checked_headers,
    has_tool_search,
    idle_timeout,
)
from ..base import ModelRequest, ModelSettings
from ..openai_chat.model import openai_headers
from ..payloads import listening
from .request import INPUT_KINDS, PROVIDER, ResponsesRequest
from .response import decode, read, read_error
from .stream import ResponsesClient, ResponsesStreamReader

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from .sdk import SdkChannel

__all__ = ["PATH", "OpenAIResponsesModel", "create"]

PATH = "/responses"
_OPENAI_URL = "https://api.openai.com/v1"
_NO_REASONING = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-4o)")
_OPTIONS = frozenset(
    {
        "max_retries",
        "timeout",
        "reasoning",
        "include_reasoning",
        "client",
        "api_key_env",
        "default_headers",
        "transport",
        "max_connections",
        "native_tool_search",
    }
)


def create(
    model_name: str,
    *,
    provider: str = PROVIDER,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> OpenAIResponsesModel:
    """Registry factory for ``"openai-responses:<model>"``.

    Options: ``max_retries`` (default 2, honouring ``Retry-After`` as the SDK does), ``timeout``
    (seconds without a byte), ``reasoning`` (the request's ``reasoning`` object, e.g.
    ``{"effort": "low", "summary": "auto"}``), ``include_reasoning`` (request encrypted reasoning;
    default: on unless the model name starts with gpt-4/gpt-3.5), ``default_headers``,
    ``max_connections`` (the pool's cap, default 1000 as the SDK's), ``client`` (a ready
    ``AsyncOpenAI``, which makes the key and URL arguments unused), ``api_key_env`` (the key
    variable, ``OPENAI_API_KEY``) and ``transport`` (``"lean"``, the default, or ``"sdk"``: see
    the module docstring), ``native_tool_search`` (the hosted ``tool_search`` for
    ``Agent(tool_search=...)``; default: gpt-5.4 and later).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    transport = options.pop("transport", "lean")
    if transport not in ("lean", "sdk"):
        raise ConfigurationError(f"transport must be 'lean' or 'sdk', not {transport!r}")
    common: dict[str, Any] = {
        "settings": settings,
        "provider": provider,
        "reasoning": options.pop("reasoning", None),
        "include_reasoning": options.pop("include_reasoning", None),
        "native_tool_search": options.pop("native_tool_search", None),
    }
    client = options.pop("client", None)
    if client is not None:
        return OpenAIResponsesModel(model_name, client=client, **common)
    key_env = options.get("api_key_env") or "OPENAI_API_KEY"
    key = api_key or os.environ.get(key_env)
    if not key:
        raise ConfigurationError(f"no OpenAI API key: pass api_key=... or set {key_env} in the environment")
    max_retries = check_retries(options.get("max_retries", 2))
    idle = idle_timeout(options.get("timeout", DEFAULT_TIMEOUT))
    connect = min(idle, DEFAULT_CONNECT_TIMEOUT)
    headers = options.get("default_headers")
    cap = check_max_connections(options.get("max_connections"))
    url = base_url or _OPENAI_URL
    sent = checked_headers(provider, openai_headers({"Authorization": f"Bearer {key}"}, headers), key)
    if transport == "lean" and lean_eligible(url):
        lean = ResponsesClient(
            url,
            sent,
            retry=RetryPolicy(max_retries),
            connect_timeout=connect,
            read_timeout=idle,
            attempt_header="x-stainless-retry-count",
            max_connections=cap or DEFAULT_MAX_CONNECTIONS,
        )
        return OpenAIResponsesModel(model_name, lean=lean, secret=key, **common)
    from .sdk import client_factory

    factory = client_factory(key, base_url, max_retries, idle, connect, headers, cap)
    return OpenAIResponsesModel(model_name, client=factory(), client_factory=factory, **common)


class OpenAIResponsesModel(ProviderModel):
    """An OpenAI model behind the Responses API (``POST {base_url}/responses``).

    Streams when ``respond`` gets an ``on_event`` handler (or ``settings.stream`` is True) and
    makes a plain request otherwise. ``client`` is an ``AsyncOpenAI`` (its key, base URL, retries
    and timeout are used as they are); without one, use :func:`create` (or ``get_model``).
    """

    input_kinds = INPUT_KINDS

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncOpenAI | None = None,
        client_factory: Callable[[], AsyncOpenAI] | None = None,
        lean: ResponsesClient | None = None,
        secret: str | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        reasoning: Mapping[str, Any] | None = None,
        include_reasoning: bool | None = None,
        native_tool_search: bool | None = None,
    ):
        self._native_tool_search = has_tool_search("openai", model_name, native_tool_search)
        if include_reasoning is None:
            include_reasoning = reasoning is not None or not _NO_REASONING.match(model_name)
        self._request = ResponsesRequest(
            model_name,
            include=["reasoning.encrypted_content"] if include_reasoning else None,
            reasoning=dict(reasoning) if reasoning else None,
        )
        channel: ResponsesClient | SdkChannel
        if lean is not None:
            channel = lean
        elif client is not None:
            from .sdk import SdkChannel, close_client

            channel = SdkChannel(PerLoop(client, client_factory, close_client))
            secret = channel.secret
        else:
            raise ConfigurationError("OpenAIResponsesModel needs an AsyncOpenAI client (or use get_model)")
        self._init_common(model_name, provider=provider, settings=settings, channel=channel, secret=secret)
        self._channel: ResponsesClient | SdkChannel = channel

    _maps_errors = True

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        try:
            body = self._request.params(request, settings)
            if stream:
                body["stream"] = True
            self._sent(body)
            # Encoded now (on the lean path), and the dicts let go while the answer is awaited.
            payload = self._channel.encode(body)
            del body
            if not stream:
                channel = self._channel
                if isinstance(channel, ResponsesClient) and not listening():
                    return read(decode(await channel.post_bytes(PATH, payload)))
                data = await channel.post_json(PATH, payload)
                self._received(data)
                return read(data)
            events = await self._channel.post_stream(PATH, payload)
            reader = ResponsesStreamReader(on_event)
            try:
                if not listening():
                    await events.read(reader.feed_all)
                else:
                    async for event in self._tapped(aiter(events)):
                        reader.feed(event)
            except ProviderError:
                raise
            except Exception as exc:  # the stream broke after the request succeeded: no retry was made
                self._fail(exc, 1)
            finally:
                await events.close()
            return reader.result()
        except Exception as exc:
            error = self._raised(exc)
        error.__context__ = None
        raise error

    @property
    def native_output(self) -> bool:
        """True: ``text.format`` carries the schema."""
        return True

    @property
    def native_tool_search(self) -> bool:
        """True for models with the hosted ``tool_search`` (see :func:`create`)."""
        return self._native_tool_search

    def _read_error(self, error: StatusError | StreamError) -> ErrorBody:
        return read_error(error)
