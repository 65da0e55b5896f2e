"""The model seam: what the loop sends (``ModelRequest``) and the one method a model implements."""

from __future__ import annotations

import operator
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from .._frozen import FACTORY, draft_of, thawed
from ..errors import ArgumentValueError
from ..events import EventHandler
from ..messages import Message, ModelResponse

__all__ = [
    "TOOL_SEARCH_KEY",
    "CacheMode",
    "CacheTTL",
    "MemoKey",
    "Model",
    "ModelRequest",
    "ModelSettings",
    "OutputSchema",
    "PendingKey",
    "RunMemo",
    "ToolChoice",
    "ToolDefinition",
    "loaded_by_search",
]

ToolChoice = Literal["auto", "none", "required"]
CacheMode = Literal["auto", "off", "explicit"]
"""How requests use the provider's prompt cache (see :attr:`ModelSettings.cache`)."""
CacheTTL = Literal["5m", "1h"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as a provider sees it: name, description and the JSON schema of its parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool | None = None
    defer_loading: bool = False
    """Sent deferred (``defer_loading``) when the request uses the provider's own tool search
    (:attr:`ModelRequest.tool_search`): the model sees it only once a search loaded it."""


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The JSON schema the final answer must match, for providers with native structured output."""

    name: str
    schema: Mapping[str, Any]
    description: str | None = None
    strict: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """Sampling and request options. ``None`` means "the provider's default"."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    stream: bool | None = None
    """Force streaming (True) or plain requests (False); None lets the adapter choose."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific request fields, passed through unchanged."""
    cache: CacheMode | None = None
    """Prompt caching. ``"auto"`` (the default, None): Anthropic requests carry ``cache_control``
    breakpoints (tools, system, the two latest turns: four, the provider's limit) and OpenAI
    requests a ``prompt_cache_key`` per session. ``"off"``: neither. ``"explicit"``: tooloop adds
    none; markers you pass in ``extra`` (Anthropic's top-level ``cache_control``, OpenAI's
    ``prompt_cache_key``) are the only ones; Gemini's stable prefix (system instruction, tools)
    becomes a ``cachedContents`` resource the requests name, unless ``extra`` names one."""
    cache_ttl: CacheTTL | None = None
    """How long Anthropic keeps the cached prefix: ``"5m"`` (the provider's default) or ``"1h"``
    (writes cost 2x the input price instead of 1.25x; worth it when turns are minutes apart);
    also the lifetime of Gemini's explicit cached content."""

    def __post_init__(self) -> None:
        if self.cache not in (None, "auto", "off", "explicit"):
            raise ArgumentValueError(f"ModelSettings(cache={self.cache!r}): pass 'auto', 'off' or 'explicit'")
        if self.cache_ttl not in (None, "5m", "1h"):
            raise ArgumentValueError(f"ModelSettings(cache_ttl={self.cache_ttl!r}): pass '5m' or '1h'")

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with every field that ``override`` sets taking precedence."""
        if override is None or override is self:
            return self
        values = _simple_values(override)
        if values.count(None) == len(values) and not override.extra:  # every request of a plain run
            return self
        pairs = zip(_SIMPLE_FIELDS, values, strict=True)
        changes: dict[str, Any] = {name: value for name, value in pairs if value is not None}
        if override.extra:
            changes["extra"] = {**self.extra, **override.extra}
        return replace(self, **changes) if changes else self


_SIMPLE_FIELDS = tuple(f.name for f in fields(ModelSettings) if f.name != "extra")
_simple_values = operator.attrgetter(*_SIMPLE_FIELDS)


T = TypeVar("T")


class MemoKey(Generic[T]):
    """One model's own place in a :class:`RunMemo` (the key is the object itself; ``T`` is what
    the model keeps there)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"MemoKey({self.name!r})"


class RunMemo:
    """What models keep for the later requests of one run (e.g. each tool batch as already converted).

    The loop makes one per run, passes it with every request of that run
    (:attr:`ModelRequest.memo`) and empties it when the run ends: nothing a model keeps for a
    conversation outlives the run that made it, however long its result is kept. Each model keeps
    its part under its own :class:`MemoKey`.
    """

    # A thousand concurrent runs each hold one: the first model's part (usually the only one) is
    # kept in slots, a dict only for the parts of further models (a fallback chain).
    __slots__ = ("_key", "_more", "_part")

    def __init__(self) -> None:
        self._key: MemoKey[Any] | None = None
        self._part: Any = None
        self._more: dict[MemoKey[Any], Any] | None = None

    def part(self, key: MemoKey[T], make: Callable[[], T]) -> T:
        """What is kept under ``key``, made by ``make`` at its first use in the run."""
        if key is self._key:
            kept: T = self._part
            return kept
        if self._key is None:
            made = make()
            self._key, self._part = key, made
            return made
        more = self._more
        if more is None:
            more = self._more = {}
        part: T | None = more.get(key)
        if part is None:
            part = more[key] = make()
        return part

    def parts(self) -> tuple[Any, ...]:
        """Every part kept, the first model's first."""
        first = () if self._key is None else (self._part,)
        return first + tuple(self._more.values()) if self._more else first

    def clear(self) -> None:
        """Drop every part (the run has ended)."""
        self._key = self._part = self._more = None

    def __len__(self) -> int:
        return (self._key is not None) + len(self._more or ())


