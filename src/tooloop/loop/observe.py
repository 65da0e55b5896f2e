"""What the loop reports about a run: log records, and spans when a tracer is set.

The loop calls one :class:`Watch` per run at a few points (run start and end, each model request,
each tool call). A run gets no watch at all when its loggers are silent and no tracer is set, so
observing costs nothing when it is off. Tracers (OpenTelemetry lives in ``tooloop.telemetry``)
implement the small :class:`Tracer` protocol below; the core never imports them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from .._logging import content_logged, model_logger
from ..messages import ModelResponse, StopReason, ToolCallMessage, Usage
from ..models.base import Model, ModelRequest

__all__ = [
    "RequestTrace",
    "RunFacts",
    "RunTrace",
    "ToolTrace",
    "Tracer",
    "Watch",
    "default_tracer",
    "set_default_tracer",
]

LOOP = logging.getLogger("tooloop.loop")
INFO, DEBUG = logging.INFO, logging.DEBUG


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a tracer learns about a run when it starts."""

    run_id: str
    model: str
    provider: str
    session_id: str | None
    tools: tuple[str, ...]
    system: str | None
    agent: str | None = None
    """The agent's name (``Agent(name=...)``), if it has one; a subagent's run without one is
    named after its tool."""
    path: str | None = None
    """A subagent's run: the path of the call that runs it (``"c1"``, deeper ``"c1/c7"``)."""


class RequestTrace(Protocol):
    """One model request being traced."""

    def finished(self, response: ModelResponse, cost: Any) -> None:
        """The response arrived (``cost`` is a ``Decimal`` in USD or None)."""
        ...


class ToolTrace(Protocol):
    """One tool call being traced."""

    def finished(self, outcome: ToolCallMessage) -> None:
        """The call has its outcome."""
        ...


class RunTrace(Protocol):
    """One run being traced. The context managers record an exception that escapes them."""

    def request(self, iteration: int, request: ModelRequest) -> AbstractContextManager[RequestTrace]:
        """Trace one model request; current (for spans the SDK's HTTP client makes) while it runs."""
        ...

    def tool(self, call: ToolCallMessage) -> AbstractContextManager[ToolTrace]:
        """Trace one tool call; current while the tool runs, so the tool's own spans nest in it."""
        ...

    def finished(
        self, stop_reason: StopReason | None, usage: Usage, error: BaseException | None, transcript: Any
    ) -> None:
        """The run ended with ``stop_reason`` (None when ``error`` ended it or it was abandoned)."""
        ...


class Tracer(Protocol):
    """Makes a :class:`RunTrace` for each run; see ``tooloop.telemetry.OpenTelemetry``."""

    def start_run(self, facts: RunFacts) -> RunTrace:
        """Begin tracing a run (called in the task that starts it, so it can see the caller's span)."""
        ...


_default: Tracer | None = None


def set_default_tracer(tracer: Tracer | None) -> None:
    """Trace every run of agents that do not set their own tracer (None: stop)."""
    global _default
    _default = tracer


def default_tracer() -> Tracer | None:
    """The tracer set with :func:`set_default_tracer`."""
    return _default


def provider_of(model: Model) -> str:
    """The model's provider name (``"openai"``, ``"test"``...), for loggers and spans."""
    provider = getattr(model, "provider", None)
    return provider if isinstance(provider, str) else type(model).__name__.lower()


