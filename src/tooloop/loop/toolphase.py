"""One batch of tool calls: check, approve, run concurrently, and record each outcome."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from .._json import render, truncate
from ..errors import (
    ApprovalMismatchError,
    ToolArgumentsError,
    ToolDeniedError,
    ToolError,
    UnknownToolError,
)
from ..events import ApprovalRequested, ToolCallFinished, ToolCallStarted
from ..messages import ModelResponse, ToolCallMessage, ToolCallStatus, Usage
from ..tools.execute import invoke, run_concurrently
from ..tools.tool import Tool, ToolContext
from .control import LoopControl, call_hook
from .repair import unique_id
from .result import ApprovalDecision, ApprovalRequest, arguments_digest

if TYPE_CHECKING:
    from .run import Run

__all__ = [
    "Approver",
    "Slot",
    "cancel_unfinished",
    "check_decisions",
    "decide",
    "run_batch",
    "slots_from_messages",
    "slots_from_response",
]

Approver: TypeAlias = Callable[[ApprovalRequest], "bool | ApprovalDecision | Awaitable[bool | ApprovalDecision]"]
"""Decides on a call that needs approval: True/False, or a decision (which may edit arguments)."""

AWAITING = "Awaiting approval: this call has not run yet."


@dataclass(slots=True)
class Slot:
    """One call of the batch while it is being decided and run."""

    template: ToolCallMessage
    tool: Tool | None
    kwargs: dict[str, Any] | None = None
    outcome: ToolCallMessage | None = None

    def finish(
        self, status: ToolCallStatus, *, result: Any = None, error: BaseException | None = None, limit: int | None
    ) -> ToolCallMessage:
        if error is not None:
            content = f"{_error_name(error)}: {error}"
        else:
            content = truncate(render(result), limit)
        self.outcome = replace(self.template, status=status, result=result, error=error, content=content)
        return self.outcome


def _error_name(error: BaseException) -> str:
    name = getattr(error, "type_name", None)
    return name if isinstance(name, str) else type(error).__name__


def slots_from_response(response: ModelResponse, batch_id: str, run: Run) -> list[Slot]:
    """A slot per call of ``response``: templates carry the response's text and turn-level parts."""
    slots = []
    position = len(run.transcript)
    for index, call in enumerate(response.tool_calls):
        arguments, raw, error = _parse(call.arguments)
        call_id = unique_id(call.id, position + index, run.call_ids)  # servers that repeat "call_0"
        run.call_ids.add(call_id)
        template = ToolCallMessage(
            tool_name=call.name,
            tool_call_id=call_id,
            arguments=arguments,
            message=response.text,
            status=ToolCallStatus.STARTED,
            batch_id=batch_id,
            raw_arguments=raw,
            thinking=response.thinking if index == 0 else (),
            provider_data=_merge_data(response.provider_data if index == 0 else {}, call.provider_data or {}),
        )
        slot = Slot(template, run.tools.get(call.name))
        if error is not None:
            slot.finish(ToolCallStatus.ERROR, error=error, limit=None)
        elif index >= run.limits.max_tool_calls_per_turn:
            limit = run.limits.max_tool_calls_per_turn
            slot.finish(
                ToolCallStatus.ERROR,
                error=ToolError(f"not run: at most {limit} tool calls run per response; ask again for the rest"),
                limit=None,
            )
        else:
            _check(slot, run)
        slots.append(slot)
    return slots


def slots_from_messages(calls: Sequence[ToolCallMessage], run: Run) -> list[Slot]:
    """Slots for a stored batch: finished calls keep their outcome, unfinished ones are re-checked."""
    slots = []
    for message in calls:
        slot = Slot(replace(message, status=ToolCallStatus.STARTED, content=""), run.tools.get(message.tool_name))
        if message.status.finished:
            slot.outcome = message
        elif message.raw_arguments is not None:
            slot.finish(ToolCallStatus.ERROR, error=ToolArgumentsError("arguments are not valid JSON"), limit=None)
        else:
            _check(slot, run)
        slots.append(slot)
    return slots


def _parse(arguments: Mapping[str, Any] | str) -> tuple[dict[str, Any], str | None, ToolError | None]:
    if not isinstance(arguments, str):
        return dict(arguments), None, None
    text = arguments.strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, arguments, ToolArgumentsError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})")
    if not isinstance(value, dict):
        return {}, arguments, ToolArgumentsError("arguments must be a JSON object")
    return value, None, None


