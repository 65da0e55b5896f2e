"""Large tool results summarised instead of cut (``Agent(summarize_results=...)``).

A result whose text is longer than ``Limits.max_tool_result_chars`` is cut by default. With a
summariser the model is told a summary instead: a function's, or one written by a model. A
summary still longer than the limit is cut; a summariser that fails leaves the cut result.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeAlias

from .._json import truncate
from ..messages import SystemMessage, ToolCallMessage, ToolCallStatus, ToolOutput, UserMessage
from ..models.base import Model, ModelRequest, ModelSettings
from ..outcome import render_result
from .contract import checked, pending_response

if TYPE_CHECKING:
    from .record import Recorder

__all__ = ["INSTRUCTIONS", "ResultSummarizer", "summarize_outcome"]

_log = logging.getLogger("tooloop.loop")

ResultSummarizer: TypeAlias = Callable[[ToolCallMessage, str, int], "str | Awaitable[str]"]
"""``(call, text, limit) -> summary``: the call (its name and arguments), the result's whole text,
and the number of characters the summary should fit in. Sync or async."""

INSTRUCTIONS = (
    "You shorten the result of a tool call for an assistant that asked for it. Keep every fact, "
    "number, name and identifier the assistant is likely to need; drop repetition and boilerplate. "
    "Answer with the shortened result only, in at most {limit} characters."
)


async def summarize_outcome(
    outcome: ToolCallMessage, result: Any, limit: int | None, summarizer: ResultSummarizer | Model, record: Recorder
) -> ToolCallMessage:
    """``outcome`` with a summary as its content when its result's text is over ``limit``."""
    if limit is None or outcome.status is not ToolCallStatus.OK or isinstance(result, ToolOutput):
        return outcome
    try:
        text = render_result(result, None)
    except Exception:
        return outcome
    if len(text) <= limit:
        return outcome
    try:
        summary = await _summary(outcome, text, limit, summarizer, record)
    except Exception as exc:  # the cut result stands
        _log.warning("the result of %s could not be summarised, it is cut: %s", outcome.tool_name, exc)
        return outcome
    if not isinstance(summary, str):
        _log.warning("the summariser of %s gave %s, not text: the result is cut", outcome.tool_name, type(summary))
        return outcome
    return replace(outcome, content=truncate(summary, limit))


async def _summary(
    outcome: ToolCallMessage, text: str, limit: int, summarizer: ResultSummarizer | Model, record: Recorder
) -> Any:
    if isinstance(summarizer, Model):
        return await _by_model(summarizer, outcome, text, limit, record)
    answer = summarizer(outcome, text, limit)
    return await answer if inspect.isawaitable(answer) else answer


async def _by_model(model: Model, outcome: ToolCallMessage, text: str, limit: int, record: Recorder) -> str:
    asked = f"Tool {outcome.tool_name} was called with {dict(outcome.arguments)} and returned:\n\n{text}"
    request = ModelRequest(
        [SystemMessage(INSTRUCTIONS.format(limit=limit)), UserMessage(asked)],
        settings=ModelSettings(max_tokens=max(64, limit // 3)),
        tool_choice="none",
    )
    response = checked(model, await pending_response(model, request, None))
    record.count_request(response.usage)  # paid for: part of the run's usage
    return response.text
