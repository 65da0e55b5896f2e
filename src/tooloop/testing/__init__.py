"""Test models for your agents: no network, no keys, and streaming exercised all the same.

* :class:`FunctionModel` answers with a function of the request you write.
* :class:`ScriptedModel` replays a list of responses.
* :class:`Cassette` records a run against a real model and replays it offline.
* :class:`FaultyModel` / :func:`inject` wrap a model with injected failures.

Both stream (text arrives in several deltas, tool calls as name then argument fragments) when the
caller listens, so streaming code is tested too. ``requests`` keeps every request they received.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..errors import UserError
from ..events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import ModelResponse, ToolCall, UserMessage
from ..models.base import ModelRequest, ModelSettings
from .cassette import Cassette, CassetteError, CassetteMismatchError
from .faults import (
    DroppedConnection,
    Fault,
    FaultyModel,
    Latency,
    MalformedToolArguments,
    OrphanedToolCall,
    RateLimit,
    ServerError,
    Timeout,
    TruncatedStream,
    inject,
)

__all__ = [
    "Cassette",
    "CassetteError",
    "CassetteMismatchError",
    "DroppedConnection",
    "Fault",
    "FaultyModel",
    "FunctionModel",
    "Latency",
    "MalformedToolArguments",
    "OrphanedToolCall",
    "RateLimit",
    "ScriptedModel",
    "ServerError",
    "Timeout",
    "TruncatedStream",
    "create_test_model",
    "inject",
]

Reply = ModelResponse | str
ModelFunction = Callable[[ModelRequest], Reply | Awaitable[Reply]]


class FunctionModel:
    """A model whose answer is ``fn(request)`` (sync or async), returning a ``ModelResponse`` or text.

    ``request.messages`` and ``request.tools`` (each with ``name``, ``description`` and the
    ``parameters`` JSON schema) are exactly what a provider adapter would receive.
    """

    def __init__(self, fn: ModelFunction, *, name: str = "function", chunk_size: int = 5):
        self._fn = fn
        self._name = name
        self._chunk = max(1, chunk_size)
        self.provider = "test"
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Call the function; stream its answer through ``on_event`` when given."""
        self.requests.append(request)
        answer = self._fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        response = ModelResponse(answer) if isinstance(answer, str) else answer
        if not isinstance(response, ModelResponse):
            raise UserError(f"{self._name}: the model function must return ModelResponse or str, got {answer!r}")
        if on_event is not None:
            _stream(response, on_event, self._chunk)
        return response


def _stream(response: ModelResponse, on_event: EventHandler, size: int) -> None:
    for part in response.thinking:
        on_event(ThinkingDelta(part.text))
    for piece in _pieces(response.text, size):
        on_event(TextDelta(piece))
    for index, call in enumerate(response.tool_calls):
        on_event(ToolCallDelta(index, call.id, call.name))
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        for piece in _pieces(arguments, size * 2):
            on_event(ToolCallDelta(index, arguments_delta=piece))


def _pieces(text: str, size: int) -> Iterable[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


class ScriptedModel(FunctionModel):
    """Replays ``responses`` in order: each a ``ModelResponse``, a text, an exception to raise, or a
    function of the request. Raises :class:`~tooloop.errors.UserError` when asked for more."""

    def __init__(self, responses: Sequence[Reply | BaseException | ModelFunction], *, name: str = "scripted"):
        self._script = list(responses)
        self._position = 0
        super().__init__(self._next, name=name)

    @property
    def remaining(self) -> int:
        """Responses not yet used."""
        return len(self._script) - self._position

    async def _next(self, request: ModelRequest) -> Reply:
        if self._position >= len(self._script):
            raise UserError(
                f"{self.name}: asked for response {self._position + 1} but the script has {len(self._script)}"
            )
        item = self._script[self._position]
        self._position += 1
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, ModelResponse):
            answer = item(request)
            if inspect.isawaitable(answer):
                answer = await answer
            return answer
        return item


def _sample(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    samples = {"string": "text", "integer": 1, "number": 1.0, "boolean": True, "array": [], "null": None}
    if kind == "object":
        return {
            name: _sample(sub)
            for name, sub in schema.get("properties", {}).items()
            if name in schema.get("required", ())
        }
    if isinstance(kind, str):
        return samples.get(kind)
    for option in schema.get("anyOf", ()):
        return _sample(option)
    return None


def _tools_then_summary(request: ModelRequest) -> ModelResponse:
    """Call every tool once with sample arguments, then summarise the results in text."""
    results = [m for m in request.messages if getattr(m, "kind", "") == "tool_call"]
    last_user = next((m for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
    if request.tools and not results and request.tool_choice != "none":
        calls = tuple(
            ToolCall(f"call_{i}", tool.name, _sample(dict(tool.parameters)) or {})
            for i, tool in enumerate(request.tools)
        )
        return ModelResponse(tool_calls=calls)
    summary = "; ".join(f"{m.tool_name} -> {m.content}" for m in results)  # type: ignore[union-attr]
    prompt = last_user.text if last_user is not None else ""
    return ModelResponse(f"You said: {prompt}" + (f". Tool results: {summary}" if summary else ""))


def create_test_model(model_name: str, *, settings: ModelSettings | None = None, **_: Any) -> FunctionModel:
    """Factory behind ``"test:..."`` model strings: ``"test:echo"`` calls each tool once, then
    answers with the prompt and the tool results. Offline and deterministic."""
    if model_name not in ("echo", "tools"):
        raise UserError(f"unknown test model {model_name!r}: use 'test:echo'")
    return FunctionModel(_tools_then_summary, name=f"test:{model_name}")
