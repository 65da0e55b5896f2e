"""What each model request sends: the system prompt, the transcript, and the context policy's cut."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ..errors import ContextBudgetError
from ..messages import Message, SystemMessage
from ..models.base import Model
from ..transcript import Transcript

__all__ = ["ContextShaper", "Shaper"]


class ContextShaper(Protocol):
    """Shapes what is sent before every model request (pruning, summaries); never the transcript."""

    async def prepare(
        self, messages: Sequence[Message], *, model: Model | None = None, overflow: bool = False
    ) -> Sequence[Message]:
        """The messages to send; ``overflow`` means the provider said the last request was too long."""
        ...


class Shaper:
    """Builds the messages of a request from the transcript."""

    __slots__ = ("_head", "context", "model", "system")

    def __init__(self, system: str | None, context: ContextShaper | None, model: Model):
        self.system = system
        self.context = context
        self.model = model
        self._head = SystemMessage(system) if system else None  # one for every request (messages are frozen)

    async def messages(self, transcript: Transcript, *, overflow: bool = False) -> Sequence[Message]:
        """The system prompt (unless the transcript starts with one) and the transcript, shaped."""
        base = self.base(transcript)
        if self.context is not None:
            return await self.context.prepare(base, model=self.model, overflow=overflow)
        return base

    def base(self, transcript: Transcript) -> Sequence[Message]:
        """The system prompt (unless the transcript starts with one) and the transcript, not shaped
        (what :meth:`messages` gives without a context policy)."""
        if self._head is not None and not (transcript and isinstance(transcript[0], SystemMessage)):
            return _View(self._head, transcript)
        return transcript

    async def smaller(self, transcript: Transcript, sent: Sequence[Message]) -> Sequence[Message] | None:
        """A smaller request after the provider said ``sent`` was too long; None if none helps."""
        if self.context is None:
            return None
        try:
            smaller = await self.messages(transcript, overflow=True)
        except ContextBudgetError:
            return None
        return smaller if len(smaller) < len(sent) else None


class _View(Sequence[Message]):
    """The system message followed by the transcript, without copying the transcript."""

    __slots__ = ("_head", "_rest")

    def __init__(self, head: Message, rest: Transcript):
        self._head = head
        self._rest = rest

    def __len__(self) -> int:
        return len(self._rest) + 1

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        return self._head if index == 0 else self._rest[index - 1]

    def __iter__(self) -> Iterator[Message]:
        yield self._head
        yield from self._rest
