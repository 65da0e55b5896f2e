"""Approvals: which calls of a batch may run, decided up front or by the approver."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeAlias

from ..errors import ApprovalMismatchError, ToolArgumentsError, ToolDeniedError
from ..events import ApprovalDecided, ApprovalRequested
from ..messages import ToolCallStatus
from ..outcome import AWAITING
from .result import ApprovalDecision, ApprovalRequest, arguments_digest

if TYPE_CHECKING:
    from ..tools.tool import Tool
    from .toolphase import BatchContext, Slot

__all__ = ["AWAITING", "ApprovalsPending", "Approver", "check_decisions", "decide", "nested_decisions"]


class ApprovalsPending(Exception):
    """Raised by a tool that runs a subagent whose calls wait for a decision: the call waits too.

    ``requests`` carry ids of the form ``"<this call's id>/<the subagent's call id>"`` and the
    subagent's digests, so a decision on one reaches the subagent unchanged (:func:`nested_decisions`).
    """

    def __init__(self, requests: tuple[ApprovalRequest, ...], mismatch: ApprovalMismatchError | None = None):
        super().__init__(f"{len(requests)} call(s) of a subagent wait for approval")
        self.requests = requests
        self.mismatch = mismatch
        """A decision given for the subagent that matches none of its calls: the call keeps waiting,
        and the run raises this once the batch is recorded."""


def nested_decisions(decisions: Mapping[str, ApprovalDecision], call_id: str) -> dict[str, ApprovalDecision]:
    """The decisions meant for the subagent run by call ``call_id``, with the ids it knows them by."""
    prefix = f"{call_id}/"
    return {
        key[len(prefix) :]: replace(decision, tool_call_id=key[len(prefix) :])
        for key, decision in decisions.items()
        if key.startswith(prefix)
    }


Approver: TypeAlias = Callable[[ApprovalRequest], "bool | ApprovalDecision | Awaitable[bool | ApprovalDecision]"]
"""Decides on a call that needs approval: True/False, or a decision (which may edit arguments)."""


async def decide(slots: Sequence[Slot], batch: BatchContext, *, deny_undecided: bool = False) -> list[ApprovalRequest]:
    """Apply decisions and the approver to calls that need approval; return those still waiting.

    With ``deny_undecided`` (a new prompt arrived while calls waited) undecided calls are refused.
    """
    waiting = []
    auto_execute = batch.auto_execute
    for slot in slots:
        tool = slot.tool
        if slot.outcome is not None or tool is None or not _waits(tool, auto_execute):
            continue
        request = _request(slot)
        decision = batch.decisions.get(slot.tool_call_id)
        if decision is None and batch.approver is not None and tool.requires_approval:
            decision = await _consult(batch, batch.approver, request)
        if decision is None and deny_undecided:
            error = ToolDeniedError("no decision was given before the conversation continued")
            slot.finish(ToolCallStatus.DENIED, error=error)
            continue
        if decision is None:
            slot.outcome = replace(slot.template, status=ToolCallStatus.PENDING, content=AWAITING)
            waiting.append(request)
            continue
        _apply(slot, request, decision)
    return waiting


async def _consult(batch: BatchContext, approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    """Ask ``approver``, with an :class:`ApprovalRequested` event and always its :class:`ApprovalDecided`."""
    batch.record.emit(ApprovalRequested(request))
    decision = None
    try:
        decision = await _ask(approver, request)
    finally:
        batch.record.emit(ApprovalDecided(request, decision))
    return decision


async def _ask(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    answer = approver(request)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, bool):
        return request.approve() if answer else request.deny()
    if isinstance(answer, ApprovalDecision):
        return answer
    raise TypeError(f"an approver must return bool or ApprovalDecision, got {answer!r}")


def _waits(tool: Tool, auto_execute: bool) -> bool:
    """True when the call waits for a decision: its tool requires approval, or no call runs by itself."""
    return tool.requires_approval or not auto_execute


def check_decisions(
    slots: Sequence[Slot], decisions: Mapping[str, ApprovalDecision], auto_execute: bool = True
) -> None:
    """Raise :class:`ApprovalMismatchError` before anything runs if a decision names the wrong call
    or a call that is not waiting for one."""
    waiting = {s.tool_call_id for s in slots if s.outcome is None and s.tool is not None}
    # "<call>/<subagent's call>": a decision for a subagent's call, checked by the subagent's run
    stray = sorted(key for key in set(decisions) - waiting if key.split("/", 1)[0] not in waiting)
    if stray:
        raise stray_decisions(stray)
    for slot in slots:
        decision = decisions.get(slot.tool_call_id)
        if decision is None or slot.outcome is not None or slot.tool is None:
            continue
        if _waits(slot.tool, auto_execute) or decision.completed:
            _verify(_request(slot), decision)


def stray_decisions(call_ids: Sequence[str]) -> ApprovalMismatchError:
    """The error for decisions naming calls that do not wait for one (nothing is run)."""
    names = ", ".join(repr(c) for c in call_ids)
    return ApprovalMismatchError(f"no call waiting for approval has the id {names}; nothing was run")


def _request(call: Slot) -> ApprovalRequest:
    return ApprovalRequest(call.tool_call_id, call.tool_name, dict(call.arguments))


def _verify(request: ApprovalRequest, decision: ApprovalDecision) -> None:
    expected = arguments_digest(request.tool_call_id, request.tool_name, request.arguments)
    if decision.tool_call_id != request.tool_call_id or decision.digest != expected:
        raise ApprovalMismatchError(
            f"the decision for call {decision.tool_call_id!r} does not match call {request.tool_call_id!r} "
            f"of {request.tool_name!r} with the arguments under review; nothing was run"
        )


def _apply(slot: Slot, request: ApprovalRequest, decision: ApprovalDecision) -> None:
    _verify(request, decision)
    if not decision.approved:
        message = decision.message or f"the user denied this call to {request.tool_name!r}"
        slot.finish(ToolCallStatus.DENIED, error=ToolDeniedError(message))
        return
    if decision.completed:  # its result was computed elsewhere: the tool does not run
        slot.finish(ToolCallStatus.OK, result=decision.result)
        return
    if decision.arguments is not None:
        assert slot.tool is not None
        slot.template = replace(slot.template, arguments=dict(decision.arguments))
        try:
            slot.kwargs = slot.tool.validate(decision.arguments)
        except ToolArgumentsError as exc:
            slot.finish(ToolCallStatus.ERROR, error=exc)
