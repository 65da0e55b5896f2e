"""Pruning strategies: the order in which droppable units go when a conversation is too long."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._checks import require_count
from ..messages import Message

__all__ = [
    "Budget",
    "CustomStrategy",
    "MiddleOut",
    "OldestFirst",
    "RecentTurns",
    "Strategy",
    "middle_out",
    "oldest_first",
    "recent_turns",
]


@dataclass(frozen=True, slots=True)
class Budget:
    """What one request may hold: tokens (by the policy's counter) and, optionally, messages."""

    tokens: int
    messages: int | None = None


@dataclass(frozen=True, slots=True)
class OldestFirst:
    """Drop the oldest messages first."""

    def order(self, old: Sequence[int], recent: Sequence[int]) -> tuple[list[int], list[int]]:
        """``(always_drop, drop_order)`` over droppable unit indexes."""
        return [], [*old, *recent]


@dataclass(frozen=True, slots=True)
class MiddleOut:
    """Drop from the middle outwards: the start of the conversation (the task) and the end stay."""

    def order(self, old: Sequence[int], recent: Sequence[int]) -> tuple[list[int], list[int]]:
        """``(always_drop, drop_order)`` over droppable unit indexes."""
        middle = (len(old) - 1) / 2
        by_distance = sorted(range(len(old)), key=lambda k: (abs(k - middle), -k))
        return [], [*(old[k] for k in by_distance), *recent]


@dataclass(frozen=True, slots=True)
class RecentTurns:
    """Send only the last ``turns`` turns (a turn starts at a user message), then oldest first."""

    turns: int

    def order(self, old: Sequence[int], recent: Sequence[int]) -> tuple[list[int], list[int]]:
        """``(always_drop, drop_order)``; the policy passes the last ``turns`` turns as ``recent``."""
        return list(old), list(recent)


CustomStrategy = Callable[[Sequence[Message], Budget], Sequence[Message]]
"""A function ``(messages, budget) -> messages``; its result is checked and, if needed, pruned further."""

Strategy = OldestFirst | MiddleOut | RecentTurns | CustomStrategy

oldest_first = OldestFirst()
middle_out = MiddleOut()


def recent_turns(turns: int) -> RecentTurns:
    """Keep only the last ``turns`` turns (plus the system message)."""
    require_count(turns, "recent_turns(turns)", 1)
    return RecentTurns(turns)
