"""One batch of tool calls: check each call, run what may run concurrently, record each outcome.

The batch sees its run only through :class:`BatchContext`: the tools, the limits and hooks,
the approvals, and a few callbacks into the run's record and stop state.

Every call the model asked for is *closed* exactly once, whatever its outcome (a result, an
error, a denial, a refusal before it ran, a cancellation, an interruption): its
``after_tool_call`` hook is called once and one :class:`~tooloop.events.ToolCallFinished` is
emitted (:func:`close`). A call waiting for approval is closed by the run that decides it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import operator
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from .._json import truncate
from ..errors import ToolArgumentsError, ToolDeniedError, ToolError, UnknownToolError
from ..events import ToolCallFinished, ToolCallProgress, ToolCallStarted
from ..messages import (
    EMPTY,
    ContentPart,
    FrozenDict,
    ModelResponse,
    StopReason,
    ToolCallMessage,
    ToolCallStatus,
    ToolOutput,
    frozen_mapping,
    tool_call_message,
)
from ..models.base import Model
from ..outcome import render_error, render_output, render_result
from ..tools.execute import Lingering, invoke, run_concurrently, start_async
from ..tools.tool import Tool, ToolContext
from .approval import AWAITING, ApprovalsPending, Approver
from .cancel import CancelToken
from .control import Hooks, StepContext, call_hook
from .guards import cut_off, exact_json
from .limits import Limits
from .observe import Watch
from .record import Recorder, request_usage
from .repair import interrupted, unique_id
from .result import ApprovalDecision

if TYPE_CHECKING:
    from .summarize import ResultSummarizer

__all__ = [
    "BatchContext",
    "BatchOwner",
    "Slot",
    "cancel_unfinished",
    "close",
    "close_all",
    "not_run",
    "run_batch",
    "slots_from_messages",
    "slots_from_response",
]


Step = Coroutine[Any, Any, None]


class BatchOwner(Protocol):
    """The run a batch belongs to, as the batch sees it."""

    def request_stop(self, reason: StopReason, text: str | None = None) -> None:
        """A hook asked the run to stop: calls not started yet will not start."""
        ...

    def stop_requested(self) -> StopReason | None:
        """The stop a hook asked for, if any."""
        ...

    def step_context(self, call: Slot | None = None) -> StepContext:
        """The snapshot tool hooks receive about ``call``."""
        ...


class BatchContext(BatchOwner, Protocol):
    """What a batch of tool calls needs from its run, and nothing more (the run itself provides
    it: no object per run for it, and none pointing back at the run)."""

    @property
    def runnable(self) -> Mapping[str, Tool]:
        """The tools a call may run (with tool search, those loaded and the search tool)."""
        ...

    @property
    def denied(self) -> frozenset[str]: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def hooks(self) -> Hooks: ...
    @property
    def approver(self) -> Approver | None: ...
    @property
    def decisions(self) -> Mapping[str, ApprovalDecision]: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def run_id(self) -> str: ...
    @property
    def token(self) -> CancelToken: ...

    @property
    def call_ids(self) -> set[str]:
        """Every call id of the transcript; new calls get an id not in it, and add it."""
        ...

    @property
    def record(self) -> Recorder:
        """Where events go (``emit``), finished calls are journaled at once (``record_outcome``) and
        executed calls counted (``count_call``)."""
        ...

    @property
    def lingering(self) -> Lingering:
        """The run's sync calls whose threads may still run (barriers wait for them)."""
        ...

    @property
    def watch(self) -> Watch | None:
        """Logs and traces each call, when anything listens."""
        ...

    @property
    def deps(self) -> Any:
        """The run's ``deps=``, handed to each tool in its context."""
        ...

    @property
    def summarize(self) -> ResultSummarizer | Model | None:
        """Summarises a result longer than ``Limits.max_tool_result_chars`` instead of cutting it."""
        ...

    @property
    def auto_execute(self) -> bool:
        """False: no call runs by itself; each waits for a decision, like a call that needs approval."""
        ...

    def nest(self, pending: ApprovalsPending) -> None:
        """A call of this batch whose subagent waits for a decision (with its requests)."""
        ...


