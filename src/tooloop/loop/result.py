"""``RunResult`` and the approval values a paused run hands to a person."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .._json import error_message, to_jsonable
from ..messages import AssistantMessage, StopReason, ToolCallMessage, Usage
from ..transcript import Transcript

__all__ = ["ApprovalDecision", "ApprovalRequest", "RunResult", "arguments_digest"]


def _counts(usage: Usage) -> dict[str, int]:
    counts = {f.name: getattr(usage, f.name) for f in fields(usage) if f.name not in ("cost", "estimated")}
    if usage.estimated:
        counts["estimated"] = True
    return counts


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def arguments_digest(tool_call_id: str, tool_name: str, arguments: Mapping[str, Any]) -> str:
    """A hash binding a decision to one call and the exact arguments a person reviewed."""
    canonical = json.dumps(
        {"id": tool_call_id, "name": tool_name, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    import hashlib  # approvals only: a plain run never hashes

    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """A person's decision on one tool call, bound to the call id and the reviewed arguments.

    Make one with :meth:`ApprovalRequest.approve` or :meth:`ApprovalRequest.deny`; a decision whose
    digest does not match the pending call is refused, so approving one call never runs another.
    """

    tool_call_id: str
    digest: str
    approved: bool
    arguments: Mapping[str, Any] | None = None
    """Edited arguments to run the call with instead of the reviewed ones."""
    message: str | None = None
    """For a denial: what the model is told."""
    completed: bool = False
    """The call is not run: ``result`` is its result, computed elsewhere (:meth:`ApprovalRequest.complete`)."""
    result: Any = None
    """The result of a completed call, as if the tool had returned it."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (for web apps and editors that store decisions)."""
        data = {
            "tool_call_id": self.tool_call_id,
            "digest": self.digest,
            "approved": self.approved,
            "arguments": dict(self.arguments) if self.arguments is not None else None,
            "message": self.message,
        }
        if self.completed:
            data.update(completed=True, result=to_jsonable(self.result))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalDecision:
        """Read :meth:`to_dict`'s form."""
        return cls(
            str(data["tool_call_id"]),
            str(data["digest"]),
            bool(data["approved"]),
            data.get("arguments"),
            data.get("message"),
            data.get("completed") is True,
            data.get("result"),
        )


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call waiting for a decision. Serialisable, so a person can answer it later."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    digest: str = ""

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", arguments_digest(self.tool_call_id, self.tool_name, self.arguments))

    def approve(self, arguments: Mapping[str, Any] | None = None) -> ApprovalDecision:
        """Allow the call, optionally with edited arguments."""
        return ApprovalDecision(self.tool_call_id, self.digest, True, arguments)

    def deny(self, message: str | None = None) -> ApprovalDecision:
        """Refuse the call; ``message`` is what the model is told."""
        return ApprovalDecision(self.tool_call_id, self.digest, False, None, message)

    def complete(self, result: Any) -> ApprovalDecision:
        """Do not run the call: ``result``, computed elsewhere (another process, a person, a
        client-side tool), is its result, rendered for the model as the tool's own would be."""
        return ApprovalDecision(self.tool_call_id, self.digest, True, completed=True, result=result)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "arguments": dict(self.arguments),
            "digest": self.digest,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        """Read :meth:`to_dict`'s form."""
        return cls(str(data["tool_call_id"]), str(data["tool_name"]), dict(data["arguments"]), str(data["digest"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a finished run produced.

    ``transcript`` is the whole conversation (history included); ``new_messages`` only what this
    run added. ``output`` is the validated structured output when the agent has ``output_type``.
    """

    transcript: Transcript
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    output: Any = None
    error: BaseException | None = None
    pending_approvals: tuple[ApprovalRequest, ...] = ()
    start: int = 0
    """Index in ``transcript`` of this run's first message."""
    stop_text: str | None = None
    """A hook's own explanation of why it stopped the run (``LoopControl.stop("...")``), else None."""

    def __repr__(self) -> str:
        parts = [f"stop_reason={self.stop_reason.value!r}", f"text={_short(self.text)}"]
        if self.stop_text is not None:
            parts.append(f"stop_text={self.stop_text!r}")
        if self.output is not None:
            parts.append(f"output={self.output!r}")
        if self.error is not None:
            parts.append(f"error={self.error!r}")
        if self.pending_approvals:
            parts.append(f"pending_approvals={list(self.pending_approvals)!r}")
        parts.append(f"tool_calls={len(self.tool_calls)}, messages={len(self.transcript)}, usage={self.usage!r}")
        return f"RunResult({', '.join(parts)})"

    @property
    def text(self) -> str:
        """The final answer text (empty when the run ended without one)."""
        final = self.final_message
        return final.text if final is not None else ""

    @property
    def final_message(self) -> AssistantMessage | None:
        """This run's last assistant answer, if it produced one."""
        for i in range(len(self.transcript) - 1, self.start - 1, -1):
            message = self.transcript[i]
            if isinstance(message, AssistantMessage):
                return message
        return None

    @property
    def new_messages(self) -> Transcript:
        """The messages this run added."""
        return self.transcript[self.start :]

    @property
    def tool_calls(self) -> tuple[ToolCallMessage, ...]:
        """This run's tool calls, in order, each with its outcome."""
        return tuple(m for m in self.new_messages if isinstance(m, ToolCallMessage))

    @property
    def tool_uses_in_final_turn(self) -> tuple[ToolCallMessage, ...]:
        """The batch of tool calls of the last model response that asked for tools in this run."""
        calls = self.tool_calls
        if not calls:
            return ()
        last_batch = calls[-1].batch_id
        return tuple(c for c in calls if c.batch_id == last_batch)

    @property
    def final_tool_calls(self) -> tuple[ToolCallMessage, ...]:
        """The calls of this run's last model response, when that response asked for tools: the
        run stopped before the model answered them (approvals, a limit, a hook). Empty when the
        run ended with an answer."""
        calls: list[ToolCallMessage] = []
        for i in range(len(self.transcript) - 1, self.start - 1, -1):
            message = self.transcript[i]
            if not isinstance(message, ToolCallMessage) or (calls and message.batch_id != calls[-1].batch_id):
                break
            calls.append(message)
        return tuple(reversed(calls))

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-compatible data, for web frameworks and queues.

        ``transcript`` holds every message in the transcript's JSON form (``start`` is the index of
        this run's first), ``usage`` the run's totals (every count, and the cost as a decimal
        string or None), ``output`` the structured output made JSON-compatible, ``error`` the
        failure's type and message (or None), and ``pending_approvals`` the calls waiting for a
        decision (:meth:`ApprovalRequest.to_dict`).
        """
        error = self.error
        usage = self.usage
        return {
            "text": self.text,
            "stop_reason": self.stop_reason.value,
            "stop_text": self.stop_text,
            "output": to_jsonable(self.output),
            "usage": {**_counts(usage), "cost": None if usage.cost is None else str(usage.cost)},
            "error": None if error is None else {"type": type(error).__name__, "message": error_message(error)},
            "pending_approvals": [request.to_dict() for request in self.pending_approvals],
            "start": self.start,
            "transcript": self.transcript.to_dicts(),
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @property
    def has_error(self) -> bool:
        """True when the run ended with an error (see ``run(..., raise_errors=False)``)."""
        return self.error is not None

    @property
    def needs_approval(self) -> bool:
        """True when the run stopped because tool calls wait for a decision."""
        return bool(self.pending_approvals)
