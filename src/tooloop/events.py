"""Stream events: what ``agent.stream()`` yields, as past-tense facts with a literal ``kind``.

Model adapters emit the first three (:data:`ModelEvent`) while a response streams in; the loop
emits the rest.

The contract for tool calls, which UIs, telemetry and editor integrations can rely on:

* every call the model asked for ends with exactly one :class:`ToolCallFinished`, whatever its
  outcome: a result, an error, a call that never ran (unknown tool, arguments that are not JSON
  or fail validation, denied by a list or an approver, over ``max_tool_calls_per_turn``, cut off
  by the output limit, stopped by a hook), a cancellation or an interruption. Calls that never
  ran get no :class:`ToolCallStarted`;
* :class:`ToolCallStarted` comes only for a call that really begins to run, before its
  :class:`ToolCallFinished`;
* a call waiting for approval when the run pauses (``StopReason.APPROVAL_REQUIRED``) has no
  finished event in that run; the run that decides it emits it;
* every :class:`ApprovalRequested` is followed by exactly one :class:`ApprovalDecided` for the
  same request, before the call's :class:`ToolCallFinished`;
* the ``after_tool_call`` hook is called once for each :class:`ToolCallFinished`, just before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from .messages import Message, ModelResponse, ToolCallMessage, Usage, recounted, summed

if TYPE_CHECKING:
    from .loop.result import ApprovalDecision, ApprovalRequest, RunResult

__all__ = [
    "ApprovalDecided",
    "ApprovalRequested",
    "CacheBreak",
    "CacheMiss",
    "Event",
    "EventHandler",
    "MessageAdded",
    "ModelEvent",
    "ModelRequestFinished",
    "ModelRequestStarted",
    "RunFinished",
    "SubagentEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
]


# The events built for every chunk, request, call and message fill their slots directly: the
# __init__ a frozen dataclass gets calls object.__setattr__ per field, at twice the cost.


@dataclass(frozen=True, slots=True, init=False)
class TextDelta:
    """A piece of the model's answer text arrived."""

    text: str
    kind: ClassVar[Literal["text_delta"]] = "text_delta"

    def __init__(self, text: str) -> None:
        _set_text(self, text)


@dataclass(frozen=True, slots=True, init=False)
class ThinkingDelta:
    """A piece of the model's visible reasoning arrived."""

    text: str
    kind: ClassVar[Literal["thinking_delta"]] = "thinking_delta"

    def __init__(self, text: str) -> None:
        _set_thinking(self, text)


@dataclass(frozen=True, slots=True, init=False)
class ToolCallDelta:
    """A piece of a tool call arrived while the response streams (name first, then arguments)."""

    index: int
    tool_call_id: str | None = None
    name: str | None = None
    arguments_delta: str = ""
    kind: ClassVar[Literal["tool_call_delta"]] = "tool_call_delta"

    def __init__(
        self, index: int, tool_call_id: str | None = None, name: str | None = None, arguments_delta: str = ""
    ) -> None:
        _set_index(self, index)
        _set_call_id(self, tool_call_id)
        _set_name(self, name)
        _set_arguments(self, arguments_delta)


def _setter(cls: type, field_name: str) -> Callable[[Any, Any], None]:
    """The slot's own setter (a frozen dataclass refuses ``setattr``, the slot does not)."""
    setter: Callable[[Any, Any], None] = cls.__dict__[field_name].__set__
    return setter


_set_text = _setter(TextDelta, "text")
_set_thinking = _setter(ThinkingDelta, "text")
_set_index = _setter(ToolCallDelta, "index")
_set_call_id = _setter(ToolCallDelta, "tool_call_id")
_set_name = _setter(ToolCallDelta, "name")
_set_arguments = _setter(ToolCallDelta, "arguments_delta")


ModelEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallDelta
"""Events a model adapter emits while a response streams in."""

EventHandler: TypeAlias = Callable[[ModelEvent], None]
"""Callback a model adapter calls for each :data:`ModelEvent`."""


@dataclass(frozen=True, slots=True, init=False)
class ModelRequestStarted:
    """The loop sent request number ``iteration`` (1-based) to the model.

    One frozen value per iteration number, shared by every run: a stream's consumer usually
    holds the latest event while it waits for the model, and at a thousand concurrent streams
    each of those would be an object of its own for the garbage collector to scan.
    """

    iteration: int
    kind: ClassVar[Literal["model_request_started"]] = "model_request_started"

    def __new__(cls, iteration: int) -> ModelRequestStarted:
        # The whole construction (object.__init__ is all that follows): one Python call per event.
        if cls is ModelRequestStarted and type(iteration) is int and 0 <= iteration < _SHARED_STARTS:
            shared = _started.get(iteration)
            if shared is None:
                shared = object.__new__(cls)
                _set_started_iteration(shared, iteration)  # filled before another thread can see it
                shared = _started.setdefault(iteration, shared)
            return shared
        made = object.__new__(cls)
        _set_started_iteration(made, iteration)
        return made

    def __reduce__(self) -> tuple[type[ModelRequestStarted], tuple[int]]:
        return ModelRequestStarted, (self.iteration,)  # copied and unpickled through the constructor


