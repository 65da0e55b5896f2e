"""Hooks and ``LoopControl``: code that watches each step and may stop or steer the run."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeAlias

from ..messages import ModelResponse, StopReason, ToolCall, ToolCallMessage
from ..models.base import Model, ModelRequest
from ..models.payloads import PayloadListener
from ..tools.tool import DepsT, Tool
from ..transcript import Transcript

__all__ = ["Hook", "Hooks", "LoopControl", "StepContext"]


@dataclass(frozen=True, slots=True)
class LoopControl:
    """What a hook asks the loop to do. Returning ``None`` from a hook means continue.

    * ``LoopControl.CONTINUE``: go on as usual.
    * ``LoopControl.stop(reason)``: end the run now with that stop reason. Tool calls that have
      not run get a cancelled result, so the transcript stays valid; from a tool hook, the calls
      of the same batch already running finish, and those not started yet do not start.
      ``LoopControl.stop("the daily budget is spent")`` (any text that is not a stop reason, or
      ``text=``) stops with ``STOPPED_BY_HOOK`` and that explanation in ``RunResult.stop_text``.
    * ``LoopControl.override(...)``: in ``on_model_response``, replace the model's response
      (a :class:`ModelResponse` or a plain answer text; ``override()`` without one is a
      ``TypeError``, raised as the cause of the run's :class:`~tooloop.errors.RunError`); in
      ``before_tool_call``, skip the tool and use ``result`` as its result; in
      ``after_tool_call``, replace the result.
    """

    action: Literal["continue", "stop", "override"] = "continue"
    reason: StopReason = StopReason.STOPPED_BY_HOOK
    response: ModelResponse | None = None
    result: Any = None
    text: str | None = None
    """The hook's own explanation of a stop, carried to ``RunResult.stop_text``."""

    CONTINUE: ClassVar[LoopControl]

    @classmethod
    def stop(cls, reason: StopReason | str = StopReason.STOPPED_BY_HOOK, *, text: str | None = None) -> LoopControl:
        """End the run with ``reason``; a text that is not a stop reason is the explanation of a
        ``STOPPED_BY_HOOK`` stop."""
        if isinstance(reason, str) and reason not in _REASONS:
            if text is not None:
                raise ValueError(f"{reason!r} is not a stop reason; give the explanation once, as text=")
            reason, text = StopReason.STOPPED_BY_HOOK, reason
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return cls("stop", StopReason(reason), text=text)

    @classmethod
    def override(cls, response: ModelResponse | str | None = None, *, result: Any = None) -> LoopControl:
        """Replace the model's response, or a tool call's result."""
        if isinstance(response, str):
            response = ModelResponse(text=response)
        return cls("override", response=response, result=result)


LoopControl.CONTINUE = LoopControl()
_REASONS = frozenset(reason.value for reason in StopReason)


@dataclass(frozen=True, slots=True)
class StepContext(Generic[DepsT]):
    """A snapshot of the run given to hooks.

    ``call`` and ``result`` are set for tool hooks: the call about to run (``before_tool_call``)
    and its finished message (``after_tool_call``). ``deps`` is the run's ``deps=`` (annotate
    ``StepContext[MyDeps]`` to have it typed; never stored). ``model`` is the model the run talks
    to and ``tools`` the tools offered to it now, by name (an MCP server's included).
    """

    iteration: int
    request: ModelRequest | None
    response: ModelResponse | None
    tool_results: Sequence[ToolCallMessage]
    transcript: Transcript
    call: ToolCall | None = None
    result: ToolCallMessage | None = None
    deps: DepsT = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    model: Model | None = field(default=None, repr=False, compare=False)
    tools: Mapping[str, Tool] = field(default_factory=dict, repr=False, compare=False)


Hook: TypeAlias = Callable[[StepContext], "LoopControl | Awaitable[LoopControl | None] | None"]
"""A sync or async function of a :class:`StepContext` returning a :class:`LoopControl` or None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """Functions called at each step of the loop (seed 004's hooks)."""

    on_model_response: Hook | None = None
    """After each model response, before its tool calls run."""
    before_tool_call: Hook | None = None
    """Before each tool call runs (after approval)."""
    after_tool_call: Hook | None = None
    """After each tool call has its outcome."""
    on_provider_payload: PayloadListener | None = None
    """Receives the exact JSON each request sends to the provider and the JSON it gets back (a
    :class:`~tooloop.models.payloads.ProviderPayload`, credentials redacted). Only watches: its
    return value is ignored. Models that are not provider adapters (the test models) send none."""


async def call_hook(hook: Hook | None, context: StepContext) -> LoopControl:
    """Run ``hook`` (sync or async) and normalise its answer."""
    if hook is None:
        return LoopControl.CONTINUE
    answer = hook(context)
    if inspect.isawaitable(answer):
        answer = await answer
    if answer is None:
        return LoopControl.CONTINUE
    if not isinstance(answer, LoopControl):
        raise TypeError(f"a hook must return LoopControl or None, got {answer!r}")
    return answer