class Slot:
    """One call of the batch while it is being decided and run.

    The call as recorded before it runs (:attr:`template`, status ``STARTED``) is made only when
    something asks for it (a hook's snapshot, the journal, an approval); its outcome is made from
    the model's response directly, one message per call.
    """

    __slots__ = (
        "_index",
        "_response",
        "_template",
        "arguments",
        "batch_id",
        "closed",
        "hooked",
        "kwargs",
        "limit",
        "outcome",
        "raw_arguments",
        "tool",
        "tool_call_id",
        "tool_name",
    )

    def __init__(
        self,
        tool_name: str,
        tool_call_id: str,
        arguments: FrozenDict,
        raw_arguments: str | None,
        batch_id: str,
        tool: Tool | None,
        limit: int | None,
        response: ModelResponse | None = None,
        index: int = 0,
    ) -> None:
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id
        self.arguments = arguments
        self.raw_arguments = raw_arguments
        self.batch_id = batch_id
        self.tool = tool
        self.limit = limit
        """``Limits.max_tool_result_chars``: what the model is told is cut to this, errors included."""
        self._response = response
        """The response that asked for the call (its ``index``-th): the rest of the call's record."""
        self._index = index
        self._template: ToolCallMessage | None = None
        self.kwargs: dict[str, Any] | None = None
        self.outcome: ToolCallMessage | None = None
        self.hooked = False
        """``after_tool_call`` was called for this call (it is called once, whatever the outcome)."""
        self.closed = False
        """``ToolCallFinished`` was emitted (or the call was closed by an earlier run)."""

    @classmethod
    def of(cls, template: ToolCallMessage, tool: Tool | None, limit: int | None) -> Slot:
        """The slot of a call recorded as ``template`` (a stored call, status ``STARTED``)."""
        slot = cls(
            template.tool_name,
            template.tool_call_id,
            template.arguments,  # type: ignore[arg-type]  # a message's arguments are a FrozenDict
            template.raw_arguments,
            template.batch_id,
            tool,
            limit,
        )
        slot._template = template
        return slot

    @property
    def template(self) -> ToolCallMessage:
        """The call as recorded before it runs (status ``STARTED``, no result)."""
        if self._template is None:
            self._template = self._record(ToolCallStatus.STARTED, None, None, "", ())
        return self._template

    @template.setter
    def template(self, template: ToolCallMessage) -> None:  # a decision that edited the arguments
        self._template = template
        self.arguments = template.arguments  # type: ignore[assignment]  # a FrozenDict

    def _record(
        self,
        status: ToolCallStatus,
        result: Any,
        error: BaseException | None,
        content: str,
        parts: tuple[ContentPart, ...],
    ) -> ToolCallMessage:
        """The call's message with this outcome (the template's fields, or the response's)."""
        if self._template is not None:
            return _with_outcome(self._template, status, result, error, content, parts)
        response, index = self._response, self._index
        assert response is not None
        first = index == 0
        call_data = response.tool_calls[index].provider_data
        return tool_call_message(
            self.tool_name,
            self.tool_call_id,
            self.arguments,
            result,
            error,
            response.text,
            status,
            content,
            self.batch_id,
            self.raw_arguments,
            response.thinking if first else (),
            (response.provider_data if first else EMPTY) if not call_data else _merge_data(first, response, call_data),
            parts,
            response.response_id if first else None,
            request_usage(response.usage) if first else None,
            response.tokens if first else None,
        )

    def finish(
        self, status: ToolCallStatus, *, result: Any = None, error: BaseException | None = None
    ) -> ToolCallMessage:
        """Give the call its outcome; a result that cannot be rendered becomes the call's error."""
        parts: tuple[ContentPart, ...] = ()
        kind = type(result)
        if error is None and (kind is str or kind is int):  # the usual results, rendered here
            content = result if kind is str else str(result)
            limit = self.limit
            if limit is not None and len(content) > limit:
                content = truncate(content, limit)
        elif error is None:
            try:
                if isinstance(result, ToolOutput):
                    content, parts = render_output(result, self.limit)
                    result = result.structured
                else:
                    content = render_result(result, self.limit)
            except Exception as exc:  # recursive data, a model whose dump raises...
                status, result, error = ToolCallStatus.ERROR, None, _unrenderable(exc)
        if error is not None:
            content, parts = render_error(error, self.limit), ()
        self.outcome = self._record(status, result, error, content, parts)
        return self.outcome


