"""Provider-neutral helpers every adapter uses to send a transcript that any provider accepts.

The rules (documented in docs/providers.md, "Switching providers mid-conversation"):

* Tool-call batches: consecutive :class:`ToolCallMessage` values with one ``batch_id`` are one
  assistant turn followed by its results (:func:`turns`).
* Tool-call ids: an id goes back unchanged unless the target's rule requires a rewrite.
  :class:`IdMapper` rewrites an id that breaks the rule to a deterministic, collision-free id
  that keeps it, and uses the same rewrite for the call and its result (OpenAI's Chat
  Completions: 40 characters of ``a-zA-Z0-9_-``, Mistral: exactly 9 of ``a-zA-Z0-9``,
  compatible servers: no rule; Responses and Anthropic: 64). Gemini gets only the ids it made
  itself; other calls go without an id and are matched to their results by order and name.
* Thinking: a part signed by provider X (``ThinkingPart.provider == X``) goes back only to X.
  For any other provider it is dropped: reasoning is the model's scratchpad, and a foreign
  signature would be rejected. Unsigned thinking from another provider is dropped too.
* ``provider_data`` (e.g. the Responses API's encrypted reasoning items, Gemini's signatures):
  read only by the adapter whose provider name is its key; others ignore it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from ..messages import AssistantMessage, Message, SystemMessage, ThinkingPart, ToolCallMessage, UserMessage

__all__ = ["IdMapper", "ToolBatch", "Turn", "own_thinking", "turns"]


@dataclass(frozen=True, slots=True)
class ToolBatch:
    """The tool calls of one model response, in the model's order, each with its outcome."""

    calls: tuple[ToolCallMessage, ...]

    @property
    def text(self) -> str:
        """The assistant text that came with the calls."""
        return self.calls[0].message

    @property
    def first(self) -> ToolCallMessage:
        """The first call, which carries the response-level parts (thinking, provider data)."""
        return self.calls[0]


Turn: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolBatch
"""What an adapter sends, one by one: a message, or a whole tool-call batch with its results.

Every adapter's dispatch over it ends in ``assert_never``, so a new message kind makes strict
mypy name each place that must handle it.
"""


def turns(messages: Sequence[Message]) -> Iterator[Turn]:
    """The messages with each run of same-batch tool calls gathered into one :class:`ToolBatch`."""
    batch: list[ToolCallMessage] = []
    for message in messages:
        if isinstance(message, ToolCallMessage):
            if batch and batch[-1].batch_id != message.batch_id:
                yield ToolBatch(tuple(batch))
                batch = []
            batch.append(message)
            continue
        if batch:
            yield ToolBatch(tuple(batch))
            batch = []
        yield message
    if batch:
        yield ToolBatch(tuple(batch))


def own_thinking(parts: Sequence[ThinkingPart], provider: str) -> tuple[ThinkingPart, ...]:
    """The thinking parts ``provider`` may receive back: those it produced itself."""
    return tuple(p for p in parts if p.provider == provider)


@functools.cache
def _patterns(allowed: str, min_length: int, max_length: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A valid id's pattern and the pattern of the characters to strip (made once: a mapper is made per request)."""
    return re.compile(f"^[{allowed}]{{{min_length},{max_length}}}$"), re.compile(f"[^{allowed}]")


class IdMapper:
    """Rewrites tool-call ids that break a provider's rule, the same way for a call and its result.

    ``allowed`` is the allowed charset as a regex character class body, ``max_length`` the
    longest id the provider takes and ``min_length`` the shortest. Valid ids pass through
    unchanged; others become a readable prefix of their allowed characters plus a short hash of
    the original, so distinct ids stay distinct (with no room for a prefix, the hash alone: it
    is hexadecimal, so any alphanumeric charset takes it).
    """

    def __init__(
        self, allowed: str = "a-zA-Z0-9_-", max_length: int = 64, prefix: str = "call_", *, min_length: int = 1
    ):
        self._valid, self._strip = _patterns(allowed, min_length, max_length)
        self._max = max_length
        self._min = min_length
        self._prefix = prefix
        self._seen: dict[str, str] = {}

    def __call__(self, original: str) -> str:
        mapped = self._seen.get(original)
        if mapped is not None:
            return mapped
        if self._valid.match(original):
            mapped = original
        else:
            digest = hashlib.sha256(original.encode()).hexdigest()[: max(12, self._min)]
            readable = self._strip.sub("", original)[: max(0, self._max - len(self._prefix) - 13)]
            if len(self._prefix) + len(digest[: self._min]) > self._max:
                mapped = digest
            else:
                mapped = f"{self._prefix}{readable}_{digest}" if readable else f"{self._prefix}{digest}"
            mapped = mapped[: self._max]
        self._seen[original] = mapped
        return mapped
