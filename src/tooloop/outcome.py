"""What the model is told about a tool call's outcome: the one renderer.

A call's outcome is rendered once, when it finishes (:func:`render_result`, :func:`render_error`),
and kept as :attr:`ToolCallMessage.content`. Every provider adapter sends it through
:func:`for_model`, which gives the same :class:`ToolOutcome` for every provider; an adapter only
chooses the wire field (a ``tool`` message, a ``tool_result`` block with ``is_error``, a Gemini
``functionResponse`` under ``result`` or ``error``...). The fixed sentences for outcomes that
have no text of their own (interrupted, awaiting approval, a failure without a message) live here
too.

Content parts (images, files) will be one more field of :class:`ToolOutcome`, filled here and
read by the adapters that can send them natively; the others keep sending ``text``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_never

from ._json import error_text, render, truncate
from .messages import ToolCallMessage, ToolCallStatus

__all__ = ["AWAITING", "INTERRUPTED", "ToolOutcome", "for_model", "render_error", "render_result"]

INTERRUPTED = "Error: this tool call was interrupted before it produced a result; it was not run again."
"""The result of a call that started and never finished (a crash, an edited history), closed
without running it again (a new prompt arrived, or it is not in the last batch)."""

AWAITING = "Awaiting approval: this call has not run yet."
"""The result of a call waiting for a person's decision (never sent to a model)."""

_ERROR_PREFIX = "Error: "


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a model is told about one tool call: ``text``, and whether the call failed."""

    text: str
    is_error: bool


def render_result(value: Any, limit: int | None) -> str:
    """The text of a tool's return value: strings as they are, structures as JSON, cut to ``limit``."""
    return truncate(render(value), limit)


def render_error(error: BaseException, limit: int | None = None) -> str:
    """The text of a failure: the error's type name and message, cut to ``limit``."""
    return truncate(error_text(error), limit)


def for_model(call: ToolCallMessage) -> ToolOutcome:
    """The outcome of ``call`` as every provider receives it.

    A failure (error, denied, cancelled, unfinished) always reads as one: its text starts with
    ``Error:``, and a failure without text says what happened.
    """
    if call.status is ToolCallStatus.OK:
        return ToolOutcome(call.content, False)
    text = call.content if call.content.strip() else _without_text(call.status)
    if not text.lower().startswith("error"):
        text = _ERROR_PREFIX + text
    return ToolOutcome(text, True)


def _without_text(status: ToolCallStatus) -> str:
    match status:
        case ToolCallStatus.ERROR:
            return "the tool call failed."
        case ToolCallStatus.DENIED:
            return "the tool call was denied."
        case ToolCallStatus.CANCELLED:
            return "the tool call was cancelled before it finished."
        case ToolCallStatus.PENDING | ToolCallStatus.STARTED | ToolCallStatus.OK:
            return INTERRUPTED[len(_ERROR_PREFIX) :]
        case _:
            assert_never(status)
