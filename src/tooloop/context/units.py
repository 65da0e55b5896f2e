"""A transcript cut into the pieces pruning keeps or drops whole: single messages and tool batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message, SystemMessage, ToolCallMessage, UserMessage
from .tokens import TokenCounter

__all__ = ["Unit", "split_units"]


@dataclass(frozen=True, slots=True)
class Unit:
    """Messages ``start:end`` of a transcript: one message, or every call of one tool batch."""

    start: int
    end: int
    tokens: int
    system: bool = False
    user: bool = False

    @property
    def size(self) -> int:
        """How many messages the unit holds."""
        return self.end - self.start


def split_units(messages: Sequence[Message], counter: TokenCounter) -> list[Unit]:
    """The units of ``messages``; adjacent tool calls with one ``batch_id`` form one unit."""
    units: list[Unit] = []
    i, n = 0, len(messages)
    while i < n:
        message = messages[i]
        tokens = counter.count(message)
        j = i + 1
        if isinstance(message, ToolCallMessage):
            while j < n:
                following = messages[j]
                if not isinstance(following, ToolCallMessage) or following.batch_id != message.batch_id:
                    break
                tokens += counter.count(following)
                j += 1
        units.append(
            Unit(i, j, tokens, system=isinstance(message, SystemMessage), user=isinstance(message, UserMessage))
        )
        i = j
    return units
