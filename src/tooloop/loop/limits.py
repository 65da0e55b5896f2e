"""``Limits``: every bound a run respects, in one frozen object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._checks import describe, require, require_count, require_seconds
from ..errors import ArgumentTypeError, ArgumentValueError
from ..messages import StopReason, Usage

if TYPE_CHECKING:  # imported where a cost limit is set: runs without one need no decimal
    from decimal import Decimal

__all__ = ["Limits", "Spending", "budget_spent", "cost_reached", "limit_reached"]


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
    max_cost: Decimal | float | str | None = None
    """US dollars over the run. Before each request the loop estimates its cost as that of the
    previous request (a conversation only grows, so the next request costs at least about as
    much) and stops with ``COST_LIMIT`` when the total would go over. The model's price must be
    known (see ``tooloop.models.prices``); otherwise the run fails before its first request. A
    response of unknown price later in the run (another model answered) stops it the same way:
    an unknown cost is never counted as zero."""
    final_answer_on_limit: bool = False
    """When ``max_turns`` or the token budget is reached, make one last request without tools so
    the user gets an answer instead of a bare stop."""
    max_repeats: int | None = 8
    """Times one call (the same tool with the same arguments) may run in a run. A response asking
    for it once more is not run and the run stops with ``REPEATED_CALL``. None: no bound."""
    max_repeated_errors: int | None = 5
    """Turns in a row whose calls all fail with the same error (same tool, same error text); then
    the run stops with ``REPEATED_ERROR``. Any other outcome starts the count again. None: no bound."""
    max_empty_responses: int = 2
    """Answers with no text and no tool call the loop goes on after (a paused turn, a structured
    answer asked again); one more in a row stops the run with ``EMPTY_RESPONSE``."""
    retry_cut_calls: bool = True
    """When the output limit cuts a response while it writes a tool call (the call is never run),
    ask once more with twice the request's ``ModelSettings.max_tokens``. Without a ``max_tokens``
    of the run's own, or on a second cut, the run stops with ``MAX_TOKENS``."""

    def __post_init__(self) -> None:
        require_count(self.max_turns, "Limits(max_turns=...)", 1)
        require_count(self.max_tool_calls_per_turn, "Limits(max_tool_calls_per_turn=...)", 1)
        require_count(self.max_total_tokens, "Limits(max_total_tokens=...)", 1, optional=True)
        require_count(self.max_tool_result_chars, "Limits(max_tool_result_chars=...)", 0, optional=True)
        require_count(self.output_retries, "Limits(output_retries=...)", 0)
        require_seconds(self.timeout, "Limits(timeout=...)")
        require_seconds(self.tool_timeout, "Limits(tool_timeout=...)")
        require(self.final_answer_on_limit, bool, "Limits(final_answer_on_limit=...)", "pass True or False")
        require_count(self.max_repeats, "Limits(max_repeats=...)", 1, optional=True)
        require_count(self.max_repeated_errors, "Limits(max_repeated_errors=...)", 1, optional=True)
        require_count(self.max_empty_responses, "Limits(max_empty_responses=...)", 0)
        require(self.retry_cut_calls, bool, "Limits(retry_cut_calls=...)", "pass True or False")
        if self.max_cost is not None:
            object.__setattr__(self, "max_cost", _dollars(self.max_cost))


class Spending(Protocol):
    """What the run has spent so far (a :class:`~tooloop.loop.record.Recorder`)."""

    @property
    def spent(self) -> Usage:
        """The usage so far (its tokens and cost are exact)."""
        ...


def limit_reached(limits: Limits, iteration: int, run: Spending, last: Usage | None = None) -> StopReason | None:
    """The limit that forbids another model request after ``iteration`` requests, if any.

    ``run.spent`` is read only when a token budget or a cost limit is set (it may sum the usage
    of the requests since it was last read). ``last`` is the previous request's usage: its cost is
    the estimate of the next request's (read only under ``max_cost``: a cost is looked up when it
    is read).
    """
    if iteration >= limits.max_turns:
        return StopReason.MAX_TURN_REQUESTS
    if limits.max_total_tokens is None and limits.max_cost is None:
        return None
    usage = run.spent
    if budget_spent(limits, usage):
        return StopReason.TOKEN_BUDGET
    if limits.max_cost is not None and cost_reached(limits, usage, last):
        return StopReason.COST_LIMIT
    return None


def cost_reached(limits: Limits, usage: Usage, last: Usage | None) -> bool:
    """True when the run's cost plus the next request's estimate (``last``'s cost, the previous
    request's) would go over ``max_cost``."""
    if limits.max_cost is None:
        return False
    if usage.cost is None and usage.requests:
        return True  # a request of unknown price (another model answered): the limit cannot be kept
    from decimal import Decimal

    spent = usage.cost or Decimal(0)
    next_cost = None if last is None else last.cost
    return spent + (next_cost or Decimal(0)) > Decimal(limits.max_cost)


def budget_spent(limits: Limits, usage: Usage) -> bool:
    """True once ``usage`` reached the token budget."""
    budget = limits.max_total_tokens
    return budget is not None and usage.total_tokens >= budget


def _dollars(value: object) -> Decimal:
    """``Limits(max_cost=...)`` as a ``Decimal``: a finite, non-negative number of US dollars."""
    from decimal import Decimal

    if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
        raise ArgumentTypeError(f"Limits(max_cost=...) got {describe(value)}; pass US dollars as a number, or None")
    try:
        cost = value if isinstance(value, Decimal) else Decimal(str(value))
    except ArithmeticError:
        cost = Decimal("NaN")
    if not cost.is_finite() or cost < 0:
        raise ArgumentValueError(
            f"Limits(max_cost=...) is {value!r}; max_cost must be a non-negative number of dollars"
        )
    return cost
