"""Fault injection at the model seam: prove an agent survives what real providers do.

:class:`FaultyModel` wraps any :class:`~tooloop.models.base.Model` and, on chosen request numbers,
raises the errors tooloop's adapters raise (rate limits, timeouts, dropped connections, 5xx), cuts
a stream short, breaks tool-call arguments, adds a call to a tool that does not exist, or adds
latency. Every fault that fires is appended to :attr:`FaultyModel.fired`.

The provider adapters already retry transient errors inside ``respond`` (the SDK's own retries).
This wrapper sits outside the adapter, so an injected error reaches the loop as if those retries
were used up: it tests what the agent does when the provider really fails.

When a fault fires::

    RateLimit(on=1)              request 1 only (requests are numbered from 1)
    Timeout(on=(2, 3))           requests 2 and 3
    ServerError(every=3)         requests 3, 6, 9...
    DroppedConnection(probability=0.2)  each request with probability 0.2 (seeded: deterministic)
    Latency(0.5)                 every request (no trigger given)

``probability`` combines with ``on``/``every``: ``every=2, probability=0.5`` fires on half of the
even requests. Draws come from ``random.Random(seed)`` of the wrapper, so a run is repeatable.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

from .._json import to_jsonable
from ..errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from ..events import EventHandler, ModelEvent, TextDelta
from ..messages import ModelResponse, StopReason, ToolCall
from ..models.base import Model, ModelRequest

__all__ = [
    "DroppedConnection",
    "Fault",
    "FaultyModel",
    "FiredFault",
    "Latency",
    "MalformedToolArguments",
    "OrphanedToolCall",
    "RateLimit",
    "ServerError",
    "Timeout",
    "TruncatedStream",
    "inject",
]

PROVIDER = "fault-injection"
"""The ``provider`` of every injected error, so a test can tell it from a real one."""


@dataclass(frozen=True, slots=True)
class Fault:
    """Base of all faults: when it fires (``on``, ``every``, ``probability``)."""

    _: KW_ONLY
    on: int | tuple[int, ...] | None = None
    """Request number(s), counted from 1, on which the fault fires."""
    every: int | None = None
    """Fire on every n-th request."""
    probability: float | None = None
    """Fire with this probability (drawn from the wrapper's seeded random generator)."""

    def __post_init__(self) -> None:
        numbers = (self.on,) if isinstance(self.on, int) else (self.on or ())
        if any(not isinstance(n, int) or n < 1 for n in numbers):
            raise ConfigurationError(f"{type(self).__name__}: on= takes request numbers from 1, got {self.on!r}")
        if self.every is not None and self.every < 1:
            raise ConfigurationError(f"{type(self).__name__}: every= must be at least 1, got {self.every!r}")
        if self.probability is not None and not 0.0 <= self.probability <= 1.0:
            raise ConfigurationError(f"{type(self).__name__}: probability must be in [0, 1], got {self.probability!r}")

    def applies(self, number: int, rng: random.Random) -> bool:
        """True when the fault fires on request ``number``."""
        numbers = (self.on,) if isinstance(self.on, int) else (self.on or ())
        if self.on is None and self.every is None:
            selected = True
        else:
            selected = number in numbers or (self.every is not None and number % self.every == 0)
        if self.probability is not None:
            # Draw even when not selected, so the sequence of draws depends only on the seed.
            draw = rng.random()
            selected = selected and draw < self.probability
        return selected

    async def before(self, number: int) -> None:
        """Act before the real model is called (sleep, or raise a provider error)."""

    def after(self, response: ModelResponse, number: int) -> ModelResponse:
        """Change the real model's response; returning it unchanged means the fault did not apply."""
        return response


@dataclass(frozen=True, slots=True)
class RateLimit(Fault):
    """The provider answers 429: raises :class:`~tooloop.errors.RateLimitError`."""

    retry_after: float | None = None

    async def before(self, number: int) -> None:
        raise RateLimitError(
            f"injected fault: rate limited on request {number}",
            retry_after=self.retry_after,
            status_code=429,
            provider=PROVIDER,
        )


@dataclass(frozen=True, slots=True)
class Timeout(Fault):
    """The request times out: raises :class:`~tooloop.errors.ProviderTimeoutError`."""

    async def before(self, number: int) -> None:
        raise ProviderTimeoutError(f"injected fault: request {number} timed out", provider=PROVIDER)


@dataclass(frozen=True, slots=True)
class DroppedConnection(Fault):
    """The connection fails before anything arrives: raises :class:`~tooloop.errors.ProviderConnectionError`."""

    async def before(self, number: int) -> None:
        raise ProviderConnectionError(f"injected fault: connection dropped on request {number}", provider=PROVIDER)


@dataclass(frozen=True, slots=True)
class ServerError(Fault):
    """The provider fails with a 5xx: raises :class:`~tooloop.errors.ProviderOverloadedError`."""

    status: int = 500

    def __post_init__(self) -> None:
        Fault.__post_init__(self)
        if not 500 <= self.status <= 599:
            raise ConfigurationError(f"ServerError: status must be a 5xx code, got {self.status!r}")

    async def before(self, number: int) -> None:
        raise ProviderOverloadedError(
            f"injected fault: server error {self.status} on request {number}",
            status_code=self.status,
            provider=PROVIDER,
        )


@dataclass(frozen=True, slots=True)
class Latency(Fault):
    """The provider is slow: waits ``seconds`` before calling the real model."""

    seconds: float = 0.0

    async def before(self, number: int) -> None:
        await asyncio.sleep(self.seconds)


@dataclass(frozen=True, slots=True)
class TruncatedStream(Fault):
    """The stream is cut after ``after_chars`` characters of answer text.

    The real model is called and its deltas are collected; the caller receives them up to the cut
    (the last text delta shortened to fit), then :class:`~tooloop.errors.ProviderConnectionError`
    is raised, as an adapter does when a stream ends without its final event.
    """

    after_chars: int = 0

    async def cut(
        self, model: Model, request: ModelRequest, on_event: EventHandler | None, number: int
    ) -> ModelResponse:
        """Call ``model``, forward the first ``after_chars`` characters, then fail."""
        events: list[ModelEvent] = []
        response = await model.respond(request, events.append)
        if not events and response.text:
            events.append(TextDelta(response.text))
        remaining = self.after_chars
        for event in events:
            if isinstance(event, TextDelta):
                if remaining <= 0:
                    break
                piece = event.text[:remaining]
                remaining -= len(piece)
                event = TextDelta(piece) if piece != event.text else event
            if on_event is not None:
                on_event(event)
        raise ProviderConnectionError(
            f"injected fault: stream of request {number} cut after {self.after_chars - remaining} characters",
            provider=PROVIDER,
        )


@dataclass(frozen=True, slots=True)
class MalformedToolArguments(Fault):
    """Every tool call of the response gets its arguments as complete but invalid JSON: the object
    written with single quotes, as some models write Python dicts.

    (Arguments that stop half way are a response cut off by the output limit: the loop never runs
    those and stops, see ``Limits.retry_cut_calls``.) Applies only to responses with tool calls;
    streamed argument deltas pass through unchanged.
    """

    def after(self, response: ModelResponse, number: int) -> ModelResponse:
        if not response.tool_calls:
            return response
        calls = tuple(replace(call, arguments=_broken(call.arguments)) for call in response.tool_calls)
        return replace(response, tool_calls=calls)


def _broken(arguments: Any) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(to_jsonable(arguments))
    if not text.strip().startswith("{"):
        text = "{}"
    # Single quotes are never valid JSON strings; an object without keys gets a bare word instead.
    broken = text.strip().replace('"', "'")
    return broken if "'" in broken else "{arguments}"


@dataclass(frozen=True, slots=True)
class OrphanedToolCall(Fault):
    """The response gains a call to a tool the agent does not have (``tool_name``).

    This is the hallucinated-tool failure real models produce. A robust loop answers the call with
    an unknown-tool error, keeps the real calls of the batch, and lets the model continue; a text
    answer becomes a tool-use response, so the run needs one more request to finish.
    """

    tool_name: str = "no_such_tool"

    def after(self, response: ModelResponse, number: int) -> ModelResponse:
        orphan = ToolCall(id=f"orphan_{number}", name=self.tool_name, arguments={})
        return replace(response, tool_calls=(*response.tool_calls, orphan), stop_reason=StopReason.TOOL_USE)


@dataclass(frozen=True, slots=True)
class FiredFault:
    """A fault that fired, and on which request."""

    request: int
    fault: Fault


class FaultyModel:
    """A :class:`~tooloop.models.base.Model` that injects ``faults`` into another model's requests.

    Faults fire in the order given: the ones acting before the call (latency, errors) first, then a
    truncated stream, then the ones changing the response.
    """

    def __init__(self, model: Model, faults: Iterable[Fault] = (), *, seed: int = 0) -> None:
        self.model = model
        self.faults: tuple[Fault, ...] = tuple(faults)
        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise ConfigurationError(f"not a fault: {fault!r}")
        self.fired: list[FiredFault] = []
        self.requests = 0
        self._rng = random.Random(seed)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.model.name

    def fired_on(self, fault_type: type[Fault]) -> list[int]:
        """Request numbers on which a fault of ``fault_type`` fired."""
        return [f.request for f in self.fired if isinstance(f.fault, fault_type)]

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Send ``request`` to the wrapped model, with the faults due on this request."""
        self.requests += 1
        number = self.requests
        active = [fault for fault in self.faults if fault.applies(number, self._rng)]
        for fault in active:
            if type(fault).before is not Fault.before:
                self.fired.append(FiredFault(number, fault))
                await fault.before(number)
        truncation = next((f for f in active if isinstance(f, TruncatedStream)), None)
        if truncation is not None:
            self.fired.append(FiredFault(number, truncation))
            return await truncation.cut(self.model, request, on_event, number)
        response = await self.model.respond(request, on_event)
        return self._after(active, response, number)

    def _after(self, active: Sequence[Fault], response: ModelResponse, number: int) -> ModelResponse:
        for fault in active:
            changed = fault.after(response, number)
            if changed is not response:
                self.fired.append(FiredFault(number, fault))
                response = changed
        return response


def inject(model: Model, *faults: Fault, seed: int = 0) -> FaultyModel:
    """``model`` wrapped so that ``faults`` fire on their requests (see :class:`FaultyModel`)."""
    return FaultyModel(model, faults, seed=seed)
