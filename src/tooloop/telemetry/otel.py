"""OpenTelemetry spans for runs, following the GenAI semantic conventions.

One ``invoke_agent`` span per run, a ``chat {model}`` span per model request and an
``execute_tool {name}`` span per tool call, both children of their run's span whichever task
they run in. The run's span is a child of the span current where the run starts, so concurrent
runs each nest under their own caller. A model request's and a tool call's span are current
while they run, so spans the SDK's HTTP client or the tool itself makes nest inside them.

Message contents are recorded only with ``content=True``, as span events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import __version__
from ..loop.observe import RunFacts
from ..messages import ModelResponse, StopReason, ToolCallMessage, Usage
from ..models.base import ModelRequest
from ..transcript import message_to_dict

__all__ = ["OpenTelemetry"]

_PROVIDERS = {"google": "gcp.gemini", "gemini": "gcp.gemini", "openai-responses": "openai"}
"""tooloop provider names whose GenAI semantic-convention name differs."""

_FINISH = {
    StopReason.END_TURN: "stop",
    StopReason.TOOL_USE: "tool_call",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
}

_SETTINGS = (
    ("temperature", "gen_ai.request.temperature"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("top_p", "gen_ai.request.top_p"),
    ("seed", "gen_ai.request.seed"),
)


class OpenTelemetry:
    """A tracer making OpenTelemetry spans (``Agent(..., tracer=OpenTelemetry())``).

    ``tracer_provider`` defaults to the global one; ``content=True`` adds the messages sent and
    received, and tool arguments and results, as span events (off by default: they may hold
    personal data). ``agent_name`` names the ``invoke_agent`` span and sets ``gen_ai.agent.name``
    (default: the name of the agent that runs, ``Agent(name=...)``); a subagent's run keeps its
    own name (or its tool's) and carries ``tooloop.subagent.path``.
    """

    def __init__(self, tracer_provider: Any = None, *, content: bool = False, agent_name: str | None = None):
        self._tracer = trace.get_tracer("tooloop", __version__, tracer_provider=tracer_provider)
        self.content = content
        self.agent_name = agent_name

    def __repr__(self) -> str:
        return f"OpenTelemetry(content={self.content!r}, agent_name={self.agent_name!r})"

    def start_run(self, facts: RunFacts) -> _RunTrace:
        """The ``invoke_agent`` span of a run, a child of the span current now."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": _provider(facts.provider),
            "gen_ai.request.model": facts.model,
            "tooloop.run.id": facts.run_id,
        }
        # agent_name names the agent traced; a subagent it runs keeps its own name
        agent = facts.agent if facts.path is not None else self.agent_name or facts.agent
        if facts.path is not None:
            attributes["tooloop.subagent.path"] = facts.path
        if agent:
            attributes["gen_ai.agent.name"] = agent
        if facts.session_id is not None:
            attributes["gen_ai.conversation.id"] = facts.session_id
        if facts.tools:
            attributes["tooloop.tools"] = list(facts.tools)
        name = f"invoke_agent {agent}" if agent else "invoke_agent"
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        return _RunTrace(self, span, facts)


