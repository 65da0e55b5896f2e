"""Stream events: what ``agent.stream()`` yields, as past-tense facts with a literal ``kind``.

Model adapters emit the first three (:data:`ModelEvent`) while a response streams in; the loop
emits the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from .messages import Message, ModelResponse, ToolCallMessage, Usage

if TYPE_CHECKING:
    from .loop.result import ApprovalRequest, RunResult

__all__ = [
    "ApprovalRequested",
    "Event",
    "EventHandler",
    "MessageAdded",
    "ModelEvent",
    "ModelRequestFinished",
    "ModelRequestStarted",
    "RunFinished",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer text arrived."""

    text: str
    kind: ClassVar[Literal["text_delta"]] = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's visible reasoning arrived."""

    text: str
    kind: ClassVar[Literal["thinking_delta"]] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call arrived while the response streams (name first, then arguments)."""

    index: int
    tool_call_id: str | None = None
    name: str | None = None
    arguments_delta: str = ""
    kind: ClassVar[Literal["tool_call_delta"]] = "tool_call_delta"


ModelEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallDelta
"""Events a model adapter emits while a response streams in."""

EventHandler: TypeAlias = Callable[[ModelEvent], None]
"""Callback a model adapter calls for each :data:`ModelEvent`."""


@dataclass(frozen=True, slots=True)
class ModelRequestStarted:
    """The loop sent request number ``iteration`` (1-based) to the model."""

    iteration: int
    kind: ClassVar[Literal["model_request_started"]] = "model_request_started"


@dataclass(frozen=True, slots=True)
class ModelRequestFinished:
    """The model's response is complete. ``usage`` is the run's total so far."""

    iteration: int
    response: ModelResponse
    usage: Usage
    kind: ClassVar[Literal["model_request_finished"]] = "model_request_finished"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call began to run, with the arguments it runs with."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[Literal["tool_call_started"]] = "tool_call_started"


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A running tool call reported progress (``progress`` of ``total`` when known)."""

    tool_call_id: str
    tool_name: str
    progress: float
    total: float | None = None
    message: str | None = None
    kind: ClassVar[Literal["tool_call_progress"]] = "tool_call_progress"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call has its outcome (result, error, denial or cancellation)."""

    message: ToolCallMessage
    kind: ClassVar[Literal["tool_call_finished"]] = "tool_call_finished"


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """A tool call waits for a decision."""

    request: ApprovalRequest
    kind: ClassVar[Literal["approval_requested"]] = "approval_requested"


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """A message was appended to the run's transcript."""

    message: Message
    kind: ClassVar[Literal["message_added"]] = "message_added"


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; ``result`` is what ``agent.run()`` would have returned."""

    result: RunResult
    kind: ClassVar[Literal["run_finished"]] = "run_finished"


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
    | MessageAdded
    | RunFinished
)
"""Anything ``agent.stream()`` yields."""
