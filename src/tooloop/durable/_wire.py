"""Turns and their events as JSON, so they can leave the process (a queue, a stream, a database)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .._json import to_jsonable
from ..events import Event, ModelRequestFinished, RunFinished, TextDelta, ThinkingDelta
from ..loop.result import ApprovalRequest, RunResult
from ..messages import Usage
from ..transcript import message_to_dict

__all__ = ["TurnOutcome", "event_to_dict", "turn_workflow_id", "usage_from_dict", "usage_to_dict"]


def turn_workflow_id(session_id: str, turn_id: str) -> str:
    """The id of one turn everywhere: the same session and turn id always name the same turn."""
    return f"tooloop:{session_id}:{turn_id}"


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """Every field of ``usage`` as JSON (a ``Decimal`` cost as its string)."""
    return {
        f.name: str(value) if isinstance(value := getattr(usage, f.name), Decimal) else value
        for f in dataclasses.fields(usage)
    }


def usage_from_dict(data: Mapping[str, Any]) -> Usage:
    """Read :func:`usage_to_dict`; unknown keys (from a newer tooloop) are ignored."""
    names = {f.name for f in dataclasses.fields(Usage)}
    values: dict[str, Any] = {k: v for k, v in data.items() if k in names}
    if values.get("cost") is not None:
        values["cost"] = Decimal(values["cost"])
    return Usage(**values)


def _value(value: Any) -> Any:
    if isinstance(value, Usage):
        return usage_to_dict(value)
    if isinstance(value, ApprovalRequest):
        return value.to_dict()
    if isinstance(value, RunResult):
        return {"stop_reason": value.stop_reason.value, "text": value.text, "usage": usage_to_dict(value.usage)}
    try:
        return message_to_dict(value)
    except TypeError:
        return to_jsonable(value)


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-compatible dict of a stream event: ``{"kind": ..., fields...}``.

    Messages take their transcript JSON form; a model request's response is reduced to its text
    and stop reason (the full message follows as its own event).
    """
    if isinstance(event, TextDelta | ThinkingDelta):
        return {"kind": event.kind, "text": event.text}
    if isinstance(event, ModelRequestFinished):
        response = event.response
        return {
            "kind": event.kind,
            "iteration": event.iteration,
            "stop_reason": response.stop_reason.value,
            "usage": usage_to_dict(response.usage),
        }
    if isinstance(event, RunFinished):
        return {"kind": event.kind, **_value(event.result)}
    data = {f.name: _value(getattr(event, f.name)) for f in dataclasses.fields(event)}
    return {"kind": event.kind, **data}


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    """How a turn ended, in a form that travels: the full conversation stays in the store."""

    stop_reason: str
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    pending_approvals: tuple[ApprovalRequest, ...] = ()
    error: str | None = None

    @classmethod
    def of(cls, result: RunResult) -> TurnOutcome:
        """The outcome of a finished run."""
        error = None if result.error is None else f"{type(result.error).__name__}: {result.error}"
        return cls(
            stop_reason=result.stop_reason.value,
            text=result.text,
            usage=result.usage,
            pending_approvals=result.pending_approvals,
            error=error,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {
            "stop_reason": self.stop_reason,
            "text": self.text,
            "usage": usage_to_dict(self.usage),
            "pending_approvals": [r.to_dict() for r in self.pending_approvals],
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnOutcome:
        """Read :meth:`to_dict`'s form."""
        return cls(
            stop_reason=str(data["stop_reason"]),
            text=str(data.get("text", "")),
            usage=usage_from_dict(data.get("usage", {})),
            pending_approvals=tuple(ApprovalRequest.from_dict(r) for r in data.get("pending_approvals", ())),
            error=data.get("error"),
        )
