"""The turn loop: send the conversation, take text and tool calls, run tools, repeat, stop.

One :class:`Run` drives one call of a front door. Its :meth:`Run.messages` async generator
yields every message the run appends; ``run()`` drains it, ``conversation()`` hands it to the
caller, and ``stream()`` drains it in a task while forwarding events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..errors import (
    ContextBudgetError,
    ContextLengthError,
    OutputValidationError,
    RunError,
    RunTimeoutError,
    ToolError,
    ToolloopError,
)
from ..events import Event, MessageAdded, ModelEvent, ModelRequestFinished, ModelRequestStarted, TextDelta
from ..messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from ..models.base import Model, ModelRequest, ModelSettings, ToolChoice
from ..tools.tool import Tool
from ..transcript import Transcript
from .cancel import CancelToken
from .control import Hooks, StepContext, call_hook
from .limits import Limits
from .output import OutputSpec
from .repair import INTERRUPTED, repair, unfinished_tail
from .result import ApprovalDecision, ApprovalRequest, RunResult
from .toolphase import (
    Approver,
    Slot,
    cancel_unfinished,
    check_decisions,
    decide,
    run_batch,
    slots_from_messages,
    slots_from_response,
)

__all__ = ["ContextShaper", "Journal", "Run", "RunConfig", "SessionSource"]


class Journal(Protocol):
    """Where a run writes each message as soon as it exists (a session in a store)."""

    async def record(self, messages: Sequence[Message]) -> None:
        """Persist ``messages``; a tool call recorded again replaces its earlier record."""
        ...


class SessionSource(Protocol):
    """A stored session a run continues: opened when the run starts, closed when it ends."""

    async def open(self) -> tuple[Sequence[Message], Journal]:
        """The session's history and the journal that continues it."""
        ...

    async def close(self, usage: Usage, model: str | None, transcript: Transcript) -> None:
        """Record the run's totals on the session and release what :meth:`open` acquired."""
        ...


