"""``Tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, overload

from .._checks import describe, require, require_count, require_seconds, require_text
from ..errors import ArgumentTypeError, ArgumentValueError, ConfigurationError
from ..messages import thaw
from ..models.base import ToolDefinition
from .threads import Limiter, start_in_thread

if TYPE_CHECKING:
    from pydantic import BaseModel
    from typing_extensions import TypeVar

    from ..loop.cancel import CancelToken
    from .schema import Arguments

    DepsT = TypeVar("DepsT", default=Any)
else:
    from typing import TypeVar

    DepsT = TypeVar("DepsT")

__all__ = ["DepsT", "Tool", "ToolContext", "as_tool", "check_tool_name", "tool"]

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def check_tool_name(name: object) -> None:
    """Raise :class:`ArgumentValueError` unless every provider accepts ``name`` as a tool name:
    1 to 64 letters, digits, ``_`` or ``-`` (the rule OpenAI, Anthropic and Gemini share)."""
    require(name, str, "tool name", "pass name= as a string")
    assert isinstance(name, str)
    if not _NAME.fullmatch(name):
        raise ArgumentValueError(
            f"tool name {name[:80]!r} ({len(name)} characters) is not accepted by model providers: use 1 to 64 "
            "letters, digits, "
            "'_' or '-' (pass name= to tool() to choose another)"
        )


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """What a tool may learn about the call it serves; declare a parameter of this type to get it.

    ``deps`` is what the caller passed as ``run(..., deps=...)`` (the application's database
    handle, its HTTP client, the user...); annotate ``ToolContext[MyDeps]`` to have it typed.
    It is never stored with the session.

    ``idempotency_key`` identifies one tool call so a tool can make its side effects happen
    exactly once. In a stored session it is ``"<session>:<call id>"``, stable across retries and
    process restarts (a resumed call gets the same key); without a session it is unique to the
    run (``"run-<run id>:<call id>"``), since providers reuse call ids across conversations.
    """

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    session_id: str | None = None
    iteration: int = 0
    cancel_token: CancelToken | None = None
    run_id: str = ""
    on_progress: Callable[[float, float | None, str | None], None] | None = field(
        default=None, repr=False, compare=False
    )
    deps: DepsT = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    """The run's dependencies (``run(..., deps=...)``); None when none were given."""
    parent: Any = field(default=None, repr=False, compare=False)
    """The run this call belongs to, for tools that run a subagent (``Agent.as_tool``); None outside a run."""

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the stream how far the call got (a ``ToolCallProgress`` event) and, in a stored
        session, the session's viewers (``tooloop web``); cheap, never blocks."""
        if self.on_progress is not None:
            self.on_progress(progress, total, message)

    @property
    def idempotency_key(self) -> str:
        """``"<session>:<call id>"``, or ``"run-<run id>:<call id>"`` outside a stored session."""
        scope = self.session_id if self.session_id is not None else f"run-{self.run_id}"
        return f"{scope}:{self.tool_call_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A function the model can call.

    Build one with :func:`tool`, or directly with a hand-written JSON schema (``parameters``), in
    which case arguments reach ``function`` as keyword arguments without validation.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any]
    requires_approval: bool = False
    """Run only after an approver (or a stored decision) allows it."""
    sequential: bool = False
    """Not safe to run alongside other calls: runs alone, after the calls before it finish."""
    timeout: float | None = None
    """Seconds one call may take; ``None`` uses ``Limits.tool_timeout``."""
    max_concurrency: int | None = None
    """At most this many calls of this tool run at once, across all runs in the process."""
    strict: bool | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form facts about the tool for front ends, never sent to the model. The ACP server
    reads ``title`` (shown to the user) and ``kind`` (an ACP tool kind such as ``"read"``)."""
    args_model: type[BaseModel] | None = field(default=None, repr=False)
    """A pydantic model the arguments must match (None: any JSON object, unless ``arguments`` is given)."""
    context_param: str | None = field(default=None, repr=False)
    arguments: Arguments | None = field(default=None, repr=False)
    """How the arguments are validated (what :func:`tool` makes; from ``args_model`` when None)."""
    _limiter: Limiter | None = field(init=False, default=None, repr=False, compare=False)
    _is_async: bool = field(init=False, default=False, repr=False, compare=False)
    _definition: ToolDefinition | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        where = f"tool {self.name!r}"
        require_text(self.description, f"description of {where}")
        if not callable(self.function):
            raise ArgumentTypeError(f"function of {where} got {describe(self.function)}; pass a function")
        require_seconds(self.timeout, f"timeout of {where}")
        require_count(self.max_concurrency, f"max_concurrency of {where}", 1, optional=True)
        for flag in ("requires_approval", "sequential"):
            require(getattr(self, flag), bool, f"{flag} of {where}", "pass True or False")
        if self.max_concurrency is not None:
            object.__setattr__(self, "_limiter", Limiter(self.max_concurrency))
        if self.arguments is None and self.args_model is not None:
            from .schema import Arguments

            object.__setattr__(self, "arguments", Arguments.of_model(self.args_model))
        object.__setattr__(self, "_is_async", inspect.iscoroutinefunction(self.function))
        # One object per tool: adapters recognise the tools of the previous request by identity.
        definition = ToolDefinition(self.name, self.description, self.parameters, self.strict)
        object.__setattr__(self, "_definition", definition)

    @property
    def definition(self) -> ToolDefinition:
        """What a provider is told about this tool."""
        assert self._definition is not None
        return self._definition

    @property
    def is_async(self) -> bool:
        """True when the function is a coroutine function (runs on the event loop, not a thread)."""
        return self._is_async

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments for the function; raises :class:`ToolArgumentsError`.

        They are a deep copy: the function may change them without touching the recorded call.
        """
        if self.arguments is None:
            copied = thaw(arguments)
            return copied if isinstance(copied, dict) else dict(copied)
        return self.arguments.validate(self.name, arguments)

    def limiter(self) -> Limiter | None:
        """This tool's concurrency cap, shared by every run, thread and event loop of the process."""
        return self._limiter

    async def call(self, kwargs: dict[str, Any], context: ToolContext | None) -> Any:
        """Run the function with validated ``kwargs`` (sync functions in a worker thread).

        ``context`` may be None when the function takes none (``context_param`` is None).
        """
        if not self._is_async:
            return await finish_sync(self.in_thread(kwargs, context))
        return await self.start(kwargs, context)

    def start(self, kwargs: dict[str, Any], context: ToolContext | None) -> Awaitable[Any]:
        """Call an async function with validated ``kwargs``: what :meth:`call` awaits, not awaited yet."""
        if self.context_param is not None:
            kwargs[self.context_param] = context
        started: Awaitable[Any] = self.function(**kwargs)
        return started

    def in_thread(self, kwargs: dict[str, Any], context: ToolContext | None) -> Future[Any]:
        """Start a sync function in a daemon worker thread; the future is done when the thread is."""
        if self.context_param is not None:
            kwargs[self.context_param] = context
        return start_in_thread(functools.partial(contextvars.copy_context().run, self.function, **kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not a tool."""
        return self.function(*args, **kwargs)


async def finish_sync(thread: Future[Any]) -> Any:
    """The result of a sync call started by :meth:`Tool.in_thread` (an awaitable it returned is awaited)."""
    result = await asyncio.wrap_future(thread)
    if inspect.isawaitable(result):
        result = await result
    return result


def _check_callable_shape(fn: Callable[..., Any], name: str) -> None:
    """Refuse functions whose calls could never work as a tool."""
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise ArgumentTypeError(
            f"tool {name!r} is a generator function; a tool call has one result: return a value "
            "(e.g. collect the items into a list) instead of yielding"
        )
    parameters = list(inspect.signature(fn).parameters.values())
    for param in parameters:
        if param.kind is param.POSITIONAL_ONLY:
            raise ArgumentTypeError(
                f"parameter {param.name!r} of tool {name!r} is positional-only; tools are called with keyword "
                "arguments: remove the '/' from its signature"
            )
    if parameters and parameters[0].name in ("self", "cls") and not inspect.ismethod(fn):
        raise ArgumentTypeError(
            f"tool {name!r} takes {parameters[0].name!r}: @tool on a method would ask the model for it. Make the "
            f"tool from the bound method instead, e.g. tools=[tool(instance.{name})]"
        )


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    sequential: bool = False,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    strict: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Tool:
    from .schema import function_schema

    if not callable(fn):
        raise ArgumentTypeError(f"a tool must be a function or a Tool, got {describe(fn)}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise ConfigurationError("this callable has no usable name: pass name= to tool()")
    check_tool_name(tool_name)
    target = fn.func if isinstance(fn, functools.partial) else fn
    _check_callable_shape(target, tool_name)
    schema = function_schema(target, ToolContext, name=tool_name)
    return Tool(
        name=tool_name,
        description=description if description is not None else schema.description,
        parameters=schema.parameters,
        function=fn,
        requires_approval=requires_approval,
        sequential=sequential,
        timeout=timeout,
        max_concurrency=max_concurrency,
        strict=strict,
        metadata=dict(metadata or {}),
        context_param=schema.context_param,
        arguments=schema.arguments,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    sequential: bool = False,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    strict: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    sequential: bool = False,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    strict: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a sync or async function into a :class:`Tool`; usable bare (``@tool``) or with options.

    The name comes from the function, the description from its docstring, and the parameters'
    JSON schema from its type hints (pydantic models, enums, ``Optional``, defaults, ``Annotated``
    descriptions and per-parameter docstring descriptions). Sync functions run in worker threads.
    ``metadata`` is kept on the tool for front ends (never sent to the model).
    """
    options = {
        "name": name,
        "description": description,
        "requires_approval": requires_approval,
        "sequential": sequential,
        "timeout": timeout,
        "max_concurrency": max_concurrency,
        "strict": strict,
        "metadata": metadata,
    }
    if fn is not None:
        return _build(fn, **options)  # type: ignore[arg-type]

    def decorate(function: Callable[..., Any]) -> Tool:
        return _build(function, **options)  # type: ignore[arg-type]

    return decorate


def as_tool(value: Tool | Callable[..., Any] | Callable[..., Awaitable[Any]]) -> Tool:
    """``value`` itself when it is a :class:`Tool`, else a tool built from the plain function."""
    if isinstance(value, Tool):
        return value
    return _build(value)
