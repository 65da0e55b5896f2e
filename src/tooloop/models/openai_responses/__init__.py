"""OpenAI Responses API adapter (``"openai-responses:..."``), on the lean transport or the official ``openai`` SDK.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`
(the stream reader and the lean client), :mod:`.sdk` (the ``AsyncOpenAI`` fallback).
"""

from .model import OpenAIResponsesModel, create

__all__ = ["OpenAIResponsesModel", "create"]
