"""Google Gemini adapter (``"google:..."`` / ``"gemini:..."``), on the Gemini API's wire format.

:mod:`.model` (the model and its factory), :mod:`.request`, :mod:`.response`, :mod:`.stream`,
:mod:`.sdk` (the ``google-genai`` fallback, imported only when used).
"""

from .model import GeminiModel, create

__all__ = ["GeminiModel", "create"]