class Watch:
    """Logs (and traces) one run. Created only when something listens."""

    __slots__ = ("_model_log", "_started", "_trace", "facts")

    def __init__(self, facts: RunFacts, tracer: Tracer | None):
        self.facts = facts
        self._model_log = model_logger(facts.provider)
        self._started = time.perf_counter()
        self._trace = tracer.start_run(facts) if tracer is not None else None

    @classmethod
    def start(cls, facts_of: Any, tracer: Tracer | None, provider: str) -> Watch | None:
        """A watch when a tracer is set or a logger listens, else None (``facts_of()`` is built only then)."""
        if tracer is None and not (LOOP.isEnabledFor(INFO) or model_logger(provider).isEnabledFor(INFO)):
            return None
        facts: RunFacts = facts_of()
        watch = cls(facts, tracer)
        LOOP.info(
            "run %s started: model=%s tools=%d session=%s",
            facts.run_id,
            facts.model,
            len(facts.tools),
            facts.session_id,
        )
        return watch

    def finished(
        self, stop_reason: StopReason | None, usage: Usage, error: BaseException | None, transcript: Any
    ) -> None:
        """Log the run's end and close its trace."""
        seconds = time.perf_counter() - self._started
        if error is not None:
            LOOP.warning("run %s failed after %.2fs: %r (%s)", self.facts.run_id, seconds, error, _usage_text(usage))
        elif stop_reason is None:
            LOOP.info("run %s abandoned after %.2fs (%s)", self.facts.run_id, seconds, _usage_text(usage))
        else:
            text = _usage_text(usage)
            LOOP.info("run %s finished in %.2fs: stop_reason=%s (%s)", self.facts.run_id, seconds, stop_reason, text)
        if self._trace is not None:
            self._trace.finished(stop_reason, usage, error, transcript)

    @contextlib.contextmanager
    def request(self, iteration: int, request: ModelRequest) -> Iterator[_Request]:
        """Around one model request: the caller reports the response with ``.finished()``."""
        log = self._model_log
        if log.isEnabledFor(DEBUG):
            log.debug("request %d to %s sent", iteration, self.facts.model)
            if content_logged():
                log.debug("request %d messages: %r", iteration, list(request.messages))
        started = time.perf_counter()
        handle = _Request(self, iteration, started)
        try:
            if self._trace is None:
                yield handle
            else:
                with self._trace.request(iteration, request) as traced:
                    handle.trace = traced
                    yield handle
        except BaseException as exc:
            log.warning(
                "request %d to %s failed after %.2fs: %r",
                iteration,
                self.facts.model,
                time.perf_counter() - started,
                exc,
            )
            raise
        response = handle.response
        if response is not None and log.isEnabledFor(INFO):
            log.info(
                "request %d to %s: %d messages, %d tools -> %s, %d tool calls, %d in / %d out tokens, %.2fs",
                iteration,
                self.facts.model,
                len(request.messages),
                len(request.tools),
                response.stop_reason,
                len(response.tool_calls),
                response.usage.input_tokens,
                response.usage.output_tokens,
                time.perf_counter() - started,
            )

    def retrying(self, iteration: int, why: str) -> None:
        """The loop asks the model again within the same turn, for ``why``."""
        self._model_log.info("request %d to %s retried: %s", iteration, self.facts.model, why)

    @contextlib.contextmanager
    def tool(self, call: ToolCallMessage) -> Iterator[_Tool]:
        """Around one tool call: the caller reports its outcome with ``.finished()``."""
        handle = _Tool(call, time.perf_counter())
        try:
            if self._trace is None:
                yield handle
            else:
                with self._trace.tool(call) as traced:
                    handle.trace = traced
                    yield handle
        except BaseException as exc:
            LOOP.info("tool %s (%s) interrupted: %r", call.tool_name, call.tool_call_id, exc)
            raise
        outcome = handle.outcome
        if outcome is None:
            return
        seconds = time.perf_counter() - handle.started
        LOOP.info("tool %s (%s): %s in %.3fs", call.tool_name, call.tool_call_id, outcome.status, seconds)
        if LOOP.isEnabledFor(DEBUG) and content_logged():
            LOOP.debug("tool %s arguments=%r result=%r", call.tool_call_id, dict(call.arguments), outcome.content)


class _Request:
    __slots__ = ("iteration", "response", "started", "trace", "watch")

    def __init__(self, watch: Watch, iteration: int, started: float):
        self.watch = watch
        self.iteration = iteration
        self.started = started
        self.response: ModelResponse | None = None
        self.trace: RequestTrace | None = None

    def finished(self, response: ModelResponse, cost: Any) -> None:
        self.response = response
        log = self.watch._model_log
        if log.isEnabledFor(DEBUG) and content_logged():
            log.debug("response %d text=%r tool_calls=%r", self.iteration, response.text, response.tool_calls)
        if self.trace is not None:
            self.trace.finished(response, cost)


class _Tool:
    __slots__ = ("call", "outcome", "started", "trace")

    def __init__(self, call: ToolCallMessage, started: float):
        self.call = call
        self.started = started
        self.outcome: ToolCallMessage | None = None
        self.trace: ToolTrace | None = None

    def finished(self, outcome: ToolCallMessage) -> None:
        self.outcome = outcome
        if self.trace is not None:
            self.trace.finished(outcome)


def _usage_text(usage: Usage) -> str:
    text = f"{usage.input_tokens} in / {usage.output_tokens} out tokens, {usage.requests} requests"
    cost = getattr(usage, "cost", None)
    return text if cost is None else f"{text}, ${cost}"
