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
import json
import math
import operator
import re
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from ..messages import AssistantMessage, Message, SystemMessage, ThinkingPart, ToolCallMessage, UserMessage
from .base import MemoKey, ModelRequest

__all__ = ["BatchMemo", "IdMapper", "ToolBatch", "Turn", "batch_memo", "encode_arguments", "own_thinking", "turns"]


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


T = TypeVar("T")


class BatchMemo(Generic[T]):
    """What one model made of each tool batch, for the later requests of the run that sends it.

    Every request sends the whole history again, and a batch's messages never change once
    recorded, so converting each batch once per run is enough (re-converting the history was a
    few percent of a conversation's CPU). A model finds its memo in the run's
    :class:`~tooloop.models.base.RunMemo` (:func:`batch_memo`), so the memo goes when the run
    ends. Only the very same message objects find an entry (it holds them: their ids stay theirs
    while it lives). ``variant`` tells apart what one batch becomes under different request
    options (the last one made is kept). The caller must not change what it gets back.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[tuple[ToolCallMessage, ...], Hashable, T]] = {}

    def get(self, calls: tuple[ToolCallMessage, ...], variant: Hashable = None) -> T | None:
        """What was made of exactly these messages under ``variant``, or None."""
        entry = self._entries.get(id(calls[0]))
        if entry is None or entry[1] != variant:
            return None
        kept = entry[0]
        if len(kept) != len(calls) or not all(map(operator.is_, kept, calls)):
            return None
        return entry[2]

    def put(self, calls: tuple[ToolCallMessage, ...], made: T, variant: Hashable = None) -> T:
        """Keep ``made`` for these messages under ``variant`` (replacing what their first one had); ``made``."""
        self._entries[id(calls[0])] = (calls, variant, made)
        return made

    def __len__(self) -> int:
        return len(self._entries)


def batch_memo(request: ModelRequest, key: MemoKey[BatchMemo[T]]) -> BatchMemo[T]:
    """The memo of converted batches the run of ``request`` keeps under ``key``; a new one, kept
    by nobody, for a request made outside a run."""
    memo = request.memo
    return BatchMemo() if memo is None else memo.part(key, BatchMemo)


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


def encode_arguments(arguments: Mapping[str, Any]) -> str:
    """``json.dumps(arguments, ensure_ascii=False)``; flat objects (the usual case) written directly."""
    items = []
    for key, value in arguments.items():
        kind = type(value)
        if kind is str:
            text = _string(value)
        elif kind is int:
            text = int.__repr__(value)
        elif kind is bool:
            text = "true" if value else "false"
        elif value is None:
            text = "null"
        elif kind is float and math.isfinite(value):
            text = float.__repr__(value)
        else:
            return _ARGUMENTS.encode(arguments)
        if type(key) is not str:
            return _ARGUMENTS.encode(arguments)
        items.append(f"{_string(key)}: {text}")
    return "{" + ", ".join(items) + "}"


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, default=_json_default)
_string: Callable[[str], str] = json.encoder.encode_basestring
"""Arguments as ``json.dumps`` writes them; one encoder for every call."""