class _RunTrace:
    __slots__ = ("_context", "_otel", "facts", "span")

    def __init__(self, otel: OpenTelemetry, span: Span, facts: RunFacts):
        self._otel = otel
        self.span = span
        self.facts = facts
        self._context = trace.set_span_in_context(span)

    @contextlib.contextmanager
    def request(self, iteration: int, request: ModelRequest) -> Iterator[_RequestTrace]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider(self.facts.provider),
            "gen_ai.request.model": self.facts.model,
            "tooloop.iteration": iteration,
        }
        settings = request.settings
        for field, key in _SETTINGS:
            value = getattr(settings, field)
            if value is not None:
                attributes[key] = value
        if settings.stop:
            attributes["gen_ai.request.stop_sequences"] = list(settings.stop)
        with self._span(f"chat {self.facts.model}", SpanKind.CLIENT, attributes) as span:
            if self._otel.content:
                messages = json.dumps([message_to_dict(m) for m in request.messages], default=str, ensure_ascii=False)
                span.add_event("gen_ai.client.inference.operation.details", {"gen_ai.input.messages": messages})
            yield _RequestTrace(span, self._otel.content)

    @contextlib.contextmanager
    def tool(self, call: ToolCallMessage) -> Iterator[_ToolTrace]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool_name,
            "gen_ai.tool.call.id": call.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        with self._span(f"execute_tool {call.tool_name}", SpanKind.INTERNAL, attributes) as span:
            if self._otel.content:
                arguments = json.dumps(dict(call.arguments), default=str, ensure_ascii=False)
                span.add_event("gen_ai.tool.call", {"gen_ai.tool.call.arguments": arguments})
            yield _ToolTrace(span, self._otel.content)

    @contextlib.contextmanager
    def _span(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Iterator[Span]:
        """A child of the run's span, current while the block runs; an escaping exception is recorded."""
        span = self._otel._tracer.start_span(name, context=self._context, kind=kind, attributes=attributes)
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                yield span
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            span.end()

    def finished(
        self, stop_reason: StopReason | None, usage: Usage, error: BaseException | None, transcript: Any
    ) -> None:
        span = self.span
        _set_usage(span, usage)
        span.set_attribute("tooloop.usage.requests", usage.requests)
        span.set_attribute("tooloop.usage.tool_calls", usage.tool_calls)
        if stop_reason is not None:
            span.set_attribute("tooloop.stop_reason", stop_reason.value)
        elif error is None:
            span.set_attribute("tooloop.stop_reason", "abandoned")
        if error is not None:
            _failed(span, error)
        span.end()


class _RequestTrace:
    __slots__ = ("content", "span")

    def __init__(self, span: Span, content: bool):
        self.span = span
        self.content = content

    def finished(self, response: ModelResponse, cost: Any) -> None:
        span = self.span
        if response.model:
            span.set_attribute("gen_ai.response.model", response.model)
        response_id = getattr(response, "id", None)
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)
        span.set_attribute(
            "gen_ai.response.finish_reasons", [_FINISH.get(response.stop_reason, response.stop_reason.value)]
        )
        _set_usage(span, response.usage)
        if self.content:
            output = {"text": response.text, "tool_calls": [_call(c) for c in response.tool_calls]}
            details = {"gen_ai.output.messages": json.dumps(output, default=str, ensure_ascii=False)}
            span.add_event("gen_ai.client.inference.operation.details", details)


class _ToolTrace:
    __slots__ = ("content", "span")

    def __init__(self, span: Span, content: bool):
        self.span = span
        self.content = content

    def finished(self, outcome: ToolCallMessage) -> None:
        span = self.span
        span.set_attribute("tooloop.tool.status", outcome.status.value)
        if outcome.is_error and outcome.status is not outcome.status.CANCELLED:
            span.set_attribute("error.type", outcome.error_type or "ToolError")
            if outcome.error is not None:
                span.record_exception(outcome.error)
            span.set_status(Status(StatusCode.ERROR, outcome.content))
        if self.content:
            span.add_event("gen_ai.tool.result", {"gen_ai.tool.call.result": outcome.content})


def _provider(provider: str) -> str:
    return _PROVIDERS.get(provider, provider)


def _call(call: Any) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _set_usage(span: Span, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cache_read_tokens:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    if usage.cache_write_tokens:
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    if usage.reasoning_tokens:
        span.set_attribute("tooloop.usage.reasoning_tokens", usage.reasoning_tokens)
    if usage.cost is not None:
        span.set_attribute("tooloop.usage.cost", str(usage.cost))


def _failed(span: Span, error: BaseException) -> None:
    """Record ``error`` on ``span``: a cancellation is noted, anything else is an error."""
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        span.set_attribute("tooloop.cancelled", True)
        return
    span.set_attribute("error.type", type(error).__qualname__)
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, str(error) or type(error).__name__))