def _merge_data(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(first)
    for key, value in second.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _check(slot: Slot, run: Run) -> None:
    name = slot.template.tool_name
    if name in run.denied:
        slot.finish(ToolCallStatus.DENIED, error=ToolDeniedError(f"tool {name!r} is not allowed"), limit=None)
        return
    if slot.tool is None:
        available = ", ".join(sorted(run.tools)) or "none"
        error = UnknownToolError(f"unknown tool {name!r}; available tools: {available}")
        slot.finish(ToolCallStatus.ERROR, error=error, limit=None)
        return
    try:
        slot.kwargs = slot.tool.validate(slot.template.arguments)
    except ToolArgumentsError as exc:
        slot.finish(ToolCallStatus.ERROR, error=exc, limit=None)


async def decide(slots: Sequence[Slot], run: Run, *, deny_undecided: bool = False) -> list[ApprovalRequest]:
    """Apply decisions and the approver to calls that need approval; return those still waiting.

    With ``deny_undecided`` (a new prompt arrived while calls waited) undecided calls are refused.
    """
    waiting = []
    for slot in slots:
        if slot.outcome is not None or slot.tool is None or not slot.tool.requires_approval:
            continue
        request = _request(slot.template)
        decision = run.decisions.get(slot.template.tool_call_id)
        if decision is None and run.approver is not None:
            run.emit(ApprovalRequested(request))
            decision = await _ask(run.approver, request)
        if decision is None and deny_undecided:
            error = ToolDeniedError("no decision was given before the conversation continued")
            slot.finish(ToolCallStatus.DENIED, error=error, limit=None)
            continue
        if decision is None:
            slot.outcome = replace(slot.template, status=ToolCallStatus.PENDING, content=AWAITING)
            waiting.append(request)
            continue
        _apply(slot, request, decision)
    return waiting


async def _ask(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    answer = approver(request)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, bool):
        return request.approve() if answer else request.deny()
    if isinstance(answer, ApprovalDecision):
        return answer
    raise TypeError(f"an approver must return bool or ApprovalDecision, got {answer!r}")


def check_decisions(slots: Sequence[Slot], decisions: Mapping[str, ApprovalDecision]) -> None:
    """Raise :class:`ApprovalMismatchError` before anything runs if a decision names the wrong call."""
    for slot in slots:
        decision = decisions.get(slot.template.tool_call_id)
        if decision is not None and slot.outcome is None and slot.tool is not None and slot.tool.requires_approval:
            _verify(_request(slot.template), decision)


def _request(template: ToolCallMessage) -> ApprovalRequest:
    return ApprovalRequest(template.tool_call_id, template.tool_name, dict(template.arguments))


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
        slot.finish(ToolCallStatus.DENIED, error=ToolDeniedError(message), limit=None)
        return
    if decision.arguments is not None:
        assert slot.tool is not None
        slot.template = replace(slot.template, arguments=dict(decision.arguments))
        try:
            slot.kwargs = slot.tool.validate(decision.arguments)
        except ToolArgumentsError as exc:
            slot.finish(ToolCallStatus.ERROR, error=exc, limit=None)


async def run_batch(slots: Sequence[Slot], run: Run) -> None:
    """Run every slot that is ready, concurrently except ``sequential`` tools.

    On cancellation every call without an outcome gets a cancelled result before the
    cancellation propagates, so the batch can always be recorded.
    """
    ready = [s for s in slots if s.outcome is None]
    try:
        await run_concurrently(ready, lambda slot: _run_one(slot, run), _is_sequential)
    except asyncio.CancelledError:
        cancel_unfinished(ready, "the run was cancelled" if run.token.cancelled else "the run was interrupted")
        raise


def cancel_unfinished(slots: Sequence[Slot], reason: str) -> None:
    """Give every slot still without an outcome a cancelled result saying ``reason``."""
    for slot in slots:
        if slot.outcome is None:
            slot.finish(ToolCallStatus.CANCELLED, error=asyncio.CancelledError(reason), limit=None)


def _is_sequential(slot: Slot) -> bool:
    return slot.tool is not None and slot.tool.sequential


async def _run_one(slot: Slot, run: Run) -> None:
    if run.stop_requested is not None:
        slot.finish(ToolCallStatus.CANCELLED, error=asyncio.CancelledError("the run was stopped"), limit=None)
        return
    before = run.hooks.before_tool_call
    control = LoopControl.CONTINUE if before is None else await call_hook(before, run.step_context(call=slot))
    if control.action == "stop":
        run.stop_requested = control.reason
        slot.finish(ToolCallStatus.CANCELLED, error=asyncio.CancelledError("the run was stopped"), limit=None)
        return
    if control.action == "override":
        _finish_ok(slot, control.result, run)
    else:
        await _execute(slot, run)
    await _after(slot, run)


async def _execute(slot: Slot, run: Run) -> None:
    tool, template = slot.tool, slot.template
    assert tool is not None and slot.kwargs is not None
    run.emit(ToolCallStarted(template.tool_call_id, template.tool_name, template.arguments))
    context = ToolContext(
        template.tool_call_id, template.tool_name, template.arguments, run.session_id, run.iteration, run.token
    )
    timeout = tool.timeout if tool.timeout is not None else run.limits.tool_timeout
    run.usage = run.usage + _ONE_CALL
    try:
        result = await invoke(tool, dict(slot.kwargs), context, timeout)
    except Exception as exc:
        slot.finish(ToolCallStatus.ERROR, error=exc, limit=None)
    else:
        _finish_ok(slot, result, run)


def _finish_ok(slot: Slot, result: Any, run: Run) -> None:
    slot.finish(ToolCallStatus.OK, result=result, limit=run.limits.max_tool_result_chars)


async def _after(slot: Slot, run: Run) -> None:
    assert slot.outcome is not None
    if run.hooks.after_tool_call is not None:
        control = await call_hook(run.hooks.after_tool_call, run.step_context(call=slot))
        if control.action == "override":
            _finish_ok(slot, control.result, run)
        elif control.action == "stop":
            run.stop_requested = control.reason
    await run.record_outcome(slot.outcome)
    run.emit(ToolCallFinished(slot.outcome))


_ONE_CALL = Usage(tool_calls=1)