@dataclass(frozen=True, slots=True, init=False)
class ModelRequestFinished:
    """The model's response is complete. ``usage`` is the run's total so far.

    The loop's events hold that total as the run counted it, and sum it when ``usage`` is first
    read (then keep it): reading it, comparing, hashing, pickling or ``dataclasses.replace`` see
    the same :class:`~tooloop.messages.Usage`.
    """

    iteration: int
    response: ModelResponse
    usage: Usage
    kind: ClassVar[Literal["model_request_finished"]] = "model_request_finished"

    def __init__(self, iteration: int, response: ModelResponse, usage: Usage) -> None:
        _set_finished_iteration(self, iteration)
        _set_response(self, response)
        _set_usage(self, usage)


@dataclass(frozen=True, slots=True, init=False)
class ToolCallStarted:
    """A tool call began to run, with the arguments it runs with.

    Only calls that really run are announced; each is followed by one :class:`ToolCallFinished`.
    """

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[Literal["tool_call_started"]] = "tool_call_started"

    def __init__(self, tool_call_id: str, tool_name: str, arguments: Mapping[str, Any] | None = None) -> None:
        _set_started_id(self, tool_call_id)
        _set_started_name(self, tool_name)
        _set_started_arguments(self, {} if arguments is None else arguments)


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A running tool call reported progress (``progress`` of ``total`` when known)."""

    tool_call_id: str
    tool_name: str
    progress: float
    total: float | None = None
    message: str | None = None
    kind: ClassVar[Literal["tool_call_progress"]] = "tool_call_progress"


@dataclass(frozen=True, slots=True, init=False)
class ToolCallFinished:
    """A tool call has its final outcome (result, error, denial, cancellation or interruption).

    Emitted exactly once for every call the model asked for, including calls that never ran;
    ``message.status`` and ``message.content`` say what happened and what the model is told.
    """

    message: ToolCallMessage
    kind: ClassVar[Literal["tool_call_finished"]] = "tool_call_finished"

    def __init__(self, message: ToolCallMessage) -> None:
        _set_finished_message(self, message)


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """A tool call waits for the approver's decision; one :class:`ApprovalDecided` follows."""

    request: ApprovalRequest
    kind: ClassVar[Literal["approval_requested"]] = "approval_requested"


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """The approver answered an :class:`ApprovalRequested` (always emitted, once per request).

    ``decision`` is None when no decision came: the run was cancelled or the approver failed
    while it was being asked.
    """

    request: ApprovalRequest
    decision: ApprovalDecision | None
    kind: ClassVar[Literal["approval_decided"]] = "approval_decided"


@dataclass(frozen=True, slots=True, init=False)
class MessageAdded:
    """A message was appended to the run's transcript."""

    message: Message
    kind: ClassVar[Literal["message_added"]] = "message_added"

    def __init__(self, message: Message) -> None:
        _set_added_message(self, message)


@dataclass(frozen=True, slots=True)
class CacheBreak:
    """Request ``iteration`` is about to go out without the beginning of the request before it:
    the context policy rewrote the history (dropped or summarised messages), so the provider's
    prompt cache will miss from message ``from_message`` (1-based) on. Emitted (and logged)
    before the request, so the :class:`CacheMiss` that may follow is expected.
    """

    iteration: int
    reason: str
    from_message: int
    kind: ClassVar[Literal["cache_break"]] = "cache_break"


