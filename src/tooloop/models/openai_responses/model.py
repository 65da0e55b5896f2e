"""OpenAI Responses API adapter on the official ``openai`` SDK (``"openai-responses:..."``).

Requests are stateless: ``store=False`` and, for reasoning models, ``include=["reasoning.encrypted_content"]``,
so a response's reasoning items (kept in ``provider_data["openai-responses"]``) can be sent back
with the conversation instead of being looked up on OpenAI's servers. See
docs/providers.md.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

import openai

from ...errors import ConfigurationError, ProviderError
from ...events import EventHandler
from ...messages import ModelResponse
from ...transport.client import StatusError, StreamError
from ...transport.perloop import PerLoop
from ..adapter import DEFAULT_TIMEOUT, ErrorBody, ProviderModel, check_retries, has_tool_search, idle_timeout
from ..base import ModelRequest, ModelSettings
from .request import INPUT_KINDS, PROVIDER, ResponsesRequest
from .response import read, read_error
from .sdk import ResponsesChannel, close_client, make_client
from .stream import Streamer

__all__ = ["OpenAIResponsesModel", "create"]

_NO_REASONING = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-4o)")
_OPTIONS = frozenset(
    {"max_retries", "timeout", "reasoning", "include_reasoning", "client", "api_key_env", "native_tool_search"}
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

    Options: ``max_retries`` (default 2, done by the SDK, honouring ``Retry-After``), ``timeout``
    (seconds without a byte), ``reasoning`` (the request's ``reasoning`` object, e.g.
    ``{"effort": "low", "summary": "auto"}``), ``include_reasoning`` (request encrypted reasoning;
    default: on unless the model name starts with gpt-4/gpt-3.5), ``client`` (a ready
    ``AsyncOpenAI``), ``api_key_env`` (the key variable, ``OPENAI_API_KEY``),
    ``native_tool_search`` (the hosted ``tool_search`` for ``Agent(tool_search=...)``; default:
    gpt-5.4 and later).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    return OpenAIResponsesModel(
        model_name, base_url=base_url, api_key=api_key, settings=settings, provider=provider, **options
    )


class OpenAIResponsesModel(ProviderModel):
    """An OpenAI model behind the ``Model`` protocol, through ``client.responses.create``.

    The API key is ``api_key``, else ``OPENAI_API_KEY``.
    """

    input_kinds = INPUT_KINDS

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        reasoning: Mapping[str, Any] | None = None,
        include_reasoning: bool | None = None,
        client: openai.AsyncOpenAI | None = None,
        api_key_env: str = "OPENAI_API_KEY",
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
        if client is None:
            make = functools.partial(
                make_client,
                api_key or os.environ.get(api_key_env),
                api_key_env,
                base_url,
                check_retries(max_retries),
                idle_timeout(timeout),
            )
            channel = ResponsesChannel(PerLoop(make(), make, close_client))
        else:
            channel = ResponsesChannel(PerLoop(client, None, close_client))
        self._init_common(model_name, provider=provider, settings=settings, channel=channel, secret=channel.secret)
        self._channel: ResponsesChannel = channel

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        params = self._request.params(request, settings)
        self._sent({**params, "stream": True} if stream else params)
        if not stream:
            response = await self._channel.create(params)
            self._received(response)
            return read(response)
        events = await self._channel.create_stream(params)
        try:
            return await Streamer(on_event).run(self._tapped(events))
        except ProviderError:
            raise
        except Exception as exc:  # the stream broke after the request succeeded: no retry was made
            self._fail(exc, 1)
        finally:
            await events.close()

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
