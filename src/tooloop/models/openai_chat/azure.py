"""Azure OpenAI on the Chat Completions adapter (``"azure:<deployment>"``).

Two documented ways in. With an API version (``api_version=``, else ``OPENAI_API_VERSION``),
the deployment URLs: ``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``
with the key in an ``api-key`` header, as the SDK's ``AzureOpenAI`` client sends them (that
client is the SDK path). Without one, the v1 API: ``{endpoint}/openai/v1`` with the key as a
bearer token, as the plain ``OpenAI`` client sends it. The endpoint is ``base_url``, else
``AZURE_OPENAI_ENDPOINT``; the key ``api_key``, else ``AZURE_OPENAI_API_KEY`` (the registry's
``api_key_env``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from ...errors import ConfigurationError
from ..base import ModelSettings
from .model import PATH, OpenAIChatModel, build

__all__ = ["create_azure"]


@dataclass(frozen=True, slots=True)
class _Deployments:
    """Azure's deployment URLs: ``api-version`` in the query, the key in an ``api-key`` header."""

    version: str

    @property
    def path(self) -> str:
        return f"{PATH}?{urlencode({'api-version': self.version})}"

    def auth(self, key: str) -> dict[str, str]:
        return {"api-key": key}


def create_azure(
    model_name: str,
    *,
    provider: str = "azure",
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> OpenAIChatModel:
    """Create a model behind an Azure OpenAI deployment (the registry's factory for ``azure:``).

    ``model_name`` is the deployment's name; ``base_url`` the resource endpoint
    (``https://NAME.openai.azure.com``); ``api_version`` picks the deployment URLs over the v1
    API (see the module docstring). The other options are those of
    :func:`~tooloop.models.openai_chat.create`.
    """
    version = options.pop("api_version", None) or os.environ.get("OPENAI_API_VERSION")
    endpoint = (base_url or os.environ.get("AZURE_OPENAI_ENDPOINT") or "").rstrip("/")
    if not endpoint:
        raise ConfigurationError(
            f"no Azure OpenAI endpoint for {provider!r} models: pass base_url='https://NAME.openai.azure.com' "
            "or set AZURE_OPENAI_ENDPOINT"
        )
    if not version:
        return build(model_name, provider, f"{endpoint}/openai/v1", api_key, settings, options)
    deployment = f"{endpoint}/openai/deployments/{quote(model_name, safe='')}"
    return build(model_name, provider, deployment, api_key, settings, options, _Deployments(version))
