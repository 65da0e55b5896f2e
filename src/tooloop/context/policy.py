"""``ContextPolicy``: decide before every model request what of the conversation is sent.

The store keeps every message; the policy only chooses what one request carries. Whatever the
strategy, the result keeps the system messages (``preserve_system``), the latest user message,
and tool batches whole (a batch of parallel calls is kept or dropped together). It fits the
budget whenever that is possible; otherwise :class:`~tooloop.errors.ContextBudgetError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._checks import describe
from ..errors import ArgumentTypeError, ArgumentValueError, ConfigurationError, ContextBudgetError
from ..messages import Message, ToolCallMessage, UserMessage
from ..models.profiles import DEFAULT_PROFILE, profile_for
from .strategies import Budget, MiddleOut, OldestFirst, RecentTurns, Strategy, middle_out, oldest_first, recent_turns
from .summary import Summarize, summarize
from .tokens import FunctionCounter, TokenCounter, counter_for
from .units import Unit, split_units

if TYPE_CHECKING:
    from ..models.base import Model

_Ordering = OldestFirst | MiddleOut | RecentTurns

__all__ = ["DEFAULT_CONTEXT_WINDOW", "ContextPolicy"]

DEFAULT_CONTEXT_WINDOW = DEFAULT_PROFILE.context_window
"""Context window assumed for a model neither the model object nor the profile table knows."""


class ContextPolicy:
    """How to fit a conversation into the model's context window (seed 002's ``ContextWindowConfig``).

    * ``max_tokens``: the budget in tokens; None means ``window_fraction`` × the model's window.
    * ``max_messages``: also cap the number of messages sent.
    * ``preserve_system``: never drop system messages.
    * ``min_recent_turns``: the last turns (from a user message on) are dropped only after
      everything older.
    * ``strategy``: ``oldest_first``, ``middle_out``, ``recent_turns(n)``, ``summarize(...)`` or a
      function ``(messages, budget) -> messages``; the names ``"oldest_first"``, ``"middle_out"``
      and ``"summarize"`` work too.
    * ``counter``: a :class:`TokenCounter`, or a plain function giving the tokens of a text
      (``lambda text: len(encoding.encode(text))``; each message costs its text's count plus a
      small overhead); None picks one for the model (:func:`counter_for`).

    Every value is checked here: a mistake is an ``ArgumentTypeError`` or ``ArgumentValueError``
    naming the parameter, not a failure at the first request.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        max_messages: int | None = None,
        *,
        preserve_system: bool = True,
        min_recent_turns: int = 1,
        strategy: Strategy | Summarize | str = oldest_first,
        window_fraction: float = 0.75,
        counter: TokenCounter | Callable[[str], int] | None = None,
    ):
        _positive(max_tokens, "max_tokens", "e.g. max_tokens=100_000, or None for a share of the window")
        _positive(max_messages, "max_messages", "e.g. max_messages=200, or None for no cap")
        if not isinstance(preserve_system, bool):
            raise ArgumentTypeError(
                f"ContextPolicy(preserve_system=...) takes True or False, got {describe(preserve_system)}"
            )
        if not isinstance(min_recent_turns, int) or isinstance(min_recent_turns, bool) or min_recent_turns < 0:
            raise ArgumentValueError(
                f"ContextPolicy(min_recent_turns=...) takes a whole number >= 0, got {describe(min_recent_turns)}"
            )
        if isinstance(window_fraction, bool) or not isinstance(window_fraction, int | float):
            raise ArgumentTypeError(
                f"ContextPolicy(window_fraction=...) takes a number in (0, 1], got {describe(window_fraction)}"
            )
        if not 0 < window_fraction <= 1:
            raise ArgumentValueError(f"window_fraction must be in (0, 1], got {window_fraction!r}")
        self.max_tokens = max_tokens
        self.max_messages = max_messages
        self.preserve_system = preserve_system
        self.min_recent_turns = min_recent_turns
        self.strategy: Strategy | Summarize = _strategy(strategy)
        self.window_fraction = window_fraction
        self.counter: TokenCounter | None = _counter(counter)

    def counter_for(self, model: Model | None) -> TokenCounter:
        """The counter used for ``model``."""
        if self.counter is not None:
            return self.counter
        return counter_for(getattr(model, "name", None))

    def budget(self, model: Model | None = None) -> Budget:
        """The budget of one request to ``model``."""
        tokens = self.max_tokens
        if tokens is None:
            window = getattr(model, "context_window", None) or _profile_window(model)
            tokens = int(window * self.window_fraction)
        return Budget(tokens, self.max_messages)

    async def prepare(
        self, messages: Sequence[Message], *, model: Model | None = None, overflow: bool = False
    ) -> Sequence[Message]:
        """What to send to ``model`` now; never changes ``messages``.

        ``overflow=True`` (the provider said the last request was too long) prunes to half of
        what was sent, for one retry.
        """
        counter = self.counter_for(model)
        budget = self.budget(model)
        if overflow:
            sent = sum(counter.count(m) for m in messages)
            budget = Budget(max(1, min(budget.tokens, sent) // 2), budget.messages)
        if isinstance(self.strategy, Summarize):
            return await self.strategy.apply(self, messages, budget, counter, model)
        return self.prune(messages, budget, counter)

    def prune(
        self, messages: Sequence[Message], budget: Budget, counter: TokenCounter | None = None
    ) -> Sequence[Message]:
        """The pruned messages for ``budget`` (``messages`` itself when it already fits)."""
        counter = counter or self.counter_for(None)
        if self.plan_fits(messages, budget, counter):
            return messages
        strategy = self.strategy
        if isinstance(strategy, Summarize):
            strategy = oldest_first
        elif not isinstance(strategy, OldestFirst | MiddleOut | RecentTurns):
            messages = _checked_custom(messages, strategy(messages, budget), self.preserve_system)
            strategy = oldest_first
        units = self.units(messages, counter)
        keep = self.plan(units, budget, strategy)
        if keep is None:
            return messages
        return [m for unit, kept in zip(units, keep, strict=True) if kept for m in messages[unit.start : unit.end]]

    def units(self, messages: Sequence[Message], counter: TokenCounter | None) -> list[Unit]:
        """``messages`` cut into units (single messages and whole tool batches), with their tokens."""
        return split_units(messages, counter or self.counter_for(None))

    def plan_fits(self, messages: Sequence[Message], budget: Budget, counter: TokenCounter) -> bool:
        """True when ``messages`` fit ``budget`` as they are."""
        if budget.messages is not None and len(messages) > budget.messages:
            return False
        return sum(counter.count(m) for m in messages) <= budget.tokens

    def plan(self, units: Sequence[Unit], budget: Budget, strategy: _Ordering = oldest_first) -> list[bool] | None:
        """Which units to keep, or None when everything fits. Raises ContextBudgetError."""
        tokens = sum(u.tokens for u in units)
        count = units[-1].end if units else 0
        if _fits(tokens, count, budget):
            return None
        required = self.required(units)
        turns = strategy.turns if isinstance(strategy, RecentTurns) else self.min_recent_turns
        recent_start = _recent_start(units, turns)
        old = [i for i in range(recent_start) if i not in required]
        recent = [i for i in range(recent_start, len(units)) if i not in required]
        always, order = strategy.order(old, recent)
        keep = [True] * len(units)
        for i in always:
            keep[i] = False
            tokens, count = tokens - units[i].tokens, count - units[i].size
        for i in order:
            if _fits(tokens, count, budget):
                break
            keep[i] = False
            tokens, count = tokens - units[i].tokens, count - units[i].size
        if not _fits(tokens, count, budget):
            raise _budget_error(units, required, budget)
        _start_with_user(units, keep, required)
        return keep

    def required(self, units: Sequence[Unit]) -> set[int]:
        """Indexes of the units that are never dropped: system messages (if preserved), the latest user message."""
        required = {i for i, u in enumerate(units) if u.system} if self.preserve_system else set()
        for i in range(len(units) - 1, -1, -1):
            if units[i].user:
                required.add(i)
                break
        return required


def _fits(tokens: int, count: int, budget: Budget) -> bool:
    return tokens <= budget.tokens and (budget.messages is None or count <= budget.messages)


def _recent_start(units: Sequence[Unit], turns: int) -> int:
    """Index of the unit where the last ``turns`` turns begin (len(units) when turns <= 0)."""
    if turns <= 0:
        return len(units)
    seen = 0
    for i in range(len(units) - 1, -1, -1):
        if units[i].user:
            seen += 1
            if seen == turns:
                return i
    return 0


def _start_with_user(units: Sequence[Unit], keep: list[bool], required: set[int]) -> None:
    """After pruning, drop kept answers or tool batches left before the first user message.

    Providers expect the conversation (after system messages) to open with a user turn.
    """
    if not any(kept and unit.user for unit, kept in zip(units, keep, strict=True)):
        return
    for i, unit in enumerate(units):
        if not keep[i] or unit.system:
            continue
        if unit.user or i in required:
            return
        keep[i] = False


def _budget_error(units: Sequence[Unit], required: set[int], budget: Budget) -> ContextBudgetError:
    tokens = sum(units[i].tokens for i in required)
    count = sum(units[i].size for i in required)
    limit = f"{budget.tokens} tokens" + (f" and {budget.messages} messages" if budget.messages is not None else "")
    return ContextBudgetError(
        f"the conversation cannot be made to fit the context budget of {limit}: the messages that must be "
        f"kept (system messages and the latest user message) alone need {tokens} tokens in {count} messages"
    )


def _checked_custom(original: Sequence[Message], result: Sequence[Message], preserve_system: bool) -> list[Message]:
    """A custom strategy's result with partial tool batches removed; it must keep what is required."""
    out = list(result)
    latest_user = next((m for m in reversed(original) if isinstance(m, UserMessage)), None)
    if latest_user is not None and not any(m is latest_user or m == latest_user for m in out):
        raise ConfigurationError("the custom context strategy dropped the latest user message")
    if preserve_system:
        missing = [m for m in original if m.kind == "system" and m not in out]
        if missing:
            raise ConfigurationError("the custom context strategy dropped a system message (preserve_system=True)")
    sizes: dict[str, int] = {}
    for m in original:
        if isinstance(m, ToolCallMessage):
            sizes[m.batch_id] = sizes.get(m.batch_id, 0) + 1
    runs: dict[str, int] = {}
    for unit in _batches(out):
        runs[unit[0]] = runs.get(unit[0], 0) + (1 if unit[1] == sizes.get(unit[0]) else 2)
    whole = {batch for batch, seen in runs.items() if seen == 1}
    return [m for m in out if not isinstance(m, ToolCallMessage) or m.batch_id in whole]


def _batches(messages: Sequence[Message]) -> list[tuple[str, int]]:
    """``(batch_id, length)`` of each run of adjacent same-batch tool calls."""
    runs: list[tuple[str, int]] = []
    previous: str | None = None
    for m in messages:
        if isinstance(m, ToolCallMessage):
            if m.batch_id == previous:
                runs[-1] = (previous, runs[-1][1] + 1)
            else:
                runs.append((m.batch_id, 1))
            previous = m.batch_id
        else:
            previous = None
    return runs


def _profile_window(model: Model | None) -> int:
    name = getattr(model, "name", None)
    return profile_for(name).context_window if isinstance(name, str) else DEFAULT_CONTEXT_WINDOW


def _positive(value: Any, name: str, example: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"ContextPolicy({name}=...) takes a whole number, got {describe(value)}; {example}")
    if value < 1:
        raise ArgumentValueError(f"ContextPolicy({name}=...) must be at least 1, got {value}; {example}")


def _check_arity(function: Callable[..., Any], count: int, name: str, expected: str) -> None:
    """Refuse a function that cannot be called with ``count`` positional arguments (when Python can tell)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # some builtins have none: they are tried when used
        return
    try:
        signature.bind(*range(count))
    except TypeError:
        shown = f"{getattr(function, '__qualname__', type(function).__name__)}({', '.join(signature.parameters)})"
        raise ArgumentTypeError(
            f"ContextPolicy({name}=...) got {shown}, which cannot be called with {count} "
            f"argument{'s' if count > 1 else ''}; pass {expected}"
        ) from None


_STRATEGY_NAMES = ("oldest_first", "middle_out", "summarize")


def _strategy(strategy: Any) -> Strategy | Summarize:
    """The strategy given, by value or by name."""
    if isinstance(strategy, str):
        if strategy == "oldest_first":
            return oldest_first
        if strategy == "middle_out":
            return middle_out
        if strategy == "summarize":
            return summarize()
        hint = "recent_turns(n) from tooloop.context" if strategy.startswith("recent") else ", ".join(_STRATEGY_NAMES)
        raise ArgumentValueError(f"ContextPolicy(strategy={strategy!r}) is no strategy; use {hint}")
    if isinstance(strategy, OldestFirst | MiddleOut | RecentTurns | Summarize):
        return strategy
    if strategy is recent_turns or strategy is summarize or isinstance(strategy, type):
        made = "recent_turns(n)" if strategy is recent_turns else f"{strategy.__name__}()"
        raise ArgumentTypeError(f"ContextPolicy(strategy=...) got {describe(strategy)}; call it: strategy={made}")
    if callable(strategy):
        _check_arity(strategy, 2, "strategy", "a function (messages, budget) -> messages")
        return strategy  # type: ignore[no-any-return]
    raise ArgumentTypeError(
        f"ContextPolicy(strategy=...) got {describe(strategy)}; use oldest_first, middle_out, recent_turns(n), "
        "summarize(...), a function (messages, budget) -> messages, or one of the names " + ", ".join(_STRATEGY_NAMES)
    )


def _counter(counter: Any) -> TokenCounter | None:
    """The counter given: a :class:`TokenCounter`, or a plain function of a text wrapped as one."""
    if isinstance(counter, type):  # a class has a count function too: the instance was meant
        raise ArgumentTypeError(
            f"ContextPolicy(counter=...) got the class {counter.__name__}; pass an instance, e.g. {counter.__name__}()"
        )
    if counter is None or (isinstance(counter, TokenCounter) and not isinstance(counter, str | bytes | list | tuple)):
        return counter  # (a str has a count method too)
    if callable(counter):
        _check_arity(counter, 1, "counter", "a function giving the tokens of a text: count(text) -> int")
        return FunctionCounter(counter)
    raise ArgumentTypeError(
        f"ContextPolicy(counter=...) got {describe(counter)}; pass a TokenCounter (an object with "
        "count(message) -> int) or a function giving the tokens of a text"
    )
