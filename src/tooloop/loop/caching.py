"""Keeping the provider's prompt cache: a stable cache key, and noticing when a turn missed it.

Providers bill input read from their prompt cache at a tenth of the price (or less), as long as
each request begins with the same bytes as an earlier one. The loop keeps prefixes stable by
construction (tools in a fixed order, history never rewritten except by a context policy). When
a request reads nothing from the cache although the one before it was cached and recent, the
run reports a :class:`~tooloop.events.CacheMiss` and logs a line, with the first difference
between the two requests.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

from ..events import CacheBreak, CacheMiss
from ..messages import Message, SystemMessage, ToolCallMessage, Usage, UserMessage
from ..models.base import ModelRequest, ModelSettings, PendingKey

__all__ = ["CacheWatch", "OpeningKey", "cache_key", "first_difference", "rewrite"]

_log = logging.getLogger("tooloop.loop")
_TTL = {"1h": 3600.0, "5m": 300.0, None: 300.0}


def cache_key(session_id: str | None, messages: Sequence[Message]) -> str:
    """A key that stays the same for every request of a conversation, in any process.

    From the session id when there is one, else from the conversation's opening (system prompt
    and first user message): conversations that open alike share a prefix, so sharing the key
    helps the provider route them to the same cache.
    """
    if session_id is not None:
        seed = f"session:{session_id}"
    else:
        opening = [m for m in messages[:3] if isinstance(m, SystemMessage | UserMessage)]
        seed = "opening:" + "\x00".join(f"{m.kind}:{m.text}" for m in opening)
    return "tooloop-" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class OpeningKey(PendingKey):
    """:func:`cache_key` of a run's first request, worked out when an adapter first reads it (a
    hash costs more than most of a turn's own steps; adapters of providers without a cache key
    never read it)."""

    __slots__ = ("_messages", "_session_id")

    def __init__(self, session_id: str | None, messages: Sequence[Message]):
        self._value = None  # PendingKey.__init__, inline
        self._session_id, self._messages = session_id, messages

    def work_out(self) -> str:
        return cache_key(self._session_id, self._messages)


class CacheWatch:
    """Compares each request with the one before it; says when a cache that should hit did not."""

    __slots__ = ("_announced", "_previous", "_ttl")

    def __init__(self, settings: ModelSettings):
        self._ttl = _TTL[settings.cache_ttl]
        self._previous: tuple[ModelRequest, int, float] | None = None
        self._announced: CacheBreak | None = None

    def announce(
        self, iteration: int, before: Sequence[Message], after: Sequence[Message], whole: int
    ) -> CacheBreak | None:
        """A :class:`CacheBreak` (logged) when ``after``, the messages request ``iteration`` sends
        after the context policy shaped them from ``whole`` messages, does not begin with
        ``before``, the previous request's."""
        found = rewrite(before, after)
        if found is None:
            return None
        index, what = found
        reason = (
            f"the context policy sent {len(after)} of {whole} messages and {what} "
            f"message {index + 1}: the prompt cache will miss from there"
        )
        previous = self._previous
        if previous is not None:
            reason += f" (the previous request had {previous[1]} tokens cached)"
        event = self._announced = CacheBreak(iteration, reason, index + 1)
        _log.info("prompt cache break on request %d: %s", iteration, reason)
        return event

    def check(self, iteration: int, request: ModelRequest, usage: Usage, now: float | None = None) -> CacheMiss | None:
        """The miss of ``request`` (answered with ``usage``), if it is one; logged."""
        previous = self._previous
        cached_now = usage.cache_read_tokens + usage.cache_write_tokens
        if not cached_now and previous is None:
            return None  # nothing to compare with, and nothing to keep (a provider without caching)
        now = time.monotonic() if now is None else now
        # a request with nothing cached is never the "before" of a miss: it is not kept
        self._previous = (request, cached_now, now) if cached_now else None
        announced, self._announced = self._announced, None
        if previous is None or usage.cache_read_tokens or request.settings.cache == "off":
            return None
        before, cached, sent_at = previous
        if not cached or now - sent_at > self._ttl:
            return None  # nothing was cached (a provider without caching, a short prefix) or it expired
        reason = first_difference(before, request)
        if announced is not None and announced.iteration == iteration:
            reason = f"{reason}; announced before the request: {announced.reason}"
        miss = CacheMiss(iteration, reason, cached)
        _log.info(
            "prompt cache miss on request %d: %s (the previous request had %d tokens cached)",
            iteration,
            miss.reason,
            cached,
        )
        return miss


def first_difference(before: ModelRequest, after: ModelRequest) -> str:
    """What changed first from ``before`` to ``after``, in the order a provider reads a request."""
    tools = _tools_difference(before, after)
    if tools is not None:
        return tools
    if before.tool_choice != after.tool_choice:
        return f"tool_choice changed from {before.tool_choice!r} to {after.tool_choice!r}"
    if before.output != after.output:
        return "the output schema changed"
    for index, (old, new) in enumerate(zip(before.messages, after.messages, strict=False)):
        if old != new:
            if isinstance(old, SystemMessage) and isinstance(new, SystemMessage):
                return "the system prompt changed"
            return f"message {index + 1} ({_describe(old)}) changed: now {_describe(new)}"
    if len(after.messages) < len(before.messages):
        return (
            f"the conversation was shortened from {len(before.messages)} to {len(after.messages)} "
            "messages (a context policy rewrote the history)"
        )
    return "the prefix was unchanged: the provider did not keep the cache (evicted, or another server answered)"


def rewrite(before: Sequence[Message], after: Sequence[Message]) -> tuple[int, str] | None:
    """Where ``after`` stops beginning with ``before`` (the index of the first message that
    differs, and whether it was changed or dropped), or None when it extends it."""
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is not new and old != new:
            return index, "changed"
    if len(after) < len(before):
        return len(after), "dropped everything from"
    return None


def _tools_difference(before: ModelRequest, after: ModelRequest) -> str | None:
    if before.tools == after.tools:
        return None
    old = [t.name for t in before.tools]
    new = [t.name for t in after.tools]
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    if added or removed:
        parts = [f"added {', '.join(added)}" if added else "", f"removed {', '.join(removed)}" if removed else ""]
        return "the tools changed: " + "; ".join(p for p in parts if p)
    if old != new:
        return "the tools were sent in another order"
    changed = next(a.name for a, b in zip(before.tools, after.tools, strict=True) if a != b)
    return f"the definition of tool {changed!r} changed"


def _describe(message: Message) -> str:
    if isinstance(message, ToolCallMessage):
        return f"the result of {message.tool_name}"
    return f"a {message.kind} message"
