"""The model seam: what the loop sends (``ModelRequest``) and the one method a model implements."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import Any, Literal, Protocol, runtime_checkable

from ..events import EventHandler
from ..messages import Message, ModelResponse

__all__ = ["Model", "ModelRequest", "ModelSettings", "OutputSchema", "ToolChoice", "ToolDefinition"]

ToolChoice = Literal["auto", "none", "required"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as a provider sees it: name, description and the JSON schema of its parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool | None = None


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


@dataclass(frozen=True, slots=True)
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

    def __repr__(self) -> str:
        parts = [f"messages={list(self.messages)!r}", f"tools={[t.name for t in self.tools]!r}"]
        if self.settings != ModelSettings():
            parts.append(f"settings={self.settings!r}")
        if self.output is not None:
            parts.append(f"output={self.output.name!r}")
        if self.tool_choice != "auto":
            parts.append(f"tool_choice={self.tool_choice!r}")
        return f"ModelRequest({', '.join(parts)})"


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