@dataclass(frozen=True, slots=True)
class CacheMiss:
    """Request ``iteration`` read nothing from the provider's prompt cache although it should have:
    the request before it was cached and came less than the cache's lifetime ago.

    ``reason`` is the first difference found between the two requests (the tools, the system
    prompt, which message), or says the prefix was unchanged (the provider dropped the cache).
    ``lost_tokens`` is how many input tokens the previous request had cached.
    """

    iteration: int
    reason: str
    lost_tokens: int
    kind: ClassVar[Literal["cache_miss"]] = "cache_miss"


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; ``result`` is what ``agent.run()`` would have returned."""

    result: RunResult
    kind: ClassVar[Literal["run_finished"]] = "run_finished"


@dataclass(frozen=True, slots=True)
class SubagentEvent:
    """An event of a subagent (an agent run as a tool call, ``agent.as_tool()``) of this run.

    ``path`` is the id of the parent's call that runs the subagent, and for deeper nesting the ids
    down to it joined by ``/`` (``"call_1/call_7"``); ``event`` is the subagent's own event, so
    its tool call ``call_9`` is ``f"{path}/call_9"`` seen from here.
    """

    path: str
    event: Event
    kind: ClassVar[Literal["subagent"]] = "subagent"


_set_started_iteration = _setter(ModelRequestStarted, "iteration")
_SHARED_STARTS = 256
_started: dict[int, ModelRequestStarted] = {}


def request_started(iteration: int) -> ModelRequestStarted:
    """``ModelRequestStarted(iteration)`` as the loop makes it: the shared value, without a call of
    the constructor (a Python ``__new__`` costs a call of the class and a call of it)."""
    shared = _started.get(iteration)
    return shared if shared is not None else ModelRequestStarted(iteration)


_set_finished_iteration = _setter(ModelRequestFinished, "iteration")
_set_response = _setter(ModelRequestFinished, "response")
_usage_slot: Any = ModelRequestFinished.__dict__["usage"]
_raw_usage: Any = _usage_slot.__get__
_set_usage = _usage_slot.__set__


RunningTotal: TypeAlias = list[Any]
"""A run's usage at one moment, summed when it is first asked (:func:`settle_total`), then kept.

What the loop's :class:`ModelRequestFinished` holds until its ``usage`` is read:
``[base, requests, count, calls, previous, value]``, the run's recorded total then (``base``), the
requests counted since (the first ``count`` of ``requests``: the run appends to that list,
never changes what is in it), the calls executed since, the running total before it (a reader
who reads each in turn sums only the requests since that one), and the sum once it is made. A
list: the cheapest object to make (a class of its own costs five times as much), and a stream
whose consumer never reads the totals makes no sum per request.
"""


def settle_total(total: RunningTotal) -> Usage:
    """The usage ``total`` stands for, summed now if it was not."""
    base, requests, count, calls, previous, value = total
    if value is not None:
        return value  # type: ignore[no-any-return]
    more: Sequence[Usage] = () if requests is None else requests[:count] if isinstance(requests, list) else (requests,)
    if previous is not None and previous[5] is not None and previous[0] is base:  # the same sum, from there
        base, calls, more = previous[5], calls - previous[3], more[previous[2] :]
    if more:
        value = summed(base, more, calls)
    elif calls:
        value = recounted(base, base.requests, base.tool_calls + calls)
    else:
        value = base
    total[4], total[5] = None, value  # an event keeps its own total, not the ones before
    return value  # type: ignore[no-any-return]


def _read_usage(event: ModelRequestFinished) -> Usage:
    """``ModelRequestFinished.usage``: the loop's running total in the slot (:func:`request_finished`)
    is summed on the first read and replaced by its value."""
    usage = _raw_usage(event)
    if not isinstance(usage, Usage):
        usage = settle_total(usage)
        _set_usage(event, usage)
    return usage


def request_finished(iteration: int, response: ModelResponse, total: RunningTotal) -> ModelRequestFinished:
    """The loop's :class:`ModelRequestFinished`, holding its :data:`RunningTotal`: summed when
    ``usage`` is first read."""
    event = object.__new__(ModelRequestFinished)
    _set_finished_iteration(event, iteration)
    _set_response(event, response)
    _set_usage(event, total)
    return event


# Over the dataclass's slot, as Usage.cost: reads go through _read_usage, writes (the constructor,
# pickling, dataclasses.replace) straight to the slot. The field keeps its declared type for readers.
_finished_class: Any = ModelRequestFinished
_finished_class.usage = property(_read_usage, _set_usage, doc="The run's usage so far.")
_set_started_id = _setter(ToolCallStarted, "tool_call_id")
_set_started_name = _setter(ToolCallStarted, "tool_name")
_set_started_arguments = _setter(ToolCallStarted, "arguments")
_set_finished_message = _setter(ToolCallFinished, "message")
_set_added_message = _setter(MessageAdded, "message")


Event: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ToolCallDelta
    | ModelRequestStarted
    | ModelRequestFinished
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalDecided
    | MessageAdded
    | CacheBreak
    | CacheMiss
    | RunFinished
    | SubagentEvent
)
"""Anything ``agent.stream()`` yields."""