class PendingKey:
    """A :attr:`ModelRequest.cache_key` worked out when an adapter first reads it, then kept (the
    loop's hashes the conversation's opening: a run whose model never reads the key never hashes).
    Subclasses say how (:meth:`work_out`); one is shared by every request of a run."""

    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: str | None = None

    @abstractmethod  # checked by the type checker; no ABCMeta on this path
    def work_out(self) -> str:
        """The key."""

    def settle(self) -> str:
        """The key, worked out at the first call."""
        value = self._value
        if value is None:
            value = self._value = self.work_out()
        return value


@dataclass(frozen=True, slots=True, init=False)
class ModelRequest:
    """Everything one request to a model carries, in provider-neutral form.

    ``messages`` is what the provider receives (system message first when there is one), already
    repaired: every tool call has an outcome.
    """

    messages: Sequence[Message]
    tools: tuple[ToolDefinition, ...] = ()
    _: KW_ONLY
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputSchema | None = None
    tool_choice: ToolChoice = "auto"
    cache_key: str | None = None
    """A key stable across the turns of one conversation (and across processes), for providers
    that route requests sharing a prefix to the same cache (OpenAI's ``prompt_cache_key``).
    Given as a :class:`PendingKey`, it is worked out when first read (reads see a ``str``)."""
    tool_search: bool = False
    """Use the provider's own tool search: the adapter adds its search tool and sends the tools
    marked :attr:`ToolDefinition.defer_loading` deferred. Set only for a model whose
    ``native_tool_search`` property is True."""
    memo: RunMemo | None = field(default=None, compare=False)
    """The run's memo, the same for every request of one run (None outside a run): a model may
    keep there what its later requests in the run can reuse. Ignoring it is always correct."""

    def __init__(
        self,
        messages: Sequence[Message],
        tools: tuple[ToolDefinition, ...] = (),
        *,
        settings: ModelSettings = FACTORY,
        output: OutputSchema | None = None,
        tool_choice: ToolChoice = "auto",
        cache_key: str | PendingKey | None = None,
        tool_search: bool = False,
        memo: RunMemo | None = None,
    ) -> None:
        # written out (the loop makes one per request): the fields filled through a draft, see tooloop._frozen
        cls = type(self)
        draft = thawed(self, _ModelRequestDraft)
        draft.messages = messages
        draft.tools = tools
        draft.settings = ModelSettings() if settings is FACTORY else settings
        draft.output = output
        draft.tool_choice = tool_choice
        draft.cache_key = cache_key
        draft.tool_search = tool_search
        draft.memo = memo
        draft.__class__ = cls

    def __repr__(self) -> str:
        parts = [f"messages={list(self.messages)!r}", f"tools={[t.name for t in self.tools]!r}"]
        if self.settings != ModelSettings():
            parts.append(f"settings={self.settings!r}")
        if self.output is not None:
            parts.append(f"output={self.output.name!r}")
        if self.tool_choice != "auto":
            parts.append(f"tool_choice={self.tool_choice!r}")
        return f"ModelRequest({', '.join(parts)})"


_ModelRequestDraft = draft_of(ModelRequest)

_key_slot: Any = ModelRequest.__dict__["cache_key"]
_raw_key: Any = _key_slot.__get__
_set_key: Any = _key_slot.__set__


def _read_key(request: ModelRequest) -> str | None:
    """``ModelRequest.cache_key``: a :class:`PendingKey` in the slot is settled on the first read
    and replaced by its value."""
    key = _raw_key(request)
    if key is None or type(key) is str:
        return key
    value: str = key.settle()
    _set_key(request, value)
    return value


# Over the dataclass's slot, as Usage.cost: reads settle a pending key, writes go to the slot in C.
_request_class: Any = ModelRequest
_request_class.cache_key = property(_read_key, _set_key, doc="A key stable across a conversation's turns, or None.")


TOOL_SEARCH_KEY = "tool_search"
"""The ``provider_data`` key under which an adapter records the tools a provider's own search
loaded in a response: ``{"loaded": [names]}`` (provider-neutral, kept with the message)."""


def loaded_by_search(provider_data: Mapping[str, Any]) -> list[str]:
    """The tool names a provider's own search loaded, as recorded under :data:`TOOL_SEARCH_KEY`."""
    record = provider_data.get(TOOL_SEARCH_KEY)
    names = record.get("loaded") if isinstance(record, Mapping) else None
    return [n for n in names if isinstance(n, str)] if isinstance(names, list | tuple) else []


@runtime_checkable
class Model(Protocol):
    """A language model. Implement ``respond``; adapters for real providers live in ``tooloop.models``.

    ``respond`` sends one request and returns the complete response. When ``on_event`` is given the
    adapter streams and calls it for each text, thinking and tool-call delta as it arrives; when
    it is None nobody listens, and the adapter may make a plain request.
    """

    @property
    def name(self) -> str:
        """The model's name, e.g. ``"gpt-4.1"``."""
        ...

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Send ``request`` and return the model's response."""
        ...
