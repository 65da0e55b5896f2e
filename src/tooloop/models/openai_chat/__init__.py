"""The OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`,
:mod:`.sdk` (the ``openai`` SDK fallback, imported only when used).
"""

from .model import OpenAIChatModel, create

__all__ = ["OpenAIChatModel", "create"]
