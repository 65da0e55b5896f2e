"""The ``summarize`` strategy: a model writes a summary of what is dropped, which takes its place.

The summary is sent as a :class:`~tooloop.messages.SystemMessage` right after the leading system
messages, its text starting with :data:`SUMMARY_PREFIX` (see :func:`is_summary`). It is cached:
later requests reuse it while the dropped part stays the same, and when more must go the model
is asked to extend the previous summary with the newly dropped messages only. When it prunes,
it prunes down to ``headroom`` of the budget so the next requests fit without a new summary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, UserMessage
from ..models.base import ModelRequest, ModelSettings
from .strategies import Budget, oldest_first
from .tokens import TokenCounter

if TYPE_CHECKING:
    from ..models.base import Model
    from .policy import ContextPolicy

__all__ = ["SUMMARY_PREFIX", "Summarize", "is_summary", "summarize"]

SUMMARY_PREFIX = "[Summary of the earlier conversation]\n"

INSTRUCTIONS = (
    "You compress conversations between a user and an AI assistant that uses tools. Write a concise summary "
    "of the messages you are given: the user's goals and constraints, decisions made, facts learned from "
    "tool results (names, numbers, paths, ids), and open questions. Write plain prose, no preamble."
)


def is_summary(message: Message) -> bool:
    """True for a summary message written by the ``summarize`` strategy."""
    return isinstance(message, SystemMessage) and message.text.startswith(SUMMARY_PREFIX)


@dataclass
class _Cache:
    dropped: list[Message] = field(default_factory=list)
    text: str = ""


@dataclass
class Summarize:
    """Settings of the ``summarize`` strategy; create it with :func:`summarize`."""

    model: Model | None = None
    instructions: str = INSTRUCTIONS
    summary_tokens: int = 1024
    headroom: float = 0.6
    _cache: _Cache = field(default_factory=_Cache, repr=False)

    async def apply(
        self,
        policy: ContextPolicy,
        messages: Sequence[Message],
        budget: Budget,
        counter: TokenCounter,
        model: Model | None,
    ) -> Sequence[Message]:
        """The messages to send: kept messages with the summary of the dropped ones in front."""
        if policy.plan_fits(messages, budget, counter):
            return messages
        reserve = min(self.summary_tokens, budget.tokens // 4)
        inner = Budget(budget.tokens - reserve - 8, None if budget.messages is None else budget.messages - 1)
        dropped, kept = self._reuse(policy, messages, inner, counter)
        if dropped is None:
            target = Budget(int(inner.tokens * self.headroom), inner.messages)
            dropped, kept = _split(policy, messages, target, counter)
            if not dropped:
                dropped, kept = _split(policy, messages, inner, counter)
            await self._summarize(dropped, model, reserve)
        room = budget.tokens - sum(counter.count(m) for m in kept)
        summary = _fitted_summary(self._cache.text, room, counter)
        head = 0
        while head < len(kept) and isinstance(kept[head], SystemMessage):
            head += 1
        return [*kept[:head], summary, *kept[head:]]

    def _reuse(
        self, policy: ContextPolicy, messages: Sequence[Message], inner: Budget, counter: TokenCounter
    ) -> tuple[list[Message] | None, list[Message]]:
        cached = self._cache.dropped
        if not cached:
            return None, []
        dropped, kept = _split_at(policy, messages, len(cached))
        if dropped != cached:
            return None, []
        tokens = sum(counter.count(m) for m in kept)
        if tokens > inner.tokens or (inner.messages is not None and len(kept) > inner.messages):
            return None, []
        return dropped, kept

    async def _summarize(self, dropped: list[Message], model: Model | None, reserve: int) -> None:
        chosen = self.model or model
        if chosen is None:
            raise ValueError("summarize() needs a model: pass summarize(model=...) or prepare(..., model=...)")
        cached = self._cache
        if cached.dropped and dropped[: len(cached.dropped)] == cached.dropped:
            text = f"Summary so far:\n{cached.text}\n\nNewer messages:\n{_render(dropped[len(cached.dropped) :])}"
        else:
            text = _render(dropped)
        request = ModelRequest(
            [SystemMessage(self.instructions), UserMessage(text)], settings=ModelSettings(max_tokens=reserve)
        )
        response = await chosen.respond(request)
        self._cache = _Cache(list(dropped), response.text.strip())


def summarize(
    model: Model | None = None, *, instructions: str = INSTRUCTIONS, summary_tokens: int = 1024, headroom: float = 0.6
) -> Summarize:
    """A strategy that replaces dropped messages with a summary written by ``model`` (default: the agent's)."""
    return Summarize(model=model, instructions=instructions, summary_tokens=summary_tokens, headroom=headroom)


def _split(
    policy: ContextPolicy, messages: Sequence[Message], budget: Budget, counter: TokenCounter
) -> tuple[list[Message], list[Message]]:
    units = policy.units(messages, counter)
    keep = policy.plan(units, budget, oldest_first)
    if keep is None:
        return [], list(messages)
    dropped: list[Message] = []
    kept: list[Message] = []
    for unit, flag in zip(units, keep, strict=True):
        (kept if flag else dropped).extend(messages[unit.start : unit.end])
    return dropped, kept


def _split_at(policy: ContextPolicy, messages: Sequence[Message], count: int) -> tuple[list[Message], list[Message]]:
    """Drop the first ``count`` droppable messages (whole units only), as the cached summary did."""
    units = policy.units(messages, None)
    required = policy.required(units)
    dropped: list[Message] = []
    kept: list[Message] = []
    for i, unit in enumerate(units):
        part = messages[unit.start : unit.end]
        if i not in required and len(dropped) < count:
            dropped.extend(part)
        else:
            kept.extend(part)
    return dropped, kept


def _fitted_summary(text: str, room: int, counter: TokenCounter) -> SystemMessage:
    """The summary message, its text cut until it costs at most ``room`` tokens."""
    summary = SystemMessage(SUMMARY_PREFIX + text)
    while text and counter.count(summary) > room:
        text = text[: len(text) // 2]
        summary = SystemMessage(SUMMARY_PREFIX + text + " [...]")
    return summary


def _render(messages: Sequence[Message], limit: int = 2000) -> str:
    lines = []
    for m in messages:
        if isinstance(m, ToolCallMessage):
            args = json.dumps(m.arguments, ensure_ascii=False, default=str)
            lines.append(f"Tool call {m.tool_name}({args[:limit]}) -> {m.status.value}: {m.content[:limit]}")
        elif isinstance(m, AssistantMessage):
            lines.append(f"Assistant: {m.text[:limit]}")
        else:
            lines.append(f"{m.kind.capitalize()}: {m.text[:limit]}")
    return "\n".join(lines)
