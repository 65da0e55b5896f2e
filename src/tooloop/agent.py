"""``Agent``: an immutable configuration with three front doors onto one loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_origin

from ._arguments import check_agent_options, check_model, check_prompt, check_run_arguments, tool_list
from ._checks import describe
from .errors import ArgumentTypeError, ArgumentValueError, ConfigurationError, ToolloopError
from .loop.approval import Approver
from .loop.cancel import CancelToken
from .loop.config import RunConfig
from .loop.control import Hooks
from .loop.frontdoors import Conversation, EventStream
from .loop.limits import Limits
from .loop.observe import Tracer
from .loop.record import Journal
from .loop.result import ApprovalDecision, RunResult
from .loop.run import Run
from .loop.shaping import ContextShaper
from .messages import Message, Prompt, StopReason, Usage, UserMessage
from .models.base import Model, ModelSettings
from .tools.source import ToolSource
from .tools.tool import Tool
from .transport.perloop import close_loop_clients

if TYPE_CHECKING:  # imported on use: a plain run needs no store, context policy, tool search or output schema
    from .loop.output import OutputSpec
    from .loop.summarize import ResultSummarizer
    from .loop.syncstream import SyncEventStream
    from .store.base import Store
    from .store.journal import SessionLease
    from .tools.search import ToolSearch

__all__ = ["Agent"]

Approvals = Sequence[ApprovalDecision] | Mapping[str, ApprovalDecision]


class _Inherit:
    def __repr__(self) -> str:
        return "INHERIT"


INHERIT: Any = _Inherit()
"""``deps=INHERIT`` (the default of :meth:`Agent.as_tool`): the child gets the parent run's ``deps``
(here, not in :mod:`tooloop.subagent`: that module is imported when an agent becomes a tool)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    model: Model | str
    system: str | None = None
    tools: tuple[Tool, ...] = ()
    sources: tuple[ToolSource, ...] = ()
    limits: Limits = field(default_factory=Limits)
    output_type: Any = None
    hooks: Hooks = field(default_factory=Hooks)
    approver: Approver | None = None
    allowed_tools: frozenset[str] | None = None
    denied_tools: frozenset[str] = frozenset()
    settings: ModelSettings = field(default_factory=ModelSettings)
    context: ContextShaper | None = None
    rerun_interrupted: bool = True
    store: Store | str | None = None
    session_id: str | None = None
    tracer: Tracer | None = None
    lease: SessionLease | None = None
    deps_type: Any = None
    name: str | None = None
    auto_execute_tools: bool = True
    summarize_results: ResultSummarizer | Model | str | None = None
    tool_search: ToolSearch | None = None
    output: OutputSpec | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Every value is checked here, so a mistake fails where the agent (or a copy) is built."""
        check_model(self.model)
        check_agent_options(
            system=self.system,
            limits=self.limits,
            hooks=self.hooks,
            approver=self.approver,
            settings=self.settings,
            context=self.context,
            store=self.store,
            session_id=self.session_id,
            rerun_interrupted=self.rerun_interrupted,
        )
        _check_tools(self)
        _check_summarizer(self.summarize_results)
        if not isinstance(self.auto_execute_tools, bool):
            raise ArgumentTypeError(
                f"Agent(auto_execute_tools=...) takes True or False, got {describe(self.auto_execute_tools)}"
            )
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ArgumentTypeError(f"Agent(name=...) takes a non-empty string, got {describe(self.name)}")
        if self.tool_search is not None and not _is_tool_search(self.tool_search):
            raise ArgumentTypeError(
                f"Agent(tool_search=...) got {describe(self.tool_search)}; "
                "pass True, 'native', 'local', ToolSearch(...) or None"
            )
        if self.tracer is not None and not callable(getattr(self.tracer, "start_run", None)):
            raise ArgumentTypeError(
                f"Agent(tracer=...) got {describe(self.tracer)}; pass tooloop.telemetry.OpenTelemetry() or None"
            )
        if self.output_type is not None:
            from .loop.output import OutputSpec

            object.__setattr__(self, "output", OutputSpec.for_type(self.output_type))
        if self.deps_type is not None and not isinstance(self.deps_type, type) and get_origin(self.deps_type) is None:
            raise ArgumentTypeError(
                f"Agent(deps_type=...) takes a type, e.g. deps_type=MyDeps, got {describe(self.deps_type)}"
            )


class Agent:
    """A model, instructions, tools and limits; immutable, so one agent serves many runs at once.

    Three front doors onto one loop:

    * ``await agent.run(prompt)`` returns a :class:`RunResult`;
    * ``agent.conversation(prompt)`` yields each message as it happens;
    * ``agent.stream(prompt)`` yields fine-grained events (text deltas, tool calls, usage).

    ``with_...`` methods return modified copies.
    """

    __slots__ = ("_config", "_options")

    def __init__(
        self,
        model: Model | str,
        *,
        system: str | None = None,
        tools: Iterable[Tool | ToolSource | Callable[..., Any]] = (),
        limits: Limits | None = None,
        output_type: Any = None,
        hooks: Hooks | None = None,
        approve: Approver | None = None,
        allowed_tools: Iterable[str] | str | None = None,
        denied_tools: Iterable[str] | str = (),
        settings: ModelSettings | None = None,
        context: ContextShaper | None = None,
        rerun_interrupted: bool = True,
        store: Store | str | None = None,
        session_id: str | None = None,
        tracer: Tracer | None = None,
        lease: SessionLease | None = None,
        deps_type: Any = None,
        name: str | None = None,
        auto_execute_tools: bool = True,
        summarize_results: ResultSummarizer | Model | str | None = None,
        tool_search: ToolSearch | bool | Literal["native", "local", "off"] | None = None,
    ):
        if lease is not None and not _is_lease(lease):
            raise ArgumentTypeError(f"Agent(lease=...) must be a SessionLease, got {describe(lease)}")
        plain, sources = _split_tools(tools)
        options = _Options(
            model=model,
            system=system,
            tools=plain,
            sources=sources,
            limits=limits if limits is not None else Limits(),
            output_type=output_type,
            hooks=hooks if hooks is not None else Hooks(),
            approver=approve,
            allowed_tools=_names(allowed_tools, "allowed_tools") if allowed_tools is not None else None,
            denied_tools=_names(denied_tools, "denied_tools"),
            settings=settings if settings is not None else ModelSettings(),
            context=context,
            rerun_interrupted=rerun_interrupted,
            store=store,
            session_id=session_id,
            tracer=tracer,
            lease=lease,
            deps_type=deps_type,
            name=name,
            auto_execute_tools=auto_execute_tools,
            summarize_results=summarize_results,
            tool_search=_tool_search(tool_search),
        )
        self._options = options
        self._config: RunConfig | None = None

    @classmethod
    def _from(cls, options: _Options) -> Agent:
        agent = cls.__new__(cls)
        agent._options = options
        agent._config = None
        return agent

    # ------------------------------------------------------------------ copies

    def _copy(self, **changes: Any) -> Agent:
        return Agent._from(replace(self._options, **changes))

    def with_model(self, model: Model | str) -> Agent:
        """A copy using another model (the transcript format is the same for every provider)."""
        return self._copy(model=model)

    def with_system(self, system: str | None) -> Agent:
        """A copy with other instructions."""
        return self._copy(system=system)

    def with_tools(self, *tools: Tool | ToolSource | Callable[..., Any]) -> Agent:
        """A copy with these tools (or tool sources such as MCP servers) added."""
        plain, sources = _split_tools(tools)
        return self._copy(tools=self._options.tools + plain, sources=self._options.sources + sources)

    def with_tool_sources(self, *sources: ToolSource) -> Agent:
        """A copy whose tool sources (MCP servers) are ``sources``, in place of its own."""
        return self._copy(sources=tuple(sources))

    def with_limits(self, limits: Limits | None = None, **changes: Any) -> Agent:
        """A copy with other limits, or with some fields of the current limits changed."""
        base = limits if limits is not None else self._options.limits
        return self._copy(limits=replace(base, **changes) if changes else base)

    def with_output_type(self, output_type: Any) -> Agent:
        """A copy whose final answer is validated against ``output_type``."""
        return self._copy(output_type=output_type)

    def with_hooks(self, hooks: Hooks | None = None, **changes: Any) -> Agent:
        """A copy with other hooks, or some hooks of the current ones replaced."""
        base = hooks if hooks is not None else self._options.hooks
        return self._copy(hooks=replace(base, **changes) if changes else base)

    def with_approver(self, approve: Approver | None) -> Agent:
        """A copy whose approval-requiring calls are decided by ``approve``."""
        return self._copy(approver=approve)

    def with_settings(self, settings: ModelSettings | None = None, **changes: Any) -> Agent:
        """A copy with other model settings (temperature, max_tokens...)."""
        base = settings if settings is not None else self._options.settings
        return self._copy(settings=replace(base, **changes) if changes else base)

    def with_context(self, context: ContextShaper | None) -> Agent:
        """A copy that shapes each request with ``context`` (pruning, summaries)."""
        return self._copy(context=context)

    def with_name(self, name: str | None) -> Agent:
        """A copy with another name (shown in traces, the CLI, editors and subagent paths)."""
        return self._copy(name=name)

    def with_session(self, session_id: str, store: Store | str | None = None) -> Agent:
        """A copy whose runs continue and record the stored session ``session_id``."""
        return self._copy(session_id=session_id, store=store if store is not None else self._options.store)

    def as_tool(self, *, name: str | None = None, description: str, deps: Any = INHERIT) -> Tool:
        """This agent as one tool of another: each call runs a nested run of it and answers with
        its final answer.

        The model calls it with a ``prompt``. The child's transcript is kept (in the parent's
        store as session ``"<parent session>.<call id>"``, else in the call's result), its usage
        counts in the parent's and the parent's ``max_cost`` bounds it, its events reach the
        parent's stream as ``SubagentEvent`` values, its approvals go through the parent (and,
        deferred, survive a restart), and its early stop is that call's error. ``deps``: the
        child's dependencies (default: the parent run's). ``name`` defaults to the agent's name.
        """
        if name is None:
            if self.name is None:
                raise ArgumentValueError("as_tool() needs name=..., or an agent built with Agent(name=...)")
            name = self.name
        from .subagent import subagent_tool

        return subagent_tool(self, name=name, description=description, deps=deps)

    # ------------------------------------------------------------------ introspection

    @property
    def model(self) -> Model:
        """The model, created from its string on first use."""
        return self._resolved().model

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools the model is offered."""
        return tuple(self._resolved().tools.values())

    @property
    def tool_sources(self) -> tuple[ToolSource, ...]:
        """Where more tools come from (MCP servers), listed before every model request."""
        return self._options.sources

    @property
    def name(self) -> str | None:
        """The agent's name (``Agent(name=...)``, or its table in ``tooloop.toml``), if it has one."""
        return self._options.name

    @property
    def deps_type(self) -> Any:
        """The type of the ``deps=`` its runs take (None: any, or none)."""
        return self._options.deps_type

    @property
    def settings(self) -> ModelSettings:
        """The agent's model settings (they override the model's own)."""
        return self._options.settings

    @property
    def limits(self) -> Limits:
        """The run limits."""
        return self._options.limits

    @property
    def system(self) -> str | None:
        """The instructions sent first in every request."""
        return self._resolved().system

    def __repr__(self) -> str:
        """What the agent is made of, without creating its model (a missing key never raises here)."""
        options = self._options
        model = options.model if isinstance(options.model, str) else getattr(options.model, "name", None)
        parts = [f"model={model or type(options.model).__name__!r}"]
        if options.name is not None:
            parts.insert(0, f"name={options.name!r}")
        if options.system:
            system = options.system if len(options.system) <= 40 else options.system[:39] + "…"
            parts.append(f"system={system!r}")
        names = [getattr(t, "name", None) or getattr(t, "__name__", "?") for t in options.tools]
        if names:
            parts.append(f"tools={names!r}")
        if options.sources:
            parts.append(f"tool_sources={len(options.sources)}")
        if options.output_type is not None:
            parts.append(f"output_type={getattr(options.output_type, '__name__', type(options.output_type).__name__)}")
        if options.session_id is not None:
            parts.append(f"session_id={options.session_id!r}")
        return f"Agent({', '.join(parts)})"

    def _resolved(self) -> RunConfig:
        if self._config is None:
            self._config = _resolve(self._options)
        return self._config

    # ------------------------------------------------------------------ tool sources

    async def start(self) -> None:
        """Start every tool source (MCP server) of the agent at once; without this they start on
        first use. If one fails, the others are stopped and the error is raised."""
        results = await asyncio.gather(*(s.start() for s in self._options.sources), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            await self.aclose()
            raise failures[0]

    async def aclose(self) -> None:
        """Stop every tool source of the agent (they start again if the agent is used again)."""
        results = await asyncio.gather(*(s.aclose() for s in self._options.sources), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def __aenter__(self) -> Agent:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ front doors

    def _run(
        self,
        prompt: Prompt | None,
        history: Iterable[Message] | None,
        approvals: Approvals,
        cancel: CancelToken | None,
        approve: Approver | None = None,
        journal: Journal | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        deps: Any = None,
    ) -> Run:
        prompt = check_prompt(prompt)
        history, approvals = check_run_arguments(prompt, history, approvals, cancel, approve, session_id)
        _check_deps(self._options.deps_type, deps)
        if turn_id is not None and (not isinstance(turn_id, str) or not turn_id):
            raise ArgumentValueError(f"turn_id must be a non-empty str (a stable id of this turn), got {turn_id!r}")
        config = self._resolved()
        if isinstance(prompt, tuple):  # content parts: checked against what the model takes
            from .models.inputs import check_prompt_inputs

            check_prompt_inputs(config.model, [UserMessage.of(prompt)])
        if approve is not None:
            config = replace(config, approver=approve)
        session = None
        session_id = session_id or self._options.session_id
        if session_id is not None:
            if history is not None:
                raise ConfigurationError("history= cannot be combined with a stored session: the store holds it")
            from .context.policy import ContextPolicy
            from .store.journal import SessionBinding, default_store_url

            session = SessionBinding(
                self._options.store or default_store_url(),
                session_id,
                self._options.lease,
                turn_id=turn_id,
                setup=_setup(self._options.name, config),
            )
            if config.context is None:
                config = replace(config, context=ContextPolicy())
        elif self._options.store is not None:
            raise ConfigurationError("an agent with a store needs a session id: session_id= or agent.with_session(id)")
        elif prompt is None and not history:
            raise ArgumentValueError(
                "prompt is None and there is no conversation to continue; pass the user's message, "
                "or history= / session_id= to continue an earlier conversation"
            )
        return Run(
            config,
            history=history or (),
            prompt=prompt,
            approvals=approvals,
            token=cancel,
            journal=journal,
            session_id=session_id,
            session=session,
            turn_id=turn_id,
            deps=deps,
        )

    async def resume(
        self,
        session_id: str | None = None,
        *,
        approvals: Approvals = (),
        approve: Approver | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Continue a stored session from its tail: interrupted calls (re-run, or marked failed with
        ``rerun_interrupted=False``), decided approvals, then the model."""
        return await self.run(
            None, approvals=approvals, approve=approve, cancel=cancel, session_id=session_id, deps=deps
        )

    async def run(
        self,
        prompt: Prompt | None = None,
        *,
        history: Iterable[Message] | None = None,
        approvals: Approvals = (),
        approve: Approver | None = None,
        cancel: CancelToken | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        raise_errors: bool = True,
        deps: Any = None,
    ) -> RunResult:
        """Run the loop to the end and return the result.

        ``prompt`` is the user's message: a string, or a list of strings and content parts in
        order (``["What is in this picture?", ImageContent(data, "image/png")]``); an attachment the
        model cannot take is refused here with :class:`~tooloop.errors.UnsupportedContentError`.
        ``history`` continues an earlier conversation (``result.transcript``). With ``prompt=None``
        the run continues from the history's tail: it runs calls decided in ``approvals`` (a run
        that stopped with ``APPROVAL_REQUIRED``), or interrupted calls, and then asks the model.
        With ``raise_errors=False`` a failure is returned as ``result.error`` instead of raised.

        ``turn_id`` makes the turn idempotent: when the session already holds a prompt with this
        turn id, it is not written again and the turn continues where it stands (or, finished,
        is returned as it is) — so a worker retrying a turn after a crash never asks twice.

        ``deps`` reaches every tool (``ToolContext.deps``) and hook (``StepContext.deps``) of the
        run; it is never stored. An agent built with ``deps_type=T`` requires a ``T``.
        """
        run = self._run(prompt, history, approvals, cancel, approve, session_id=session_id, turn_id=turn_id, deps=deps)
        try:
            await run.finish()
        except ToolloopError as exc:
            if raise_errors:
                raise
            return RunResult(
                transcript=exc.transcript if exc.transcript is not None else run.transcript,
                stop_reason=StopReason.ERROR,
                usage=exc.usage or run.usage,
                error=exc,
                start=run.start,
            )
        return run.result()

    def run_sync(self, prompt: Prompt | None = None, **kwargs: Any) -> RunResult:
        """:meth:`run` for code that does not await: a script, or a notebook cell.

        Where the thread already runs an event loop (Jupyter), the run gets an event loop of its
        own on a worker thread and this call waits for it (the calling loop waits too, so in async
        code ``await agent.run(...)`` is the better call). Ctrl-C while it waits cancels the run
        (it ends ``cancelled``, its session kept) and then raises ``KeyboardInterrupt``.
        """
        if not _loop_running():
            return asyncio.run(self._run_once(prompt, **kwargs))
        return _on_worker_thread(self, prompt, kwargs)

    async def _run_once(self, prompt: Prompt | None, **kwargs: Any) -> RunResult:
        try:
            return await self.run(prompt, **kwargs)
        finally:
            await close_loop_clients()

    def conversation(
        self,
        prompt: Prompt | None = None,
        *,
        history: Iterable[Message] | None = None,
        approvals: Approvals = (),
        approve: Approver | None = None,
        cancel: CancelToken | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        deps: Any = None,
    ) -> Conversation:
        """An async iterator of each message as it happens; ``.result`` after exhaustion."""
        return Conversation(
            self._run(prompt, history, approvals, cancel, approve, session_id=session_id, turn_id=turn_id, deps=deps)
        )

    def stream(
        self,
        prompt: Prompt | None = None,
        *,
        history: Iterable[Message] | None = None,
        approvals: Approvals = (),
        approve: Approver | None = None,
        cancel: CancelToken | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        deps: Any = None,
    ) -> EventStream:
        """An async iterator of fine-grained events, ending with ``RunFinished``."""
        return EventStream(
            self._run(prompt, history, approvals, cancel, approve, session_id=session_id, turn_id=turn_id, deps=deps)
        )

    def stream_sync(
        self,
        prompt: Prompt | None = None,
        *,
        history: Iterable[Message] | None = None,
        approvals: Approvals = (),
        approve: Approver | None = None,
        cancel: CancelToken | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        deps: Any = None,
    ) -> SyncEventStream:
        """:meth:`stream` for code without an event loop: ``for event in agent.stream_sync(...)``.

        The run goes on in a worker thread with its own event loop, so this works in scripts and
        in notebooks alike; ``.stream_text()`` yields only the answer's text.
        """
        from .loop.syncstream import SyncEventStream

        return SyncEventStream(
            self._run(prompt, history, approvals, cancel, approve, session_id=session_id, turn_id=turn_id, deps=deps)
        )

    async def run_turns(self, prompts: Iterable[str], *, history: Iterable[Message] | None = None) -> RunResult:
        """Run follow-up prompts in sequence, each continuing the last (seed 002's ``runMultiTurn``).

        Stops early when a turn does not end normally (approval needed, cancelled, a limit).
        The result's ``usage`` is summed over all turns and ``new_messages`` spans them all.
        """
        result: RunResult | None = None
        usage = Usage()
        start: int | None = None
        transcript = history
        for prompt in prompts:
            result = await self.run(prompt, history=transcript)
            usage = usage + result.usage
            start = result.start if start is None else start
            transcript = result.transcript
            if result.stop_reason is not StopReason.END_TURN:
                break
        if result is None:
            raise ConfigurationError("run_turns() needs at least one prompt")
        return replace(result, usage=usage, start=start or 0)


def _check_deps(deps_type: Any, deps: Any) -> None:
    """``deps`` must be an instance of the agent's ``deps_type`` when it names a class."""
    if deps_type is None or not isinstance(deps_type, type):
        return
    if deps is None:
        raise ArgumentValueError(
            f"this agent declares deps_type={deps_type.__name__}: pass run(..., deps=...) with one"
        )
    if not isinstance(deps, deps_type):
        raise ArgumentTypeError(f"deps must be a {deps_type.__name__} (the agent's deps_type), got {describe(deps)}")


def _on_worker_thread(agent: Agent, prompt: Prompt | None, kwargs: dict[str, Any]) -> RunResult:
    """``agent.run_sync`` inside a running event loop: the run on a thread with its own loop."""
    import concurrent.futures

    token = kwargs.get("cancel")
    if token is None:
        token = kwargs["cancel"] = CancelToken()
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tooloop-run-sync")
    try:
        future = pool.submit(asyncio.run, agent._run_once(prompt, **kwargs))
        try:
            return future.result()
        except KeyboardInterrupt:
            token.cancel("interrupted (Ctrl-C) while run_sync() waited")
            future.result()  # the run ends cancelled, its last records written
            raise
    finally:
        pool.shutdown(wait=True)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _split_tools(values: Any) -> tuple[tuple[Tool, ...], tuple[ToolSource, ...]]:
    """The plain tools and the tool sources (MCP servers) of ``tools=[...]``."""
    if not isinstance(values, Iterable) or isinstance(values, str | bytes | Mapping | Tool | ToolSource):
        return tool_list(values), ()  # not a list: tool_list says what to pass
    items = list(values)
    sources = tuple(v for v in items if _is_source(v))
    return tool_list([v for v in items if not _is_source(v)]), sources


def _is_source(value: Any) -> bool:
    return isinstance(value, ToolSource) and not isinstance(value, Tool)


def _setup(name: str | None, config: RunConfig) -> dict[str, Any]:
    """What a stored session keeps of the agent that runs it: name, model, system prompt, settings."""
    from ._json import to_jsonable

    settings = {k: v for k, v in to_jsonable(config.settings).items() if v not in (None, {}, [])}
    return {"name": name, "model": getattr(config.model, "name", None), "system": config.system, "settings": settings}


def _check_summarizer(summarizer: Any) -> None:
    if summarizer is None or isinstance(summarizer, Model):
        return
    if isinstance(summarizer, str):
        check_model(summarizer)
    elif not callable(summarizer):
        raise ArgumentTypeError(
            f"Agent(summarize_results=...) got {describe(summarizer)}; pass a function (call, text, limit) -> "
            "summary, a model or a model string"
        )


def _summarizer(summarizer: ResultSummarizer | Model | str | None) -> ResultSummarizer | Model | None:
    """The summariser, a model string made a model."""
    if not isinstance(summarizer, str):
        return summarizer
    from .models.registry import get_model

    return get_model(summarizer)


def _names(value: Iterable[str] | str, parameter: str) -> frozenset[str]:
    """Tool names given to ``parameter``: a string is one name, not a list of letters."""
    if isinstance(value, str):
        return frozenset((value,))
    try:
        names = frozenset(value)
    except TypeError:
        raise ConfigurationError(f"{parameter} takes a tool name or a list of tool names, got {value!r}") from None
    wrong = sorted(repr(n) for n in names if not isinstance(n, str))
    if wrong:
        raise ConfigurationError(f"{parameter} takes tool names (strings), got {', '.join(wrong)}")
    return names


def _check_tools(options: _Options) -> None:
    seen: set[str] = set()
    for tool in options.tools:
        if tool.name in seen:
            raise ConfigurationError(f"two tools are named {tool.name!r}; tool names must be unique")
        seen.add(tool.name)
    if options.sources:
        return  # names may belong to tool sources (MCP servers), known only once they are listed
    for parameter, names in (("allowed_tools", options.allowed_tools), ("denied_tools", options.denied_tools)):
        unknown = sorted(names - seen) if names else []
        if unknown:
            available = ", ".join(sorted(seen)) or "none"
            raise ConfigurationError(
                f"{parameter} names {', '.join(map(repr, unknown))}, which is not a tool of this agent "
                f"(its tools: {available}); check the spelling"
            )


def _tool_search(value: object) -> Any:
    """``Agent(tool_search=...)``: True is ``ToolSearch()``, a mode name ``ToolSearch(mode=...)``."""
    if value is not True and value not in ("native", "local", "off"):
        return value or None
    from .tools.search import ToolSearch

    if value is True:
        return ToolSearch()
    return ToolSearch(mode=value)


def _is_tool_search(value: object) -> bool:
    from .tools.search import ToolSearch

    return isinstance(value, ToolSearch)


def _is_lease(value: object) -> bool:
    from .store.journal import SessionLease

    return isinstance(value, SessionLease)


def _resolve(options: _Options) -> RunConfig:
    model = options.model
    system = options.system
    settings = options.settings
    if isinstance(model, str):
        from .models.registry import get_model, model_config

        if model.startswith("@"):
            config = model_config(model[1:])
            system = system if system is not None else config.system
            settings = config.settings.merged(settings)
            model = config.create()
        else:
            model = get_model(model)
    allowed = options.allowed_tools
    tools = {
        t.name: t
        for t in options.tools
        if t.name not in options.denied_tools and (allowed is None or t.name in allowed)
    }
    denied = frozenset(t.name for t in options.tools if t.name not in tools) | options.denied_tools
    own = frozenset(t.name for t in options.tools)
    unresolved = {
        parameter: names - own
        for parameter, names in (("allowed_tools", allowed or frozenset()), ("denied_tools", options.denied_tools))
        if options.sources and names - own
    }
    return RunConfig(
        model=model,
        system=system,
        tools=tools,
        sources=options.sources,
        allowed=allowed,
        denied=denied,
        unresolved=unresolved,
        limits=options.limits,
        settings=settings,
        output=options.output,
        hooks=options.hooks,
        approver=options.approver,
        context=options.context,
        rerun_interrupted=options.rerun_interrupted,
        tracer=options.tracer,
        name=options.name,
        auto_execute_tools=options.auto_execute_tools,
        summarize_results=_summarizer(options.summarize_results),
        tool_search=options.tool_search,
    )
