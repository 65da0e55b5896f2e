"""``FallbackModel``: a model made of others, tried in order when one is down.

A request goes to the first model; when it fails with one of the errors named by ``on`` (by
default a rate limit, an overloaded or failing server, a connection that failed, a timeout) the
same request goes to the next one. A bad request or a rejected key is never passed on unless
``on`` says so: the next model would most likely fail the same way, or hide a mistake.

A streamed request falls back only before the first event reached the listener: once text has
been shown, sending the request elsewhere would show a second, different answer after it.

The response says which model answered: its ``model`` (the provider's own name for it, else the
answering model's name) and ``provider_data["fallback"]`` (the answering model, its provider, and
the models skipped with the error each raised), which the transcript keeps on the answer or on
the first call of the batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from .._checks import describe
from ..errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ProviderConnectionError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from ..events import EventHandler, ModelEvent
from ..messages import ModelResponse
from .base import Model, ModelRequest
from .prices import priced

__all__ = ["DEFAULT_FALLBACK_ON", "FallbackModel"]

DEFAULT_FALLBACK_ON: tuple[type[Exception], ...] = (
    RateLimitError,
    ProviderOverloadedError,
    ProviderConnectionError,
    ProviderTimeoutError,
)
"""The errors that send a request to the next model unless ``on=`` names others."""

_log = logging.getLogger("tooloop.models.fallback")

FallbackOn = Iterable[type[Exception]] | Callable[[Exception], bool]


class FallbackModel:
    """Tries ``models`` in order, passing the request on when one fails with an error of ``on``.

    ``on`` is a list of exception classes (default :data:`DEFAULT_FALLBACK_ON`), or a function
    that takes the error and says whether to try the next model. Model strings
    (``"openai:gpt-4.1"``) are created here. ``name`` and ``provider`` are the first model's
    (its price is the one ``Limits.max_cost`` checks); each response is priced by the model that
    gave it.
    """

    __slots__ = ("_accepts", "models")

    def __init__(self, models: Sequence[Model | str], *, on: FallbackOn = DEFAULT_FALLBACK_ON):
        if isinstance(models, str | bytes) or not isinstance(models, Sequence):
            raise ArgumentTypeError(
                "FallbackModel takes a list of models, e.g. FallbackModel([primary, secondary]), "
                f"got {describe(models)}"
            )
        if len(models) < 2:
            raise ArgumentValueError(f"FallbackModel needs at least two models to fall back between, got {len(models)}")
        self.models: tuple[Model, ...] = tuple(_model(m, i) for i, m in enumerate(models))
        self._accepts = _accepts(on)

    @property
    def name(self) -> str:
        """The first model's name."""
        return self.models[0].name

    @property
    def provider(self) -> str:
        """The first model's provider (``"fallback"`` for a custom model without one)."""
        provider = getattr(self.models[0], "provider", None)
        return provider if isinstance(provider, str) else "fallback"

    def __repr__(self) -> str:
        return f"FallbackModel([{', '.join(_label(m) for m in self.models)}])"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """The first model's response to ``request``, or the next one's when it fails with an error of ``on``."""
        skipped: list[dict[str, str]] = []
        last = len(self.models) - 1
        for index, model in enumerate(self.models):
            heard = _Heard(on_event)
            try:
                response = await model.respond(request, heard if on_event is not None else None)
            except Exception as exc:
                if index == last or heard.any or not self._accepts(exc):
                    if skipped:
                        exc.add_note(f"FallbackModel tried before: {_tried(skipped)}")
                    raise
                skipped.append({"model": _label(model), "error": type(exc).__name__})
                _log.warning(
                    "%s failed (%s: %s); trying %s",
                    _label(model),
                    type(exc).__name__,
                    exc,
                    _label(self.models[index + 1]),
                )
                continue
            return _answered(response, model, skipped)
        raise AssertionError("unreachable: the last model's failure is raised")

    async def aclose(self) -> None:
        """Close every model that holds connections."""
        for model in self.models:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()


class _Heard:
    """Passes events on, remembering whether any went out (a stream that began cannot fall back)."""

    __slots__ = ("any", "handler")

    def __init__(self, handler: EventHandler | None):
        self.handler = handler
        self.any = False

    def __call__(self, event: ModelEvent) -> None:
        self.any = True
        if self.handler is not None:
            self.handler(event)


def _answered(response: ModelResponse, model: Model, skipped: list[dict[str, str]]) -> ModelResponse:
    provider = getattr(model, "provider", None)
    record: dict[str, Any] = {"model": model.name}
    if isinstance(provider, str):
        record["provider"] = provider
    if skipped:
        record["skipped"] = skipped
    usage = (
        priced(response.usage, provider, response.model or model.name) if isinstance(provider, str) else response.usage
    )
    return replace(
        response,
        model=response.model or model.name,
        usage=usage,
        provider_data={**response.provider_data, "fallback": record},
    )


def _model(value: object, index: int) -> Model:
    if isinstance(value, str):
        from .registry import get_model

        return get_model(value)
    if not callable(getattr(value, "respond", None)) or not isinstance(getattr(value, "name", None), str):
        raise ArgumentTypeError(
            f"FallbackModel: model {index} is {describe(value)}; pass tooloop models or model strings"
        )
    return value  # type: ignore[return-value]  # checked above: a name and a respond method


def _accepts(on: object) -> Callable[[Exception], bool]:
    if isinstance(on, type) or isinstance(on, str | bytes):
        raise ArgumentTypeError(f"FallbackModel(on=...) takes a list of exception classes or a function, got {on!r}")
    if callable(on):
        return on
    if not isinstance(on, Iterable):
        raise ArgumentTypeError(
            f"FallbackModel(on=...) takes a list of exception classes or a function, got {describe(on)}"
        )
    classes = tuple(on)
    wrong = [c for c in classes if not (isinstance(c, type) and issubclass(c, Exception))]
    if wrong:
        raise ArgumentTypeError(f"FallbackModel(on=...) takes exception classes, got {', '.join(map(repr, wrong))}")
    return lambda exc: isinstance(exc, classes)


def _label(model: Model) -> str:
    provider = getattr(model, "provider", None)
    return f"{provider}:{model.name}" if isinstance(provider, str) else model.name


def _tried(skipped: list[dict[str, str]]) -> str:
    return ", ".join(f"{s['model']} ({s['error']})" for s in skipped)
