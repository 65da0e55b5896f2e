"""The Responses adapter's client: ``AsyncOpenAI`` (one per event loop), its errors as the transport's."""

from __future__ import annotations

from typing import Any

import openai

from ...errors import ConfigurationError
from ...transport.client import SdkFallback
from ...transport.perloop import PerLoop
from ..adapter import DEFAULT_CONNECT_TIMEOUT
from ..openai_chat.sdk import translate

__all__ = ["ResponsesChannel", "close_client", "make_client", "translate"]


def make_client(
    key: str | None, key_env: str, base_url: str | None, max_retries: int, timeout: float
) -> openai.AsyncOpenAI:
    if not key:
        raise ConfigurationError(f"no OpenAI API key: pass api_key=... or set {key_env} in the environment")
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=openai.Timeout(timeout, connect=min(timeout, DEFAULT_CONNECT_TIMEOUT)),
    )


async def close_client(client: Any) -> None:
    await client.close()


class ResponsesChannel(SdkFallback):
    """``client.responses.create``, plain and streamed, on ``AsyncOpenAI`` clients (one per event loop)."""

    translate = staticmethod(translate)

    def __init__(self, clients: PerLoop[openai.AsyncOpenAI]) -> None:
        super().__init__(clients)
        first = clients.first
        self.secret = first.api_key
        self.attempts = first.max_retries + 1
        timeout = first.timeout
        self.read_timeout: float | None = timeout.read if isinstance(timeout, openai.Timeout) else timeout

    async def create(self, params: dict[str, Any]) -> Any:
        """One plain request; the SDK's ``Response``."""
        return await self.clients.get().responses.create(**params)

    async def create_stream(self, params: dict[str, Any]) -> Any:
        """One streamed request; the SDK's event stream."""
        return await self.clients.get().responses.create(**params, stream=True)
