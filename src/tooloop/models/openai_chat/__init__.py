"""The OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`,
:mod:`.sdk` (the ``openai`` SDK fallback, imported only when used), :mod:`.reasoning` (reasoning
outside ``reasoning_content``: thinking chunks, ``reasoning_details``), :mod:`.azure` (Azure
OpenAI's URLs and key header).
"""

from .azure import create_azure
from .model import OpenAIChatModel, create

__all__ = ["OpenAIChatModel", "create", "create_azure"]
