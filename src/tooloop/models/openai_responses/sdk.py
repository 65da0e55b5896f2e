"""The Responses adapter's client: ``AsyncOpenAI`` (one per event loop), its errors as the transport's."""

from __future__ import annotations

from typing import Any

import openai

from ...errors import ConfigurationError
from ..adapter import DEFAULT_CONNECT_TIMEOUT
from ..openai_chat.sdk import translate

__all__ = ["close_client", "make_client", "translate"]


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
