"""Seeing what the loop does: logging switches and OpenTelemetry tracing.

* :func:`configure_logging` prints the ``tooloop`` loggers to stderr (as ``TOOLOOP_LOG`` does);
  ``content=True`` adds message contents at debug level (as ``TOOLOOP_LOG_CONTENT=1`` does).
* :class:`OpenTelemetry` traces runs following the OpenTelemetry GenAI semantic conventions
  (install ``tooloop[otel]``): per agent with ``Agent(..., tracer=OpenTelemetry())``, or every
  agent with :func:`instrument`.

Nothing here is imported by ``import tooloop``, and OpenTelemetry is imported only when a
tracer is made.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TextIO

from .._logging import install_handler, set_log_content
from ..loop.observe import Tracer, set_default_tracer

if TYPE_CHECKING:
    from .otel import OpenTelemetry

__all__ = ["OpenTelemetry", "configure_logging", "instrument", "set_log_content", "uninstrument"]


def configure_logging(
    level: str | int | None = "info", *, content: bool | None = None, stream: TextIO | None = None
) -> logging.Handler | None:
    """Print ``tooloop`` logs at ``level`` to ``stream`` (stderr) in a readable form.

    ``content=True`` also logs message contents at debug level; keys and headers never are.
    ``level=None`` removes the handler again. Returns the handler.
    """
    if content is not None:
        set_log_content(content)
    return install_handler(level, stream)


def instrument(tracer: Tracer | None = None, *, tracer_provider: Any = None, content: bool = False) -> Tracer:
    """Trace every run of every agent that has no tracer of its own; returns the tracer.

    Without ``tracer`` an :class:`OpenTelemetry` tracer is made on ``tracer_provider`` (the global
    provider by default), with message contents as span events when ``content`` is True.
    """
    if tracer is None:
        from .otel import OpenTelemetry

        tracer = OpenTelemetry(tracer_provider=tracer_provider, content=content)
    set_default_tracer(tracer)
    return tracer


def uninstrument() -> None:
    """Stop tracing agents that have no tracer of their own."""
    set_default_tracer(None)


def __getattr__(name: str) -> Any:
    if name == "OpenTelemetry":
        from .otel import OpenTelemetry

        return OpenTelemetry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
