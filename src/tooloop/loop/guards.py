"""Runaway guards: a run that repeats itself is stopped, with a reason the user can act on.

Three patterns burn tokens without progress: the model asking for the same call again and again,
the same error coming back turn after turn, and answers with nothing in them. A fourth wastes a
turn and risks running a half-written call: a response cut off by the output limit while it was
writing a tool call. :class:`Guards` keeps the counts of one run; the bounds are in
:class:`~tooloop.loop.limits.Limits`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..messages import ModelResponse, StopReason, ToolCall, ToolCallMessage, ToolCallStatus
from .limits import Limits

try:
    import orjson
except ImportError:  # pragma: no cover - orjson comes with the provider extras
    orjson = None  # type: ignore[assignment]

__all__ = ["Guards", "call_key", "cut_off", "exact_json", "grown_max_tokens", "unfinished_json"]


class RecordedCall(Protocol):
    """A call as recorded before it runs (a :class:`~tooloop.ToolCallMessage`, or a batch's slot)."""

    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> str: ...
    @property
    def arguments(self) -> Mapping[str, Any]: ...
    @property
    def raw_arguments(self) -> str | None: ...


class Guards:
    """The counts behind the runaway guards of one run."""

    __slots__ = ("_calls", "_empty", "_error", "_errors", "_held", "limits")

    def __init__(self, limits: Limits):
        self.limits = limits
        self._held: tuple[Any, ...] = ()
        """The calls run so far while there were at most ``max_repeats``: none can be over the bound yet,
        so their canonical keys (a JSON parse and dump each) are not needed. Kept as they were
        asked for (a decision may edit a call's arguments later; it is counted as asked), in one
        flat tuple: each call's id, tool name, arguments and raw arguments in a row."""
        self._calls: dict[tuple[str, str | bytes], int] | None = None
        self._error: tuple[str, str] | None = None
        self._errors = 0
        self._empty = 0

    def repeated(self, calls: Sequence[RecordedCall]) -> str | None:
        """Why this batch must not run because a call was already made ``max_repeats`` times, or None.

        ``calls`` are the batch's calls as recorded before they run (arguments parsed). The calls
        that do run are counted; a batch that is refused counts nothing.
        """
        bound = self.limits.max_repeats
        if bound is None:
            return None
        if self._calls is None:
            if len(self._held) // _HELD + len(calls) <= bound:
                for c in calls:
                    self._held += (c.tool_call_id, c.tool_name, c.arguments, c.raw_arguments)
                return None
            self._calls = _counts(self._held)
            self._held = ()
        seen = dict(self._calls)
        for call in calls:
            # parsed arguments (the usual call) keyed here, without two calls in between
            key = _canonical(call.tool_name, call.arguments) if call.raw_arguments is None else _recorded_key(call)
            count = seen[key] = seen.get(key, 0) + 1
            if count > bound:
                return (
                    f"not run: {call.tool_name} was already called {bound} times in this run with the same "
                    f"arguments (Limits.max_repeats={bound})"
                )
        self._calls = seen
        return None

    def errors_repeated(self, outcomes: Iterable[ToolCallMessage]) -> bool:
        """Count batches in a row whose calls all failed with one and the same error (same tool, same
        error text); True once ``max_repeated_errors`` batches did."""
        signature: tuple[str, str] | None = None
        for outcome in outcomes:  # the usual batch stops at its first call: it did not fail
            if outcome.status is not ToolCallStatus.ERROR:
                signature = None
                break
            this = (outcome.tool_name, outcome.content)
            if signature is None:
                signature = this
            elif this != signature:
                signature = None
                break
        if signature is None:
            self._error, self._errors = None, 0
            return False
        self._errors = self._errors + 1 if signature == self._error else 1
        self._error = signature
        bound = self.limits.max_repeated_errors
        return bound is not None and self._errors >= bound

    def empty(self, response: ModelResponse) -> bool:
        """Count answers with no text, no call and no refusal in a row; True once over the bound."""
        if response.text.strip() or response.tool_calls or response.refusal:
            self._empty = 0
            return False
        self._empty += 1
        return self._empty > self.limits.max_empty_responses


_HELD = 4
"""The items of a call held by :class:`Guards`: its id, tool name, arguments and raw arguments."""


def _counts(held: tuple[Any, ...]) -> dict[tuple[str, str | bytes], int]:
    counts: dict[tuple[str, str | bytes], int] = {}
    rows = iter(held)
    for call_id, name, arguments, raw in zip(rows, rows, rows, rows, strict=True):  # _HELD items a call
        key = _canonical(name, arguments) if raw is None else _key(call_id, name, arguments, raw)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _recorded_key(call: RecordedCall) -> tuple[str, str | bytes]:
    """:func:`call_key` of a call as recorded: its arguments were parsed already (text that did not
    parse as an object is keyed as :func:`call_key` keys it)."""
    return _key(call.tool_call_id, call.tool_name, call.arguments, call.raw_arguments)


def _key(call_id: str, name: str, arguments: Mapping[str, Any], raw: str | None) -> tuple[str, str | bytes]:
    if raw is not None:
        return call_key(ToolCall(call_id, name, raw))
    return _canonical(name, arguments)


def call_key(call: ToolCall) -> tuple[str, str | bytes]:
    """The tool and its arguments in one canonical form: the same call written differently is equal."""
    arguments: Any = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = exact_json(arguments or "{}")
        except ValueError:
            return call.name, arguments
    return _canonical(call.name, arguments)


def _canonical(name: str, arguments: Any) -> tuple[str, bytes]:
    if orjson is not None:
        try:  # in C; NaN and the infinities read as null here, which is close enough for counting repeats
            return name, orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits, a value JSON cannot hold
            pass
    return name, _CANONICAL.encode(arguments).encode()


def exact_json(text: str) -> Any:
    """``text`` read as JSON, every integer exact (at any width); ValueError when it is not JSON."""
    if orjson is not None and _WIDE_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except ValueError:  # NaN, a number beyond a double...: the standard library decides (and explains)
            pass
    return json.loads(text)


_WIDE_NUMBER = re.compile(r"\d{19}")
"""Nineteen digits in a row: maybe an integer beyond 64 bits, which orjson reads as a rounded float."""


def _complete(text: str) -> bool:
    """True when ``text`` is valid JSON, as far as a parser in C can tell quickly."""
    try:
        if orjson is not None:
            orjson.loads(text)
        else:
            json.loads(text)
    except ValueError:
        return False
    return True


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
"""Made once: ``json.dumps`` with options builds an encoder on every call."""


def cut_off(response: ModelResponse) -> bool:
    """True when the response was cut while writing a tool call: the output limit ended it, or the
    last call's arguments are the beginning of a JSON value whose end never came (a server that
    says ``tool_calls`` anyway)."""
    if not response.tool_calls:
        return False
    if response.stop_reason is StopReason.MAX_TOKENS:
        return True
    last = response.tool_calls[-1].arguments
    return isinstance(last, str) and unfinished_json(last)


def unfinished_json(text: str) -> bool:
    """True when ``text`` opens a JSON string, object or array it never closes."""
    if _complete(text):  # the usual case, found in C (every response asks, three times)
        return False
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return in_string or depth > 0


def grown_max_tokens(current: int | None) -> int | None:
    """The ``max_tokens`` of the one retry after a cut-off call: twice the request's own cap.

    None when the request set none (the provider's own maximum applied: more is not possible).
    """
    return None if current is None else current * 2
