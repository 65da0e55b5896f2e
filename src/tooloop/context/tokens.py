"""Token counting: a fast estimate for any model, tiktoken for OpenAI models when installed.

Counters cache the count of each message by identity, so pruning a long history again before
every request costs one dictionary lookup per message, not a re-count.
"""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..errors import ArgumentValueError
from ..messages import (
    AssistantMessage,
    AudioContent,
    DocumentContent,
    ImageContent,
    Message,
    ToolCallMessage,
    UserMessage,
)

__all__ = [
    "EstimateCounter",
    "FunctionCounter",
    "TiktokenCounter",
    "TokenCounter",
    "attachment_tokens",
    "counter_for",
    "message_text",
]

MESSAGE_OVERHEAD = 4
"""Tokens every message costs besides its text (role markers, separators)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens one message costs in a request."""

    def count(self, message: Message) -> int:
        """The number of tokens ``message`` costs."""
        ...


def message_text(message: Message) -> str:
    """All text of a message a provider is sent: text, thinking, tool name, arguments and outcome."""
    if isinstance(message, ToolCallMessage):
        arguments = message.raw_arguments
        if arguments is None:
            arguments = json.dumps(message.arguments, ensure_ascii=False, default=str)
        parts = [message.message, message.tool_name, arguments, message.content]
        parts.extend(t.text for t in message.thinking)
        return "\n".join(parts)
    if isinstance(message, AssistantMessage):
        return "\n".join([message.text, message.refusal or "", *(t.text for t in message.thinking)])
    return message.text


IMAGE_TOKENS = 1_600
"""An image's estimate: about the most the providers charge for one image (Anthropic's ~1.15
megapixel limit; OpenAI's high-detail tiles come close)."""


def attachment_tokens(message: Message) -> int:
    """A rough estimate of what a user message's images, audio and documents cost.

    Providers count them by pixels, seconds and pages, which the bytes do not tell exactly: an
    image counts :data:`IMAGE_TOKENS`; audio one token per 1,000 bytes (about 32 a second of
    16 kHz, 16-bit audio, Gemini's rate); a text document as its text (four bytes a token); any
    other document (a PDF) one token per 10 bytes, at least an image's worth.
    """
    if not isinstance(message, UserMessage) or not message.parts:
        return 0
    return sum(_attachment_tokens(part) for part in message.attachments)


def _attachment_tokens(part: ImageContent | AudioContent | DocumentContent) -> int:
    size = len(part.data) * 3 // 4
    if isinstance(part, ImageContent):
        return IMAGE_TOKENS
    if isinstance(part, AudioContent):
        return max(1, size // 1_000)
    if part.mime_type.startswith("text/"):
        return max(1, size // 4)
    return max(IMAGE_TOKENS, size // 10)


class _IdentityCache:
    """Counts by message identity; holds the message so its id cannot be reused while cached."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int):
        self._entries: OrderedDict[int, tuple[Message, int]] = OrderedDict()
        self._size = size

    def get(self, message: Message) -> int | None:
        entry = self._entries.get(id(message))
        return entry[1] if entry is not None and entry[0] is message else None

    def put(self, message: Message, count: int) -> None:
        self._entries[id(message)] = (message, count)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)


class _CachedCounter(ABC):
    def __init__(self, cache_size: int = 100_000):
        self._cache = _IdentityCache(cache_size)

    def count(self, message: Message) -> int:
        """The number of tokens ``message`` costs (cached per message)."""
        cached = self._cache.get(message)
        if cached is None:
            cached = self._count(message) + attachment_tokens(message)
            self._cache.put(message, cached)
        return cached

    @abstractmethod
    def _count(self, message: Message) -> int:
        """Tokens of one message, uncached."""


class EstimateCounter(_CachedCounter):
    """About four characters per token, plus a small overhead per message. Fast, model-agnostic.

    ``chars_per_token`` can be lowered for text that tokenizes densely (code, non-Latin scripts).
    """

    def __init__(self, chars_per_token: float = 4.0, *, cache_size: int = 100_000):
        super().__init__(cache_size)
        self.chars_per_token = chars_per_token

    def _count(self, message: Message) -> int:
        return MESSAGE_OVERHEAD + int(len(message_text(message)) / self.chars_per_token + 0.999)


class FunctionCounter(_CachedCounter):
    """A plain function giving the tokens of a text, as a counter: each message costs its text's
    count plus :data:`MESSAGE_OVERHEAD`. A count that is not a whole number >= 0 is an error
    naming the function."""

    def __init__(self, count_text: Callable[[str], int], *, cache_size: int = 100_000):
        super().__init__(cache_size)
        self.count_text = count_text

    def _count(self, message: Message) -> int:
        tokens = self.count_text(message_text(message))
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            name = getattr(self.count_text, "__qualname__", repr(self.count_text))
            raise ArgumentValueError(
                f"the token counter {name} must return a whole number >= 0 for a text, got {tokens!r}"
            )
        return MESSAGE_OVERHEAD + tokens


class TiktokenCounter(_CachedCounter):
    """Exact counts for OpenAI models with ``tiktoken`` (``pip install "tooloop[tiktoken]"``).

    ``encoding`` is an encoding name (``"o200k_base"``), a ``tiktoken.Encoding``, or None to pick
    the encoding of ``model``. tiktoken downloads an encoding's data on first use unless cached.
    """

    def __init__(self, model: str | None = None, *, encoding: Any = None, cache_size: int = 100_000):
        super().__init__(cache_size)
        import tiktoken

        if encoding is None:
            try:
                encoding = tiktoken.encoding_for_model(model or "gpt-4o")
            except KeyError:
                encoding = tiktoken.get_encoding("o200k_base")
        elif isinstance(encoding, str):
            encoding = tiktoken.get_encoding(encoding)
        self.encoding = encoding

    def _count(self, message: Message) -> int:
        return MESSAGE_OVERHEAD + len(self.encoding.encode(message_text(message), disallowed_special=()))


_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt", "text-", "davinci", "babbage", "codex")


def counter_for(model_name: str | None) -> TokenCounter:
    """The best counter for a model: tiktoken for OpenAI models when it works here, else the estimate."""
    return _counter_for((model_name or "").rpartition(":")[2].rpartition("/")[2].lower())


@functools.cache
def _counter_for(name: str) -> TokenCounter:
    if name.startswith(_OPENAI_PREFIXES):
        try:
            return TiktokenCounter(name)
        except Exception:  # tiktoken missing, or its encoding cannot be downloaded here
            pass
    return EstimateCounter()