def _with_outcome(
    call: ToolCallMessage,
    status: ToolCallStatus,
    result: Any,
    error: BaseException | None,
    content: str,
    parts: tuple[ContentPart, ...],
) -> ToolCallMessage:
    # What dataclasses.replace would give (error_type follows the new error), at a fraction of its
    # cost: this runs once per tool call.
    return tool_call_message(
        call.tool_name,
        call.tool_call_id,
        call.arguments,
        result,
        error,
        call.message,
        status,
        content,
        call.batch_id,
        call.raw_arguments,
        call.thinking,
        call.provider_data,
        parts,
        call.response_id,
        call.usage,
        call.tokens,
    )


def _unrenderable(exc: Exception) -> ToolError:
    error = ToolError(f"the tool ran, but its result could not be serialised: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


_new_slot = object.__new__
_init_slot = Slot.__init__


def slots_from_response(response: ModelResponse, batch_id: str, position: int, batch: BatchContext) -> list[Slot]:
    """A slot per call of ``response`` (to be appended at ``position`` of the transcript).

    Their messages carry the response's text and turn-level parts.
    """
    slots = []
    tools, limits = batch.runnable, batch.limits
    for index, call in enumerate(response.tool_calls):
        arguments, raw, error = _parse(call.arguments)
        call_id = unique_id(call.id, position + index, batch.call_ids)  # servers that repeat "call_0"
        batch.call_ids.add(call_id)
        name = call.name
        slot = _new_slot(Slot)
        _init_slot(  # Slot(...) without its call through the type (in C, then back into Python)
            slot,
            name,
            call_id,
            arguments,
            raw,
            batch_id,
            tools.get(name),
            limits.max_tool_result_chars,
            response,
            index,
        )
        if error is not None:
            slot.finish(ToolCallStatus.ERROR, error=error)
        elif index >= limits.max_tool_calls_per_turn:
            limit = limits.max_tool_calls_per_turn
            slot.finish(
                ToolCallStatus.ERROR,
                error=ToolError(f"not run: at most {limit} tool calls run per response; ask again for the rest"),
            )
        else:
            _check(slot, batch)
        slots.append(slot)
    return slots


def slots_from_messages(calls: Sequence[ToolCallMessage], batch: BatchContext, *, rerun: bool) -> list[Slot]:
    """Slots for a stored batch: finished calls keep their outcome (closed by the run that finished
    them), unfinished ones are re-checked. A call that started without a result runs again only
    with ``rerun`` (an explicit continuation); otherwise it is closed as interrupted."""
    slots = []
    for message in calls:
        template = replace(message, status=ToolCallStatus.STARTED, content="")
        slot = Slot.of(template, batch.runnable.get(message.tool_name), batch.limits.max_tool_result_chars)
        if message.status.finished:
            slot.outcome, slot.hooked, slot.closed = message, True, True
        elif message.status is ToolCallStatus.STARTED and not rerun:
            slot.outcome = interrupted(template)
        elif message.raw_arguments is not None:
            slot.finish(ToolCallStatus.ERROR, error=ToolArgumentsError("arguments are not valid JSON"))
        else:
            _check(slot, batch)
        slots.append(slot)
    return slots


def _parse(arguments: Mapping[str, Any] | str) -> tuple[FrozenDict, str | None, ToolError | None]:
    """The call's arguments, frozen (the raw text too when it is not a JSON object, and the error)."""
    if not isinstance(arguments, str):
        return frozen_mapping(arguments), None, None
    text = arguments.strip() or "{}"
    try:
        value = exact_json(text)
    except json.JSONDecodeError as exc:
        return EMPTY, arguments, ToolArgumentsError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})")
    except ValueError:  # an integer longer than int() reads (4300 digits by default)
        limit = sys.get_int_max_str_digits()
        return EMPTY, arguments, ToolArgumentsError(f"arguments hold an integer of more than {limit} digits")
    if type(value) is not dict:
        return EMPTY, arguments, ToolArgumentsError("arguments must be a JSON object")
    if "[" not in text and text.rfind("{") == 0:  # no container inside: the parser's own dict, frozen in one copy
        return FrozenDict(value), None, None
    return frozen_mapping(value), None, None


