"""OpenAI Responses API adapter (``"openai-responses:..."``), on the official ``openai`` SDK.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`,
:mod:`.sdk` (the ``AsyncOpenAI`` client and its errors).
"""

from .model import OpenAIResponsesModel, create

__all__ = ["OpenAIResponsesModel", "create"]
