"""The turn loop: send the conversation, take text and tool calls, run tools, repeat, stop.

One :class:`Run` drives one call of a front door. Its :meth:`Run.messages` async generator
yields every message the run appends; ``run()`` drains it, ``conversation()`` hands it to the
caller, and ``stream()`` drains it in a task while forwarding events.

The run advances in steps: :meth:`Run._begin` settles what an earlier run left unfinished and
adds the prompt, then each :meth:`Run._turn` asks the model once and runs the tools it asks for.
The run is a :class:`~tooloop.loop.step.StepRunner`: around each step it handles cancellation,
the deadline and errors; :class:`~tooloop.loop.record.Recorder` keeps the transcript, usage, events and journal;
:class:`~tooloop.loop.answer.Answers` takes answers; :mod:`~tooloop.loop.toolphase` runs batches.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentValueError, ConfigurationError, ContextLengthError, ToolError, ToolloopError
from ..events import ModelEvent, TextDelta, request_finished, request_started
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
    UserPart,
    with_usage,
)
from ..models.base import ModelRequest, ModelSettings, RunMemo, ToolChoice, ToolDefinition
from ..models.payloads import start_listening, stop_listening
from ..models.prices import PRICED_PROVIDERS, cost_of, priced
from ..tools.execute import Lingering
from ..tools.tool import Tool
from ..transcript import Transcript
from . import steering
from .answer import Answers
from .approval import ApprovalsPending, check_decisions, decide, stray_decisions
from .caching import CacheWatch, OpeningKey
from .cancel import CancelToken
from .channel import EventChannel
from .config import RunConfig, SessionSource
from .contract import checked, pending_response
from .control import StepContext, call_hook
from .guards import Guards, cut_off, grown_max_tokens
from .limits import budget_spent, cost_reached, limit_reached
from .observe import RunFacts, Watch, default_tracer, provider_of
from .record import Journal, Recorder
from .repair import repair, unfinished_tail
from .result import ApprovalDecision, ApprovalRequest, RunResult
from .steering import Inbox, check_steering
from .step import Step, StepRunner
from .toolphase import (
    Slot,
    cancel_unfinished,
    close_all,
    not_run,
    run_batch,
    slots_from_messages,
    slots_from_response,
)

if TYPE_CHECKING:
    from ..store.base import Store
    from ..tools.search import ToolLoader

__all__ = ["Run"]


class Run(StepRunner):
    """The state of one run and the steps that advance it."""

    # Slots: a thousand runs at once each hold one, and past 30 attributes an instance's __dict__
    # stops sharing its keys (over a kilobyte more per run). Name a new attribute here; one that
    # is not still works (it goes to the __dict__ kept for it) but costs that dict again.
    __slots__ = (
        "__dict__",
        "_batch",
        "_cache_key",
        "_final_done",
        "_last_usage",
        "_memo",
        "_names_checked",
        "_nested",
        "_prompt",
        "_request",
        "_response",
        "_session",
        "_stop_asked",
        "_stop_asked_text",
        "_tool_defs",
        "answers",
        "approver",
        "auto_execute",
        "cache_watch",
        "call_ids",
        "config",
        "decisions",
        "denied",
        "denying_undecided",
        "deps",
        "guards",
        "hooks",
        "inbox",
        "iteration",
        "limits",
        "lingering",
        "loader",
        "model",
        "outer_limit",
        "pending",
        "provider",
        "record",
        "run_id",
        "runnable",
        "session_id",
        "shaper",
        "start",
        "stop_reason",
        "stop_text",
        "subagent",
        "summarize",
        "tools",
        "turn_id",
        "undelivered",
        "watch",
    )

    def __init__(
        self,
        config: RunConfig,
        *,
        history: Sequence[Message] = (),
        prompt: str | tuple[UserPart, ...] | None = None,
        approvals: Sequence[ApprovalDecision] | Mapping[str, ApprovalDecision] = (),
        token: CancelToken | None = None,
        journal: Journal | None = None,
        session_id: str | None = None,
        session: SessionSource | None = None,
        turn_id: str | None = None,
        deps: Any = None,
    ):
        self.config = config
        self.deps = deps
        self.turn_id = turn_id
        self.model = config.model
        self.decisions = (
            {}  # the usual run: no decisions (no ABC check nor comprehension for them)
            if not approvals
            else dict(approvals)
            if isinstance(approvals, Mapping)
            else {d.tool_call_id: d for d in approvals}
        )
        self.session_id = session_id
        self.run_id = os.urandom(8).hex()
        self.record = Recorder(Transcript(), journal)
        # the run's own token: stopping this run never cancels others sharing the caller's token
        super().__init__(token.child() if token is not None else CancelToken(), config.limits.timeout)
        self.answers: Answers | None = None  # made by the first answer (see _answers)
        self.shaper = config.shaper
        self._session = session
        self._prompt = prompt
        self._set_history(history)
        self.iteration = 0
        self.stop_reason: StopReason | None = None
        self.stop_text: str | None = None
        self.pending: tuple[ApprovalRequest, ...] = ()
        self._stop_asked: StopReason | None = None  # by a tool hook; the batch finishes first
        self._stop_asked_text: str | None = None
        self._batch: Sequence[Slot] = ()  # the batch being settled (hooks see its outcomes)
        self._final_done = False
        self._request: ModelRequest | None = None
        self._memo = RunMemo()  # what the model keeps for this run's later requests; emptied when it ends
        self._response: ModelResponse | None = None
        # the agent's tools, shared by its runs; a run whose tool sources add tools has its own
        self.tools: Mapping[str, Tool] = dict(config.tools) if config.sources else config.tools
        self.lingering = Lingering()
        self._tool_defs = config.definitions
        self.provider = provider_of(config.model)
        self._last_usage: Usage | None = None  # the previous request's: its cost is the next one's estimate
        self.watch: Watch | None = None
        self._names_checked = False  # allowed/denied names of sources' tools: checked at the first listing
        self.guards = Guards(config.limits)
        self.subagent: tuple[str, str] | None = None
        """A subagent's run: the path of the call running it and that tool's name (for tracers)."""
        self.outer_limit: Callable[[Usage | None], StopReason | None] | None = None
        """A subagent's parent's bounds (its ``max_cost``), checked before each request too."""
        self.inbox: Inbox | None = None  # made by the first steer() (see steering)
        self.denying_undecided = False
        """Calls waiting for a decision get none: a new prompt arrived (a subagent's run inherits this)."""
        self.undelivered: tuple[str, ...] = ()
        """Steering messages the run ended before delivering (it stopped for approval, a limit...)."""
        self.cache_watch: CacheWatch | None = None  # made by the first response with cached input
        self._cache_key: OpeningKey | None = None
        self.loader: ToolLoader | None = None  # tool search: made at the first request, from the history
        # what a batch may call: every tool, or (tool search) the search tool and every tool
        self.runnable: Mapping[str, Tool] = self.tools if config.tool_search is None else dict(self.tools)
        # what the tool phase reads of the config (see BatchContext), as slots: read for every call
        self.denied = config.denied
        self.limits = config.limits
        self.hooks = config.hooks
        self.approver = config.approver
        self.auto_execute = config.auto_execute_tools
        self.summarize = config.summarize_results
        self._nested: list[ApprovalsPending] | None = None  # a batch's calls whose subagents wait for decisions

    def _set_history(self, history: Sequence[Message]) -> None:
        repaired, _ = repair(history)
        self.record.transcript = Transcript._shared(repaired, len(repaired))  # repair() built a fresh list
        self.start = len(repaired)
        self.call_ids = {m.tool_call_id for m in repaired if isinstance(m, ToolCallMessage)}

    @property
    def transcript(self) -> Transcript:
        """The transcript so far."""
        return self.record.transcript

    @property
    def usage(self) -> Usage:
        """The usage so far."""
        return self.record.usage

    def steer(self, text: str) -> bool:
        """Send a user message into the running run, from any task or thread.

        It is recorded and shown to the model at the next safe boundary (before the next model
        request, never between a call and its result); sent while the model gives its final
        answer, it starts one more turn. False when the run has already ended (nothing was sent).
        """
        return steering.put(self, check_steering(text))

    async def _deliver_steering(self, texts: Sequence[str]) -> None:
        await self.record.add(*(UserMessage(text) for text in texts))

    def _end_inbox(self) -> None:
        self.undelivered = steering.close(self)

    @property
    def session_store(self) -> Store | str | None:
        """The store of the run's session (an open store, or its URL); None without a session."""
        return None if self._session is None else getattr(self._session, "store", None)

    def cost_check(self, last: Usage | None) -> StopReason | None:
        """``COST_LIMIT`` when this run's ``max_cost`` (or a parent's) forbids a request costing
        about ``last``'s cost more now (what a subagent checks before each of its requests)."""
        if cost_reached(self.config.limits, self.record.spent, last):
            return StopReason.COST_LIMIT
        return None if self.outer_limit is None else self.outer_limit(last)

    def send_events_to(self, channel: EventChannel) -> None:
        """Send every event of the run to ``channel`` (the stream's)."""
        self.record.events = channel

    # ------------------------------------------------------------------ driving

    async def messages(self) -> AsyncGenerator[Message, None]:
        """Advance the run, yielding each message as it is appended."""
        watch = self.watch = Watch.start(self._facts, self.config.tracer or default_tracer(), self.provider)
        try:
            if self._session is None:
                async for message in self._advance():
                    yield message
            else:
                async for message in self._in_session(self._session):
                    yield message
        except BaseException as exc:
            if watch is not None:
                abandoned = isinstance(exc, GeneratorExit)
                watch.finished(None, self.record.usage, None if abandoned else exc, self.record.transcript)
            raise
        finally:
            self._memo.clear()
            self._end_inbox()
        if watch is not None:
            watch.finished(self.stop_reason or StopReason.END_TURN, self.record.usage, None, self.record.transcript)

    async def finish(self) -> None:
        """Advance the run to its end without yielding messages (what ``run()`` needs).

        The same steps as :meth:`messages`, without an async generator per run: at thousands of
        concurrent runs every object a run keeps alive is scanned by the garbage collector.
        """
        watch = self.watch = Watch.start(self._facts, self.config.tracer or default_tracer(), self.provider)
        session = self._session
        self.record.keep_outbox = False  # nobody takes the messages here
        try:
            try:
                if session is not None:
                    await self._open_session(session)
                # no journal to write between steps: the turns run in the first step (one cancel
                # scope, deadline and token attachment for all of them instead of one each)
                completed = await self._step(self._first_step(), -1 if self.record.journal is None else 0)
                while True:  # the steps of _advance
                    if not completed:
                        self.stop_reason = StopReason.CANCELLED
                    if self.stop_reason is not None:
                        break
                    completed = await self._step(None, 1)
            finally:
                self._memo.clear()  # what the model kept for the run goes now, even if the run is kept
                self._end_inbox()
                if session is not None:
                    await self._close_session(session)
        except BaseException as exc:
            if watch is not None:
                watch.finished(None, self.record.usage, exc, self.record.transcript)
            raise
        if watch is not None:
            watch.finished(self.stop_reason or StopReason.END_TURN, self.record.usage, None, self.record.transcript)

    async def _in_session(self, session: SessionSource) -> AsyncGenerator[Message, None]:
        try:
            await self._open_session(session)
            async for message in self._advance():
                yield message
        finally:
            await self._close_session(session)

    async def _open_session(self, session: SessionSource) -> None:
        history, self.record.journal = await session.open()
        self._set_history(history)

    async def _close_session(self, session: SessionSource) -> None:
        await session.close(self.record.usage, getattr(self.model, "name", None), self.record.transcript)

    def _facts(self) -> RunFacts:
        config = self.config
        return RunFacts(
            run_id=self.run_id,
            model=str(getattr(self.model, "name", "")),
            provider=self.provider,
            session_id=self.session_id,
            tools=tuple(config.tools),
            system=config.system,
            agent=config.name or (self.subagent[1] if self.subagent else None),
            path=self.subagent[0] if self.subagent else None,
        )

    async def _advance(self) -> AsyncGenerator[Message, None]:
        completed = await self._step(self._first_step(), 0)
        while True:
            if not completed:
                self.stop_reason = StopReason.CANCELLED
            for message in self.record.drain():
                yield message
            if self.stop_reason is not None:
                return
            completed = await self._step(None, 1)

    async def _step(self, begin: Step | None, turns: int) -> bool:
        """``begin`` (when given), then ``turns`` turns (a negative number: until the run stops), as
        one step: under the run's token and deadline, what it appended journaled after it; False
        when the run was cancelled. Raises what escaped it as a
        :class:`~tooloop.errors.ToolloopError` with the run's state.

        A turn is one model request, then its tool calls (or, past a limit, the run stops). The
        model is awaited here, not in a coroutine of its own: a waiting run sits under as few
        levels as possible. A cancel of the token ends the turns between turns; the step that
        follows is never started (the run ends as cancelled), as between separate steps.
        """
        if self.token.cancelled:
            return await self._not_started(begin)
        task, baseline = self._attach()
        direct = self.watch is None and self.config.hooks.on_provider_payload is None
        handler = self._model_event if self.record.events is not None else None
        error: ToolloopError | None = None
        completed = True
        # the deadline's scope entered and left as `async with` would, without a method of it kept
        # while the run waits (a run without a time limit has none)
        scope = None
        try:
            scope = await self._time_limit()
            if begin is not None:
                await begin
                del begin  # the finished coroutine is not kept while the run waits
            while self._going(turns):
                turns -= 1
                request = await self._turn_request()
                if request is None:
                    break
                if direct:  # _response_to's steps inline (the usual run)
                    try:
                        answer = checked(self.model, await pending_response(self.model, request, handler))
                    except ContextLengthError as exc:
                        answer = await self._request_smaller(request, handler, exc)
                    answer = self._priced(request, answer)
                else:
                    answer = await self._response_to(request)
                await self._take_response(self._answered(request, answer))
                del answer  # not kept while the run waits for the next one
            if scope is not None:
                await scope.__aexit__(None, None, None)
        except BaseException as exc:
            error = await self._escaped(task, baseline, await _left(scope, exc))
            completed = False
        else:
            self.token._detach(task)  # before the journal is written: a late cancel must not cut it
        if error is not None:
            raise await self._failed(error)
        if self.record.journal is not None:
            await self.record.flush()
        return completed

    def _going(self, turns: int) -> bool:
        """Turns left to take in this step, no stop reason yet, and the token not cancelled: the run
        takes another turn."""
        return turns != 0 and self.stop_reason is None and not self.token.cancelled

    async def _time_limit(self) -> asyncio.Timeout | None:
        """The run's deadline as an entered scope (left by :meth:`_step`); None without a time limit."""
        if self.deadline is None:
            return None
        scope = asyncio.timeout_at(self.deadline)
        await scope.__aenter__()
        return scope

    async def _turn_request(self) -> ModelRequest | None:
        """The request that opens a turn (steering delivered, tool sources listed first); None when
        a limit stopped the run instead."""
        reason = limit_reached(self.config.limits, self.iteration, self.record, self._last_usage)
        if reason is None and self.outer_limit is not None:
            reason = self.outer_limit(self._last_usage)
        if reason is not None:
            self._stop(reason)
            if self.config.limits.final_answer_on_limit and reason is not StopReason.COST_LIMIT:
                await self._final_answer()
            return None
        sent = steering.take(self)
        if sent:
            await self._deliver_steering(sent)
        if self.config.sources:
            await self._list_tools()
        return self._new_request("auto") if self.shaper.context is None else await self._shaped("auto")

    def _first_step(self) -> Step:
        self.start_clock()
        if self.turn_id is not None:
            self._find_turn(self.turn_id)
        if self.config.limits.max_cost is not None:
            self._check_priced()
        if self.token.cancelled and self._prompt is not None:
            # Cancelled before it began: the prompt is still kept (and journaled), unanswered.
            self.record.append([UserMessage.of(self._prompt, self.turn_id)])
            self._prompt = None
        return self._begin()

    def result(self) -> RunResult:
        """The outcome, once :meth:`messages` is exhausted."""
        return RunResult(
            transcript=self.record.transcript,
            stop_reason=self.stop_reason or StopReason.END_TURN,
            usage=self.record.usage,
            output=None if self.answers is None else self.answers.output,
            pending_approvals=self.pending,
            start=self.start,
            stop_text=self.stop_text,
        )

    def step_context(self, call: Slot | None = None) -> StepContext:
        """The snapshot hooks receive."""
        return StepContext(
            iteration=self.iteration,
            request=self._request,
            response=self._response,
            tool_results=tuple(s.outcome for s in self._batch if s.outcome is not None),
            transcript=self.record.transcript,
            call=None if call is None else _as_call(call),
            result=None if call is None else call.outcome,
            deps=self.deps,
            model=self.model,
            tools=MappingProxyType(self.tools),
        )

    def _answers(self) -> Answers:
        """What takes the run's answers (a run waiting for the model holds none before its first)."""
        answers = self.answers
        if answers is None:
            config = self.config
            answers = self.answers = Answers(config.output, config.limits.output_retries, self.record)
        return answers

    def _stop(self, reason: StopReason, text: str | None = None) -> None:
        """Set the stop reason (and a hook's explanation) unless an earlier one stands."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_text = text

    # ------------------------------------------------------------------ steps

    async def _list_tools(self) -> None:
        """Ask every tool source for its current tools (cheap when nothing changed)."""
        if not self.config.sources:
            return
        listed = await asyncio.gather(*(source.list_tools() for source in self.config.sources))
        tools, config = dict(self.config.tools), self.config
        if config.unresolved and not self._names_checked:
            self._names_checked = True
            _check_source_names(config, listed)
        for source, offered in zip(self.config.sources, listed, strict=True):
            for tool in offered:
                if tool.name in config.denied or (config.allowed is not None and tool.name not in config.allowed):
                    continue
                if tool.name in tools:
                    raise ConfigurationError(
                        f"tool {tool.name!r} of {source.name} has the name of another tool; give the source a prefix"
                    )
                tools[tool.name] = tool
        if tools != self.tools:
            # Tools keep the place they had (a server listing them in another order, or adding
            # one, must not change the bytes of the request's prefix); new ones go last.
            ordered = {name: tools[name] for name in self.tools if name in tools}
            ordered.update(tools)
            own = self.tools
            assert isinstance(own, dict)  # a run with tool sources has its own (see __init__)
            own.clear()
            own.update(ordered)
            self._tool_defs = tuple(t.definition for t in ordered.values())

    async def _begin(self) -> None:
        """Resolve an unfinished tail (approvals, interrupted calls), then add the prompt."""
        if self.stop_reason is not None:  # a finished turn submitted again
            return
        await self._list_tools()
        transcript = self.record.transcript
        start, calls = unfinished_tail(transcript)
        if self.decisions and not calls:
            raise stray_decisions(sorted(self.decisions))
        if calls:
            await self._resume_batch(start, calls)
            if self.stop_reason is not None:
                return
        if self._prompt is not None:
            await self.record.add(UserMessage.of(self._prompt, self.turn_id))
        elif not transcript:
            raise ArgumentValueError(_NOTHING_TO_CONTINUE.format(session=self.session_id))
        elif not calls and (not transcript or isinstance(transcript[-1], AssistantMessage | SystemMessage)):
            self._stop(StopReason.END_TURN)

    def _find_turn(self, turn_id: str) -> None:
        """A turn already in the history is continued where it stands, never started again.

        Its prompt is not written again; the run continues the turn's tail (interrupted calls run
        again: this is an explicit continuation of that turn). A turn followed by later turns is
        finished: the run returns it as it stands and writes nothing.
        """
        transcript = self.record.transcript
        at = next(
            (i for i in range(len(transcript) - 1, -1, -1) if _opens_turn(transcript[i], turn_id)),
            None,
        )
        if at is None:
            return
        self._prompt = None
        later = next((i for i in range(at + 1, len(transcript)) if isinstance(transcript[i], UserMessage)), None)
        if later is not None:
            self._set_history(transcript[:later])
            self._stop(StopReason.END_TURN)
        self.start = at

    def _check_priced(self) -> None:
        name = getattr(self.model, "name", None)
        if cost_of(Usage(), self.provider, name) is None:
            raise ConfigurationError(
                f"Limits.max_cost is set but the price of {self.provider!r} model {name!r} is unknown, "
                "so the limit cannot be kept; remove max_cost or use a model with a known price"
            )

    async def _retry_cut(self, response: ModelResponse) -> ModelResponse:
        """A response cut off while writing a tool call, asked once more with a larger ``max_tokens``
        when ``Limits.retry_cut_calls`` allows it (its calls never run either way)."""
        limits, settings = self.config.limits, self.config.settings
        grown = grown_max_tokens(settings.max_tokens)
        if not limits.retry_cut_calls or grown is None:
            return response
        if limit_reached(limits, self.iteration, self.record, self._last_usage) is not None:
            return response
        if self.watch is not None:
            self.watch.retrying(self.iteration, f"a tool call was cut off by the output limit; max_tokens={grown}")
        return await self._request_model("auto", replace(settings, max_tokens=grown))

    async def _request_model(self, tool_choice: ToolChoice, settings: ModelSettings | None = None) -> ModelResponse:
        """Send the shaped conversation; on a context overflow, once more with a smaller one (a
        turn's request is sent by :meth:`_step` itself, with the same steps)."""
        request = (
            self._new_request(tool_choice, settings)
            if self.shaper.context is None
            else await self._shaped(tool_choice, settings)
        )
        return self._answered(request, await self._response_to(request))

    def _new_request(self, tool_choice: ToolChoice, settings: ModelSettings | None = None) -> ModelRequest:
        """The next request, of the conversation as the shaper sends it (no context policy)."""
        self.iteration += 1
        # the previous response (and what it holds) is freed while the run waits for this one: no
        # hook sees a snapshot before this request is answered
        self._response = None
        return self._build_request(self.shaper.base(self.record.transcript), tool_choice, settings)

    async def _shaped(self, tool_choice: ToolChoice, settings: ModelSettings | None = None) -> ModelRequest:
        """The next request, of the conversation as the context policy shapes it (it may summarize)."""
        self.iteration += 1
        self._response = None  # as in _new_request
        messages = await self.shaper.messages(self.record.transcript)
        if self._request is not None:
            self._announce_rewrite(self._request.messages, messages)
        return self._build_request(messages, tool_choice, settings)

    def _build_request(
        self, messages: Sequence[Message], tool_choice: ToolChoice, settings: ModelSettings | None
    ) -> ModelRequest:
        if self._cache_key is None:
            self._cache_key = OpeningKey(self.session_id, messages)  # hashed when an adapter reads it
        tools, native_search = (self._tool_defs, False) if self.config.tool_search is None else self._searched_tools()
        request = self._request = ModelRequest(
            messages,
            tools,
            settings=settings or self.config.settings,
            output=self.config.output.schema if self.config.output is not None else None,
            tool_choice=tool_choice,
            cache_key=self._cache_key,
            tool_search=native_search,
            memo=self._memo,
        )
        channel = self.record.events
        if channel is not None:  # Recorder.emit, inline
            channel.append(request_started(self.iteration))
            if channel.waiter is not None:
                channel.wake()
        return request

    async def _response_to(self, request: ModelRequest) -> ModelResponse:
        """The model's response to ``request``, priced (:meth:`_step` awaits the usual one itself)."""
        handler = self._model_event if self.record.events is not None else None
        if self.watch is None and self.config.hooks.on_provider_payload is None:
            try:
                answer = checked(self.model, await pending_response(self.model, request, handler))
            except ContextLengthError as exc:
                answer = await self._request_smaller(request, handler, exc)
            response = self._priced(request, answer)
        elif self.watch is None:
            response = await self._respond(request, handler)
        else:
            with self.watch.request(self.iteration, request) as seen:
                response = await self._respond(request, handler)
                seen.finished(response, response.usage.cost)
        return response

    def _answered(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """Take the response to ``request``: counted, announced, checked for a cache miss."""
        self.forget_partial()
        self._response = response
        if request.tool_search:
            assert self.loader is not None
            self.loader.note(response.provider_data)  # before its calls are checked against what is loaded
        record = self.record
        self._last_usage = record.count_request(response.usage)  # the counted copy: one Usage kept, not two
        channel = record.events
        if channel is not None:  # Recorder.emit, inline; the total is summed if it is read
            channel.append(request_finished(self.iteration, response, record.running_total()))
            if channel.waiter is not None:
                channel.wake()
        usage, cache_watch = response.usage, self.cache_watch
        if cache_watch is None and (usage.cache_read_tokens or usage.cache_write_tokens):
            cache_watch = self.cache_watch = CacheWatch(self.config.settings)
        # without a watch nothing was cached yet: nothing to compare with (CacheWatch.check's first case)
        miss = None if cache_watch is None else cache_watch.check(self.iteration, self._request or request, usage)
        if miss is not None and channel is not None:
            record.emit(miss)
        return response

    async def _respond(self, request: ModelRequest, handler: Any) -> ModelResponse:
        """The model's response to ``request`` (or a smaller one after a context overflow), priced;
        its provider payloads to ``on_provider_payload`` (without a tracer nor that hook,
        :meth:`_request_model` does the same steps inline)."""
        watcher = self.config.hooks.on_provider_payload
        # the payloads of this request (and of a smaller retry) go to the hook
        listening = None if watcher is None else start_listening(watcher)
        try:
            response = checked(self.model, await pending_response(self.model, request, handler))
        except ContextLengthError as exc:
            response = await self._request_smaller(request, handler, exc)
        finally:
            if listening is not None:
                stop_listening(listening)
        return self._priced(request, response)

    def _priced(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """``response`` with its usage estimated when a token budget needs one the model did not
        give, and priced (the price is looked up when the cost is first read)."""
        if self.config.limits.max_total_tokens is not None and not response.usage.total_tokens:
            response = replace(response, usage=self._estimate(request, response))
        if self.provider in PRICED_PROVIDERS:
            usage = response.usage
            with_price = priced(usage, self.provider, response.model or self.model.name)
            if with_price is not usage:
                response = with_usage(response, with_price)
        return response

    def _estimate(self, request: ModelRequest, response: ModelResponse) -> Usage:
        """The usage of a response whose model reported none, by the context counter's estimate
        (so a token budget still holds); marked ``estimated``."""
        from ..context.tokens import counter_for

        policy_counter = getattr(self.config.context, "counter_for", None)
        counter = policy_counter(self.model) if policy_counter is not None else counter_for(self.model.name)
        sent = sum(counter.count(message) for message in request.messages)
        calls = (f"{c.name} {_arguments_text(c.arguments)}" for c in response.tool_calls)
        said = counter.count(AssistantMessage("\n".join([response.text, *calls])))
        return replace(response.usage, input_tokens=sent, output_tokens=said, estimated=True)

    async def _request_smaller(
        self, request: ModelRequest, handler: Any, overflow: ContextLengthError
    ) -> ModelResponse:
        smaller = await self.shaper.smaller(self.record.transcript, request.messages)
        if smaller is None:
            raise overflow
        if self.watch is not None:
            self.watch.retrying(self.iteration, f"context too long ({overflow}); sending {len(smaller)} messages")
        self.forget_partial()
        self._announce_rewrite(request.messages, smaller)
        request = self._request = replace(request, messages=smaller)
        try:
            return checked(self.model, await pending_response(self.model, request, handler))
        except ContextLengthError as again:
            raise again from overflow

    def _announce_rewrite(self, before: Sequence[Message], after: Sequence[Message]) -> None:
        """The context policy rewrote the history: the cache will miss; say so before the request."""
        transcript = self.record.transcript
        added = self.shaper.system and not (transcript and isinstance(transcript[0], SystemMessage))
        whole = len(transcript) + (1 if added else 0)
        if self.cache_watch is None:
            self.cache_watch = CacheWatch(self.config.settings)
        event = self.cache_watch.announce(self.iteration, before, after, whole)
        if event is not None and self.record.events is not None:
            self.record.emit(event)

    def _model_event(self, event: ModelEvent) -> None:
        if isinstance(event, TextDelta):
            self.hear(event.text)
        channel = self.record.events
        if channel is not None:
            channel.append(event)  # EventChannel.put, inline: one call per chunk
            if channel.waiter is not None:
                channel.wake()

    async def _review(self, response: ModelResponse) -> ModelResponse:
        """Let ``on_model_response`` stop the run or replace the response."""
        control = await call_hook(self.config.hooks.on_model_response, self.step_context())
        if control.action == "override":
            if control.response is None:
                raise TypeError(
                    "on_model_response returned LoopControl.override() without a response; "
                    "pass the replacement: LoopControl.override(ModelResponse(...)) or override('answer text')"
                )
            response = self._response = control.response
        elif control.action == "stop":
            self._stop(control.reason, control.text)
        return response

    async def _take_response(self, response: ModelResponse) -> None:
        """The rest of a turn: a response cut off while writing a tool call asked again, the hook's
        review, then its answer taken, or its tool calls checked and run."""
        if cut_off(response):
            response = await self._retry_cut(response)
            uncut = False
        else:
            uncut = True
        if self.config.hooks.on_model_response is not None:  # no snapshot to build when nobody looks
            reviewed = await self._review(response)
            uncut = uncut and reviewed is response
            response = reviewed
        empty_again = self.guards.empty(response)
        if not response.tool_calls:
            reason = await self._answers().take(response, may_retry=self.stop_reason is None)
            if reason is None and empty_again:
                reason = StopReason.EMPTY_RESPONSE
            if reason is StopReason.END_TURN and self.stop_reason is None and not steering.close_if_empty(self):
                return  # a message sent while the model answered: it starts the next turn
            if reason is not None:
                self._stop(reason)
            return
        # Deterministic, and unique within the transcript: replays and stores see the same ids.
        batch_id = f"{response.tool_calls[0].id}@{len(self.record.transcript)}"
        slots = slots_from_response(response, batch_id, len(self.record.transcript), self)
        if self.loader is not None and self.loader.active and self.loader.config.mode != "off":
            self._refuse_unloaded(slots)
        flagged = response.stop_reason in (StopReason.MAX_TOKENS, StopReason.REFUSAL) or (
            not uncut and cut_off(response)
        )
        limits = self.config.limits
        spent = limits.max_total_tokens is not None and budget_spent(limits, self.record.spent)
        if self.stop_reason is not None or flagged or spent:
            await self._refuse_batch(slots, response)
            return
        repeated = self.guards.repeated(slots)
        if repeated is not None:
            self._stop(StopReason.REPEATED_CALL)
            await self._refuse_batch(slots, response, repeated)
            return
        if self.guards.errors_repeated(await self._settle(slots)):
            self._stop(StopReason.REPEATED_ERROR)

    def _searched_tools(self) -> tuple[tuple[ToolDefinition, ...], bool]:
        """Tool search, once there are more than the threshold: every tool deferred and the
        provider's search (a model that has one), else the local search tool and the loaded
        tools. The tools, and whether the provider's search is used."""
        from ..tools.search import SEARCH_TOOL, ToolLoader

        search = self.config.tool_search
        assert search is not None
        if self.loader is None:
            self.loader = ToolLoader(search, self.tools, self.record.transcript)
        runnable = self.runnable
        assert isinstance(runnable, dict)  # with tool search, the run's own (see __init__)
        runnable.clear()
        runnable.update(self.tools)
        if not self.loader.active or search.mode == "off":
            return self._tool_defs, False
        if search.mode == "native" and getattr(self.model, "native_tool_search", False) is True:
            return self.loader.deferred(), True
        offered = self.loader.offered()
        runnable[SEARCH_TOOL] = offered[SEARCH_TOOL]
        return tuple(t.definition for t in offered.values()), False

    def _refuse_unloaded(self, slots: list[Slot]) -> None:
        """A call to a tool that exists but is not loaded: loaded now, and the model told to call again."""
        from ..tools.search import SEARCH_TOOL

        loader = self.loader
        assert loader is not None
        for slot in slots:
            name = slot.tool_name
            if name == SEARCH_TOOL or name in loader.loaded or name not in self.tools:
                continue
            loader.load(name)
            error = ToolError(
                f"tool {name!r} was not loaded yet, so this call did not run; it is loaded now: "
                "call it again with the parameters its definition asks for"
            )
            slot.finish(ToolCallStatus.ERROR, error=error)

    async def _final_answer(self) -> None:
        """After a limit stopped the run: one more request without tools, for an answer."""
        if self._final_done:
            return
        self._final_done = True
        response = await self._request_model("none")
        if response.tool_calls:
            batch_id = f"final-{self.iteration}"
            slots = slots_from_response(response, batch_id, len(self.record.transcript), self)
            await self._refuse_batch(slots, response)
            return
        await self._answers().take_final(response)

    # ------------------------------------------------------------------ tool batches

    def request_stop(self, reason: StopReason, text: str | None = None) -> None:
        """A tool hook asked the run to stop (the batch finishes first), with its explanation."""
        self._stop_asked = reason
        self._stop_asked_text = text

    def stop_requested(self) -> StopReason | None:
        """The stop a tool hook asked for, if any."""
        return self._stop_asked

    def nest(self, pending: ApprovalsPending) -> None:
        """A call of the batch being settled whose subagent waits for decisions (see :meth:`_settle`)."""
        if self._nested is None:
            self._nested = [pending]
        else:
            self._nested.append(pending)

    async def _resume_batch(self, start: int, calls: list[ToolCallMessage]) -> None:
        # Only an explicit continuation (no new prompt) runs interrupted calls again.
        rerun = self.config.rerun_interrupted and self._prompt is None
        slots = slots_from_messages(calls, self, rerun=rerun)
        check_decisions(slots, self.decisions, self.auto_execute)  # before the batch leaves the transcript
        self.record.transcript = self.record.transcript[:start]
        self.start = min(self.start, start)
        deny = self.denying_undecided = self._prompt is not None or self.denying_undecided
        try:
            await self._settle(slots, deny_undecided=deny)
        finally:
            self.denying_undecided = False

    async def _settle(self, slots: list[Slot], *, deny_undecided: bool = False) -> list[ToolCallMessage]:
        """Decide approvals, run what may run, and record the batch (also when interrupted); the
        outcomes recorded."""
        record = self.record
        self._batch = slots
        self._nested = None
        try:
            waiting = await decide(slots, self, deny_undecided=deny_undecided)
            if record.journal is not None and any(s.outcome is None for s in slots):
                # the whole batch, in the model's order: a call decided already (pending approval,
                # denied) keeps its place in the journal instead of being appended after the others
                await record.record_started(s.template if s.outcome is None else s.outcome for s in slots)
            await run_batch(slots, self, self.iteration)
        except BaseException:
            # interrupted while deciding or running: the calls are kept, marked as not run
            cancel_unfinished(slots, "the run stopped before this call ran")
            await close_all(slots, self, quiet=True)
            raise
        finally:
            outcomes = [s.outcome for s in slots if s.outcome is not None]
            record.append(outcomes)
            self._batch = ()
        await record.flush()
        if self._stop_asked is not None:  # a tool hook stopped the run (also in a resumed batch)
            self._stop(self._stop_asked, self._stop_asked_text)
        nested_calls: Sequence[ApprovalsPending] = self._nested or ()  # calls of subagents this batch ran
        for nested in nested_calls:
            if nested.mismatch is not None:
                raise nested.mismatch
            waiting += nested.requests
        if waiting:
            self.pending = tuple(waiting)
            self._stop(StopReason.APPROVAL_REQUIRED)
        return outcomes

    async def _refuse_batch(self, slots: list[Slot], response: ModelResponse, why: str | None = None) -> None:
        """Record calls that must not run (cut off by the output limit, or the run is stopping)."""
        error, reason = not_run(self.stop_reason, response, why)
        cut = reason is StopReason.MAX_TOKENS
        for slot in slots:
            # arguments cut off by the output limit are that, not "invalid JSON"
            if slot.outcome is None or (cut and slot.outcome.raw_arguments is not None):
                slot.finish(ToolCallStatus.CANCELLED, error=error)
        self._batch = slots
        try:
            await close_all(slots, self)
        finally:
            self._batch = ()
        await self.record.add(*[s.outcome for s in slots if s.outcome is not None])
        self._stop(reason)
        if reason is StopReason.TOKEN_BUDGET and self.config.limits.final_answer_on_limit:
            await self._final_answer()


_NOTHING_TO_CONTINUE = (
    "prompt is None and session {session!r} holds no conversation to continue; pass the user's message"
)


def _check_source_names(config: RunConfig, listed: Sequence[Sequence[Tool]]) -> None:
    """A name in ``allowed_tools`` / ``denied_tools`` that no tool has is a mistake (a typo in a
    denial would leave the tool offered): say which, with the tools there are."""
    offered = {tool.name for tools in listed for tool in tools}
    for parameter, names in config.unresolved.items():
        unknown = sorted(names - offered)
        if unknown:
            sources = ", ".join(source.name for source in config.sources)
            known = ", ".join(sorted(offered | set(config.tools))) or "none"
            shown = "denied_tools (exclude_tools in tooloop.toml)" if parameter == "denied_tools" else parameter
            raise ConfigurationError(
                f"{shown} names {', '.join(map(repr, unknown))}, which is no tool of this agent nor of its "
                f"tool sources ({sources}); its tools: {known}. Check the spelling"
            )


async def _left(scope: asyncio.Timeout | None, exc: BaseException) -> BaseException:
    """``exc`` escaped a step: the deadline's ``scope`` (if any) is left as ``async with`` leaves
    it. What goes on: ``exc``, or the ``TimeoutError`` the scope made of its cancellation."""
    if scope is None:
        return exc
    try:
        await scope.__aexit__(type(exc), exc, exc.__traceback__)
    except BaseException as converted:
        return converted
    return exc


def _arguments_text(arguments: Mapping[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)


def _as_call(slot: Slot) -> ToolCall:
    return ToolCall(slot.tool_call_id, slot.tool_name, slot.arguments)


def _opens_turn(message: Message, turn_id: str) -> bool:
    return isinstance(message, UserMessage) and message.turn_id == turn_id