def _merge_data(first: bool, response: ModelResponse, call_data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The provider data of a call's message: the response's (on its first call) and the call's own."""
    merged = dict(response.provider_data) if first else {}
    for key, value in call_data.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _check(slot: Slot, batch: BatchContext) -> None:
    name = slot.tool_name
    if name in batch.denied:
        slot.finish(ToolCallStatus.DENIED, error=ToolDeniedError(f"tool {name!r} is not allowed"))
        return
    if slot.tool is None:
        available = ", ".join(sorted(batch.runnable)) or "none"
        error = UnknownToolError(f"unknown tool {name!r}; available tools: {available}")
        slot.finish(ToolCallStatus.ERROR, error=error)
        return
    try:
        slot.kwargs = slot.tool.validate(slot.arguments)
    except ToolArgumentsError as exc:
        slot.finish(ToolCallStatus.ERROR, error=exc)


async def run_batch(slots: Sequence[Slot], batch: BatchContext, iteration: int) -> None:
    """Close every call already decided, then run every slot that is ready, concurrently except
    ``sequential`` tools, in turn ``iteration``.

    On cancellation every call without an outcome gets a cancelled result before the
    cancellation propagates, so the batch can always be recorded; the caller closes them
    (:func:`close_all` with ``quiet``).
    """
    ready = [s for s in slots if s.outcome is None]
    if len(ready) != len(slots):  # some were decided already (closing leaves the others as they are)
        await close_all(slots, batch)
    try:
        # a slot ready to run has its tool (_start needs it); partial and attrgetter: no frame per call
        run_one = functools.partial(_run_one, batch, iteration)
        running = run_concurrently(ready, run_one, _is_sequential, batch.lingering)
        if running is not None:
            await running
    except asyncio.CancelledError:
        cancel_unfinished(ready, "the run was cancelled" if batch.token.cancelled else "the run was interrupted")
        raise


def cancel_unfinished(slots: Sequence[Slot], reason: str) -> None:
    """Give every slot still without an outcome a cancelled result saying ``reason``."""
    for slot in slots:
        if slot.outcome is None:
            slot.finish(ToolCallStatus.CANCELLED, error=asyncio.CancelledError(reason))


async def close_all(slots: Sequence[Slot], batch: BatchContext, *, quiet: bool = False) -> None:
    """:func:`close` every slot that has a final outcome and is not closed yet.

    ``quiet``: the run is ending with an error or a cancellation already on its way; the hooks
    are still called, but what they return or raise does not change the outcome.
    """
    for slot in slots:
        if slot.outcome is None or slot.closed or not slot.outcome.status.finished:
            continue
        if not quiet:
            await close(slot, batch)
            continue
        with contextlib.suppress(Exception):
            await close(slot, batch, steer=False)
        _announce(slot, batch)


async def close(slot: Slot, batch: BatchContext, *, steer: bool = True, journal: bool = False) -> None:
    """Call ``after_tool_call`` once, journal the outcome (``journal``) and emit ``ToolCallFinished``.

    With ``steer`` the hook may replace the result or ask the run to stop.
    """
    hook = batch.hooks.after_tool_call
    if not slot.hooked and hook is not None:
        slot.hooked = True
        control = await call_hook(hook, batch.step_context(slot))
        if steer and control.action == "override":
            _finish_ok(slot, control.result)
        elif steer and control.action == "stop":
            batch.request_stop(control.reason, control.text)
    slot.hooked = True
    if journal:
        assert slot.outcome is not None
        await batch.record.record_outcome(slot.outcome)
    _announce(slot, batch)


def _announce(slot: Slot, batch: BatchContext) -> None:
    if not slot.closed and slot.outcome is not None:
        slot.closed = True
        channel = batch.record.events
        if channel is not None:  # Recorder.emit, inline (no event to make when nobody listens)
            channel.append(ToolCallFinished(slot.outcome))
            if channel.waiter is not None:
                channel.wake()


_is_sequential: Callable[[Slot], bool] = operator.attrgetter("tool.sequential")


def _run_one(batch: BatchContext, iteration: int, slot: Slot) -> Step | None:
    """Run and close the call as far as it goes without waiting: None when that is all, else what
    does the rest (most calls never wait: no coroutine is made for them)."""
    if batch.stop_requested() is not None:
        return _closing(slot, batch)
    if batch.hooks.before_tool_call is not None:
        return _decide_and_run(slot, batch, iteration)
    rest = _start(slot, batch, iteration)
    if rest is not None:
        return _run_rest(slot, batch, rest)
    return _closing(slot, batch)


async def _run_rest(slot: Slot, batch: BatchContext, rest: Step) -> None:
    await rest
    closing = _closing(slot, batch)
    if closing is not None:
        await closing


def _closing(slot: Slot, batch: BatchContext) -> Step | None:
    """Close the call that ran (or did not run): None when done, else what does it."""
    outcome = slot.outcome
    if outcome is None:
        _stopped(slot)
    elif outcome.status is ToolCallStatus.PENDING:  # its subagent waits for a decision
        return batch.record.record_outcome(outcome)  # closed by the run that decides it
    if batch.hooks.after_tool_call is None and batch.record.journal is None:
        slot.hooked = True  # what close() does then, without a coroutine per call
        _announce(slot, batch)
        return None
    return close(slot, batch, journal=True)


async def _decide_and_run(slot: Slot, batch: BatchContext, iteration: int) -> None:
    before = batch.hooks.before_tool_call
    assert before is not None
    control = await call_hook(before, batch.step_context(slot))
    if control.action == "stop":
        batch.request_stop(control.reason, control.text)
    elif control.action == "override":
        _finish_ok(slot, control.result)
    elif batch.stop_requested() is None:  # another call's hook may have stopped the run
        rest = _start(slot, batch, iteration)
        if rest is not None:
            await rest
    closing = _closing(slot, batch)
    if closing is not None:
        await closing


def _stopped(slot: Slot) -> None:
    slot.finish(ToolCallStatus.CANCELLED, error=asyncio.CancelledError("the run was stopped"))


def _start(slot: Slot, batch: BatchContext, iteration: int, *, watched: bool = False) -> Step | None:
    """Start the call: None when it finished at once (it has its outcome), else what finishes it.

    Most calls finish without waiting (a tool that only computes): they need no coroutine here.
    """
    if batch.watch is not None and not watched:
        return _watched(slot, batch, iteration)
    tool, record = slot.tool, batch.record
    assert tool is not None and slot.kwargs is not None
    channel = record.events
    if channel is not None:  # Recorder.emit, inline
        channel.append(ToolCallStarted(slot.tool_call_id, slot.tool_name, slot.arguments))
        if channel.waiter is not None:
            channel.wake()
    context = None if tool.context_param is None else _context(slot, batch, iteration)
    timeout = tool.timeout if tool.timeout is not None else batch.limits.tool_timeout
    record.count_call()
    # the kwargs are the slot's own copy (Tool.validate), used once
    if not tool._is_async or tool._limiter is not None:  # is_async, limiter(): read here, no call per call
        return _finish_later(slot, invoke(tool, slot.kwargs, context, timeout, batch.lingering), batch)
    try:
        done, result = start_async(tool, slot.kwargs, context, timeout)
    except BaseException as exc:
        _failed(slot, exc, batch)
        return None
    if not done:
        return _finish_later(slot, result, batch)
    slot.finish(ToolCallStatus.OK, result=result)
    return None if batch.summarize is None else _summarize(slot, result, batch)


async def _finish_later(slot: Slot, call: Awaitable[Any], batch: BatchContext) -> None:
    try:
        result = await call
    except BaseException as exc:
        _failed(slot, exc, batch)
        return
    slot.finish(ToolCallStatus.OK, result=result)
    if batch.summarize is not None:
        await _summarize(slot, result, batch)


async def _watched(slot: Slot, batch: BatchContext, iteration: int) -> None:
    assert batch.watch is not None
    with batch.watch.tool(slot.template) as seen:
        rest = _start(slot, batch, iteration, watched=True)
        if rest is not None:
            await rest
        assert slot.outcome is not None
        seen.finished(slot.outcome)


def _context(slot: Slot, batch: BatchContext, iteration: int) -> ToolContext:
    """What the call's function is told about it (made only for a function that asks for it)."""
    return ToolContext(
        slot.tool_call_id,
        slot.tool_name,
        slot.arguments,
        batch.session_id,
        iteration,
        batch.token,
        batch.run_id,
        on_progress=functools.partial(
            _progress, asyncio.get_running_loop(), batch.record.progress, slot.tool_call_id, slot.tool_name
        ),
        deps=batch.deps,
        parent=batch,
    )


def _failed(slot: Slot, exc: BaseException, batch: BatchContext) -> None:
    """The call raised ``exc``: its outcome, or (a cancellation of the run) ``exc`` raised on."""
    if isinstance(exc, asyncio.CancelledError):
        if batch.token.cancelled or _being_cancelled():
            raise exc
        slot.finish(ToolCallStatus.ERROR, error=_cancelled_inside(exc))
    elif isinstance(exc, ApprovalsPending):
        slot.outcome = replace(slot.template, status=ToolCallStatus.PENDING, content=AWAITING)
        batch.nest(exc)
    elif isinstance(exc, Exception):
        slot.finish(ToolCallStatus.ERROR, error=exc)
    else:
        raise exc


async def _summarize(slot: Slot, result: Any, batch: BatchContext) -> None:
    from .summarize import summarize_outcome  # only for agents that summarise long results

    assert slot.outcome is not None and batch.summarize is not None
    slot.outcome = await summarize_outcome(slot.outcome, result, slot.limit, batch.summarize, batch.record)


def _progress(
    loop: asyncio.AbstractEventLoop,
    emit: Callable[[ToolCallProgress], None],
    call_id: str,
    name: str,
    progress: float,
    total: float | None,
    message: str | None,
) -> None:
    event = ToolCallProgress(call_id, name, progress, total, message)
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:  # a sync tool reporting from its worker thread
        running = None
    if running is loop:
        emit(event)
    else:
        loop.call_soon_threadsafe(emit, event)


def _being_cancelled() -> bool:
    """True when someone cancelled the current task (not a tool raising CancelledError itself)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _cancelled_inside(exc: asyncio.CancelledError) -> ToolError:
    detail = f": {exc}" if str(exc) else ""
    error = ToolError(f"the tool raised CancelledError (something inside it was cancelled){detail}")
    error.__cause__ = exc
    return error


def _finish_ok(slot: Slot, result: Any) -> None:
    slot.finish(ToolCallStatus.OK, result=result)


def not_run(
    stopping: StopReason | None, response: ModelResponse, why: str | None = None
) -> tuple[ToolError, StopReason]:
    """Why the calls of ``response`` must not run, and the run's stop reason.

    ``stopping`` is the reason the run is already stopping (``why``, when given, says more);
    otherwise the response was cut off, flagged, or the token budget is used up.
    """
    if stopping is not None:
        return ToolError(why or "not run: the run was stopped"), stopping
    if response.stop_reason is StopReason.MAX_TOKENS or cut_off(response):
        error = ToolError("not run: the response hit the output token limit and its arguments may be cut off")
        return error, StopReason.MAX_TOKENS
    if response.stop_reason is StopReason.REFUSAL:
        return ToolError("not run: the provider flagged this response (refusal or content filter)"), StopReason.REFUSAL
    return ToolError("not run: the run's token budget is used up"), StopReason.TOKEN_BUDGET