class ContextShaper(Protocol):
    """Shapes what is sent before every model request (pruning, summaries); never the transcript."""

    async def prepare(
        self, messages: Sequence[Message], *, model: Model | None = None, overflow: bool = False
    ) -> Sequence[Message]:
        """The messages to send; ``overflow`` means the provider said the last request was too long."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """Everything about a run that comes from the agent, resolved."""

    model: Model
    system: str | None = None
    tools: Mapping[str, Tool] = field(default_factory=dict)
    denied: frozenset[str] = frozenset()
    limits: Limits = field(default_factory=Limits)
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputSpec | None = None
    hooks: Hooks = field(default_factory=Hooks)
    approver: Approver | None = None
    context: ContextShaper | None = None
    rerun_interrupted: bool = True
    """On resume, run again calls that started but have no result (False: mark them failed)."""


class _View(Sequence[Message]):
    """The system message followed by the transcript, without copying the transcript."""

    __slots__ = ("_head", "_rest")

    def __init__(self, head: Message, rest: Transcript):
        self._head = head
        self._rest = rest

    def __len__(self) -> int:
        return len(self._rest) + 1

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        return self._head if index == 0 else self._rest[index - 1]

    def __iter__(self) -> Any:
        yield self._head
        yield from self._rest


class Run:
    """The state of one run and the steps that advance it."""

    def __init__(
        self,
        config: RunConfig,
        *,
        history: Sequence[Message] = (),
        prompt: str | None = None,
        approvals: Sequence[ApprovalDecision] | Mapping[str, ApprovalDecision] = (),
        token: CancelToken | None = None,
        on_event: Any = None,
        journal: Journal | None = None,
        session_id: str | None = None,
        session: SessionSource | None = None,
    ):
        self.config = config
        self.model = config.model
        self.tools = config.tools
        self.denied = config.denied
        self.limits = config.limits
        self.hooks = config.hooks
        self.approver = config.approver
        self.decisions = dict(approvals) if isinstance(approvals, Mapping) else {d.tool_call_id: d for d in approvals}
        # the run's own token: stopping this run never cancels others sharing the caller's token
        self.token = token.child() if token is not None else CancelToken()
        self.session_id = session_id
        self.journal = journal
        self._session = session
        self._on_event: Any = on_event
        self._prompt = prompt
        self._set_history(history)
        self.usage = Usage()
        self.iteration = 0
        self.stop_reason: StopReason | None = None
        self.stop_requested: StopReason | None = None
        self.output: Any = None
        self.pending: tuple[ApprovalRequest, ...] = ()
        self._outbox: list[Message] = []
        self._unrecorded: list[Message] = []
        self._batch: list[Slot] = []
        self._partial: list[str] | None = None
        self._output_retries = 0
        self._final_done = False
        self._request: ModelRequest | None = None
        self._response: ModelResponse | None = None
        self._tool_defs = tuple(t.definition for t in config.tools.values())
        self._deadline: float | None = None

    def _set_history(self, history: Sequence[Message]) -> None:
        repaired, _ = repair(history)
        self.transcript = Transcript._shared(repaired, len(repaired))  # repair() built a fresh list
        self.start = len(self.transcript)
        self.call_ids = {m.tool_call_id for m in repaired if isinstance(m, ToolCallMessage)}

    # ------------------------------------------------------------------ driving

    async def messages(self) -> AsyncGenerator[Message, None]:
        """Advance the run, yielding each message as it is appended."""
        if self._session is None:
            async for message in self._advance():
                yield message
            return
        try:
            history, self.journal = await self._session.open()
            self._set_history(history)
            async for message in self._advance():
                yield message
        finally:
            await self._session.close(self.usage, getattr(self.model, "name", None), self.transcript)

    async def _advance(self) -> AsyncGenerator[Message, None]:
        if self.limits.timeout is not None:
            self._deadline = asyncio.get_running_loop().time() + self.limits.timeout
        going = await self._step(self._begin())
        for message in self._drain():
            yield message
        while going and self.stop_reason is None:
            going = await self._step(self._turn())
            for message in self._drain():
                yield message

    async def _step(self, step: Any) -> bool:
        """Run one step; returns False when the run ended by cancellation."""
        task = asyncio.current_task()
        if self.token.cancelled:
            step.close()
            self._cancelled()
            return False
        self.token._attach(task)
        error: ToolloopError | None = None
        completed = True
        try:
            if self._deadline is None:
                await step
            else:
                async with asyncio.timeout_at(self._deadline):
                    await step
        except asyncio.CancelledError:
            if not self.token.cancelled or task is None:
                raise
            task.uncancel()
            self._cancelled()
            completed = False
        except TimeoutError as exc:
            error = self._timeout_error(exc)
        except ToolloopError as exc:
            error = exc
        except Exception as exc:
            error = RunError(f"the run failed: {exc!r}")
            error.__cause__ = exc
        finally:
            self.token._detach(task)
        if error is not None:
            if self._partial:
                error.partial_text = "".join(self._partial)
                self._partial = None
            await self._flush(quiet=True)
            raise self._attach_state(error)
        await self._flush()
        return completed

    def _timeout_error(self, exc: TimeoutError) -> RunError:
        expired = self._deadline is not None and asyncio.get_running_loop().time() >= self._deadline
        if expired:
            error: RunError = RunTimeoutError(f"the run did not finish within {self.limits.timeout:g} seconds")
        else:
            error = RunError(f"the run failed: {exc!r}")
        error.__cause__ = exc
        return error

    def _attach_state(self, error: ToolloopError) -> ToolloopError:
        if error.transcript is None:
            error.transcript = self.transcript
        if error.usage is None:
            error.usage = self.usage
        return error

    def result(self) -> RunResult:
        """The outcome, once :meth:`messages` is exhausted."""
        return RunResult(
            transcript=self.transcript,
            stop_reason=self.stop_reason or StopReason.END_TURN,
            usage=self.usage,
            output=self.output,
            pending_approvals=self.pending,
            start=self.start,
        )

    # ------------------------------------------------------------------ bookkeeping

    def emit(self, event: Event) -> None:
        """Send an event to the stream consumer, if there is one."""
        if self._on_event is not None:
            self._on_event(event)

    def _append(self, messages: Sequence[Message]) -> None:
        self.transcript = self.transcript.extend(messages)
        self._outbox.extend(messages)
        if self.journal is not None:
            self._unrecorded.extend(messages)
        if self._on_event is not None:
            for message in messages:
                self._on_event(MessageAdded(message))

    async def _flush(self, *, quiet: bool = False) -> None:
        """Write appended messages to the journal (``quiet``: while another error is on its way)."""
        if self.journal is None or not self._unrecorded:
            return
        pending, self._unrecorded = self._unrecorded, []
        try:
            await self.journal.record(pending)
        except Exception:
            if not quiet:
                raise

    async def record_outcome(self, message: ToolCallMessage) -> None:
        """Journal a finished call at once, so a crash never runs it again (the batch follows whole)."""
        if self.journal is not None:
            await self.journal.record([message])

    async def _add(self, *messages: Message) -> None:
        self._append(messages)
        await self._flush()

    def _drain(self) -> list[Message]:
        out, self._outbox = self._outbox, []
        return out

    def step_context(self, *, call: Slot | None = None) -> StepContext:
        """The snapshot hooks receive."""
        return StepContext(
            iteration=self.iteration,
            request=self._request,
            response=self._response,
            tool_results=tuple(s.outcome for s in self._batch if s.outcome is not None),
            transcript=self.transcript,
            call=None if call is None else _as_call(call),
            result=None if call is None else call.outcome,
        )

    def _stop(self, reason: StopReason) -> None:
        """Set the stop reason unless an earlier one stands."""
        if self.stop_reason is None:
            self.stop_reason = reason

    # ------------------------------------------------------------------ steps

    async def _begin(self) -> None:
        """Resolve an unfinished tail (approvals, interrupted calls), then add the prompt."""
        start, calls = unfinished_tail(self.transcript)
        if calls:
            await self._resume_batch(start, calls)
            if self.stop_reason is not None:
                return
        if self._prompt is not None:
            await self._add(UserMessage(self._prompt))
        elif not calls and (not self.transcript or isinstance(self.transcript[-1], AssistantMessage | SystemMessage)):
            self._stop(StopReason.END_TURN)

    async def _resume_batch(self, start: int, calls: list[ToolCallMessage]) -> None:
        if not self.config.rerun_interrupted:
            calls = [_interrupted(c) if c.status is ToolCallStatus.STARTED else c for c in calls]
        slots = slots_from_messages(calls, self)
        check_decisions(slots, self.decisions)  # before the batch leaves the transcript
        self.transcript = self.transcript[:start]
        self.start = min(self.start, start)
        await self._settle(slots, deny_undecided=self._prompt is not None)

    async def _turn(self) -> None:
        """One model request, then its tool calls."""
        reason = self._limit_reached()
        if reason is not None:
            self._stop(reason)
            if self.limits.final_answer_on_limit:
                await self._final_answer()
            return
        response = await self._request_model("auto")
        if self.hooks.on_model_response is not None:  # no snapshot to build when nobody looks
            control = await call_hook(self.hooks.on_model_response, self.step_context())
            if control.action == "override" and control.response is not None:
                response = self._response = control.response
            if control.action == "stop":
                self._stop(control.reason)
        await self._record_response(response)

    def _limit_reached(self) -> StopReason | None:
        if self.iteration >= self.limits.max_turns:
            return StopReason.MAX_TURN_REQUESTS
        if self._budget_spent():
            return StopReason.TOKEN_BUDGET
        return None

    def _budget_spent(self) -> bool:
        budget = self.limits.max_total_tokens
        return budget is not None and self.usage.total_tokens >= budget

    async def _final_answer(self) -> None:
        """After a limit stopped the run: one more request without tools, for an answer."""
        if self._final_done:
            return
        self._final_done = True
        response = await self._request_model("none")
        if response.tool_calls:
            await self._refuse_batch(slots_from_response(response, f"final-{self.iteration}", self), response)
            return
        await self._add(_answer(response))
        spec = self.config.output
        if spec is not None:
            try:
                self.output = spec.validate(response.text)
            except ValueError as exc:  # no turn is left to ask again
                raise OutputValidationError(f"the final answer did not match {spec.schema.name}: {exc}") from None

    async def _request_model(self, tool_choice: ToolChoice) -> ModelResponse:
        self.iteration += 1
        request = self._request = ModelRequest(
            await self._shape(overflow=False),
            self._tool_defs,
            settings=self.config.settings,
            output=self.config.output.schema if self.config.output is not None else None,
            tool_choice=tool_choice,
        )
        self.emit(ModelRequestStarted(self.iteration))
        handler = self._model_event if self._on_event is not None else None
        try:
            response = await self.model.respond(request, handler)
        except ContextLengthError as exc:
            smaller = await self._shape_after_overflow(request.messages)
            if smaller is None:
                raise
            self._partial = None
            request = self._request = replace(request, messages=smaller)
            try:
                response = await self.model.respond(request, handler)
            except ContextLengthError as again:
                raise again from exc
        self._partial = None
        self._response = response
        usage = response.usage
        if usage.requests != 1 or usage.tool_calls:
            usage = replace(usage, requests=1, tool_calls=0)  # the loop counts requests and executed calls
        self.usage = self.usage + usage
        self.emit(ModelRequestFinished(self.iteration, response, self.usage))
        return response

    async def _shape_after_overflow(self, sent: Sequence[Message]) -> Sequence[Message] | None:
        """A smaller request after the provider said the last one was too long; None if none helps."""
        if self.config.context is None:
            return None
        try:
            smaller = await self._shape(overflow=True)
        except ContextBudgetError:
            return None
        return smaller if len(smaller) < len(sent) else None

    async def _shape(self, *, overflow: bool) -> Sequence[Message]:
        base: Sequence[Message] = self.transcript
        system = self.config.system
        if system and not (self.transcript and isinstance(self.transcript[0], SystemMessage)):
            base = _View(SystemMessage(system), self.transcript)
        if self.config.context is not None:
            return await self.config.context.prepare(base, model=self.model, overflow=overflow)
        return base

    def _model_event(self, event: ModelEvent) -> None:
        if isinstance(event, TextDelta):
            if self._partial is None:
                self._partial = []
            self._partial.append(event.text)
        self._on_event(event)

    def _close_partial(self) -> None:
        """Keep text a cancelled or failed streaming response had already produced."""
        if self._partial:
            text, self._partial = "".join(self._partial), None
            self._append([AssistantMessage(text, stop_reason=StopReason.CANCELLED)])

    async def _record_response(self, response: ModelResponse) -> None:
        if not response.tool_calls:
            await self._answered(response)
            return
        # Deterministic, and unique within the transcript: replays and stores see the same ids.
        batch_id = f"{response.tool_calls[0].id}@{len(self.transcript)}"
        slots = slots_from_response(response, batch_id, self)
        flagged = response.stop_reason in (StopReason.MAX_TOKENS, StopReason.REFUSAL)
        if self.stop_reason is not None or flagged or self._budget_spent():
            await self._refuse_batch(slots, response)
            return
        await self._settle(slots)
        if self.stop_requested is not None:
            self._stop(self.stop_requested)

    async def _refuse_batch(self, slots: list[Slot], response: ModelResponse) -> None:
        """Record calls that must not run (cut off by the output limit, or the run is stopping)."""
        if self.stop_reason is not None:
            error = ToolError("not run: the run was stopped")
            reason = self.stop_reason
        elif response.stop_reason is StopReason.MAX_TOKENS:
            error = ToolError("not run: the response hit the output token limit and its arguments may be cut off")
            reason = StopReason.MAX_TOKENS
        elif response.stop_reason is StopReason.REFUSAL:
            error = ToolError("not run: the provider flagged this response (refusal or content filter)")
            reason = StopReason.REFUSAL
        else:
            error = ToolError("not run: the run's token budget is used up")
            reason = StopReason.TOKEN_BUDGET
        for slot in slots:
            if slot.outcome is None:
                slot.finish(ToolCallStatus.CANCELLED, error=error, limit=None)
        await self._add(*[s.outcome for s in slots if s.outcome is not None])
        self._stop(reason)
        if reason is StopReason.TOKEN_BUDGET and self.limits.final_answer_on_limit:
            await self._final_answer()

    async def _settle(self, slots: list[Slot], *, deny_undecided: bool = False) -> None:
        """Decide approvals, run what may run, and record the batch (also when interrupted)."""
        self._batch = slots
        try:
            waiting = await decide(slots, self, deny_undecided=deny_undecided)
            if self.journal is not None:
                started = [s.template for s in slots if s.outcome is None]
                if started:
                    await self.journal.record(started)
            await run_batch(slots, self)
        finally:
            # interrupted while deciding: the calls are kept, marked as not run
            cancel_unfinished(slots, "the run stopped before this call ran")
            self._append([s.outcome for s in slots if s.outcome is not None])
            self._batch = []
        await self._flush()
        if waiting:
            self.pending = tuple(waiting)
            self._stop(StopReason.APPROVAL_REQUIRED)

    async def _answered(self, response: ModelResponse) -> None:
        reason = response.stop_reason
        if reason is StopReason.PAUSE_TURN:
            await self._add(_answer(response))
            return
        if response.refusal is not None or reason in (StopReason.MAX_TOKENS, StopReason.REFUSAL):
            await self._add(_answer(response))
            self._stop(StopReason.REFUSAL if response.refusal is not None else reason)
            return
        spec = self.config.output
        if spec is None:
            await self._add(_answer(response))
            self._stop(StopReason.END_TURN)
            return
        await self._check_output(spec, response)

    async def _check_output(self, spec: OutputSpec, response: ModelResponse) -> None:
        answer = _answer(response)
        try:
            self.output = spec.validate(response.text)
        except ValueError as exc:
            if self._output_retries >= self.limits.output_retries:
                await self._add(answer)
                raise OutputValidationError(
                    f"the final answer did not match {spec.schema.name} after "
                    f"{self._output_retries + 1} attempts: {exc}"
                ) from None
            self._output_retries += 1
            await self._add(answer, UserMessage(spec.retry_prompt(str(exc))))
            return
        await self._add(answer)
        self._stop(StopReason.END_TURN)

    def _cancelled(self) -> None:
        self._close_partial()
        self.stop_reason = StopReason.CANCELLED


def _answer(response: ModelResponse) -> AssistantMessage:
    return AssistantMessage(
        response.text,
        thinking=response.thinking,
        refusal=response.refusal,
        stop_reason=response.stop_reason,
        model=response.model,
        provider_data=response.provider_data,
    )


def _interrupted(message: ToolCallMessage) -> ToolCallMessage:
    return replace(message, status=ToolCallStatus.ERROR, content=INTERRUPTED, error_type="Interrupted")


def _as_call(slot: Slot) -> ToolCall:
    template = slot.template
    return ToolCall(template.tool_call_id, template.tool_name, template.arguments)
