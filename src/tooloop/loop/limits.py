"""``Limits``: every bound a run respects, in one frozen object."""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import require, require_count, require_seconds
from ..messages import StopReason, Usage

__all__ = ["Limits", "budget_spent", "limit_reached"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Bounds on one run. The defaults are safe for interactive agents; raise them for long jobs.

    When a bound is reached the run stops with a stop reason and nothing is lost, except
    ``timeout``, which raises :class:`~tooloop.errors.RunTimeoutError` carrying the transcript.
    """

    max_turns: int = 25
    """Model requests per run; then the run stops with ``MAX_TURN_REQUESTS``."""
    max_tool_calls_per_turn: int = 32
    """Calls run from one response; extra calls are not run and get an error result saying why."""
    max_total_tokens: int | None = None
    """Input plus output tokens over the run; then the run stops with ``TOKEN_BUDGET``."""
    timeout: float | None = None
    """Seconds for the whole run."""
    tool_timeout: float | None = 300.0
    """Seconds one tool call may take unless the tool sets its own ``timeout``."""
    max_tool_result_chars: int | None = 100_000
    """Longer tool results are cut, with a visible marker saying how much was removed."""
    output_retries: int = 2
    """How many times the model is asked again when its final answer fails ``output_type``."""
    final_answer_on_limit: bool = False
    """When ``max_turns`` or the token budget is reached, make one last request without tools so
    the user gets an answer instead of a bare stop."""

    def __post_init__(self) -> None:
        require_count(self.max_turns, "Limits(max_turns=...)", 1)
        require_count(self.max_tool_calls_per_turn, "Limits(max_tool_calls_per_turn=...)", 1)
        require_count(self.max_total_tokens, "Limits(max_total_tokens=...)", 1, optional=True)
        require_count(self.max_tool_result_chars, "Limits(max_tool_result_chars=...)", 0, optional=True)
        require_count(self.output_retries, "Limits(output_retries=...)", 0)
        require_seconds(self.timeout, "Limits(timeout=...)")
        require_seconds(self.tool_timeout, "Limits(tool_timeout=...)")
        require(self.final_answer_on_limit, bool, "Limits(final_answer_on_limit=...)", "pass True or False")


def limit_reached(limits: Limits, iteration: int, usage: Usage) -> StopReason | None:
    """The limit that forbids another model request after ``iteration`` requests, if any."""
    if iteration >= limits.max_turns:
        return StopReason.MAX_TURN_REQUESTS
    if budget_spent(limits, usage):
        return StopReason.TOKEN_BUDGET
    return None


def budget_spent(limits: Limits, usage: Usage) -> bool:
    """True once ``usage`` reached the token budget."""
    budget = limits.max_total_tokens
    return budget is not None and usage.total_tokens >= budget
