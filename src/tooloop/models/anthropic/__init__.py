"""The Anthropic Messages API adapter.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`,
:mod:`.sdk` (the ``anthropic`` SDK fallback, imported only when used).
"""

from .model import ANTHROPIC_VERSION, AnthropicModel, create

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel", "create"]
