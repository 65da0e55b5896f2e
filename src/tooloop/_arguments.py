"""Checks of what is given to an ``Agent`` and to its front doors, made where it is given.

Every check raises :class:`~tooloop.errors.ArgumentTypeError` or
:class:`~tooloop.errors.ArgumentValueError` naming the parameter and the fix, so a mistake shows
up on the line that made it instead of deep inside a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._checks import describe, require, require_text
from .errors import ArgumentTypeError, ArgumentValueError
from .loop.cancel import CancelToken
from .loop.control import Hooks
from .loop.limits import Limits
from .loop.result import ApprovalDecision
from .messages import (
    AssistantMessage,
    AudioContent,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ToolCallMessage,
    UserMessage,
    UserPart,
)
from .models.base import Model, ModelSettings
from .models.registry import check_model_string
from .tools.tool import Tool, as_tool

__all__ = ["check_agent_options", "check_model", "check_prompt", "check_run_arguments", "tool_list"]

Approvals = Sequence[ApprovalDecision] | Mapping[str, ApprovalDecision]

_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolCallMessage)
_PART_TYPES = (TextContent, ImageContent, AudioContent, DocumentContent)
_PROMPT_FIX = (
    "pass the user's message as a string, a list of strings and content parts "
    "(TextContent, ImageContent, AudioContent, DocumentContent), or None to continue the history"
)


def check_model(model: Any) -> None:
    """A model string naming a registered provider, or a :class:`Model`; no SDK is imported."""
    if isinstance(model, str):
        check_model_string(model)
        return
    if not isinstance(model, Model):
        raise ArgumentTypeError(
            f"model got {describe(model)}; pass a model string such as 'openai:gpt-4.1' or an object with "
            "a 'name' and an async 'respond(request, on_event)' method (see tooloop.Model)"
        )


def tool_list(tools: Any) -> tuple[Tool, ...]:
    """The tools of ``tools=[...]``: a list (or other iterable) of tools or functions."""
    if isinstance(tools, str | bytes | Mapping | Tool) or callable(tools) or not isinstance(tools, Iterable):
        raise ArgumentTypeError(f"tools got {describe(tools)}; pass a list of tools or functions, e.g. tools=[add]")
    return tuple(as_tool(t) for t in tools)


def check_agent_options(
    *,
    system: Any,
    limits: Any,
    hooks: Any,
    approver: Any,
    settings: Any,
    context: Any,
    store: Any,
    session_id: Any,
    rerun_interrupted: Any,
) -> None:
    """The agent's settings other than the model, the tools and the output type."""
    require_text(system, "system", optional=True)
    require(limits, Limits, "limits", "pass Limits(...), e.g. limits=Limits(max_turns=10)")
    require(hooks, Hooks, "hooks", "pass Hooks(...), e.g. hooks=Hooks(before_tool_call=check)")
    _callable_or_none(approver, "approve", "pass a function taking an ApprovalRequest and returning True/False")
    require(settings, ModelSettings, "settings", "pass ModelSettings(...), e.g. settings=ModelSettings(temperature=0)")
    if context is not None and not callable(getattr(context, "prepare", None)):
        raise ArgumentTypeError(
            f"context got {describe(context)}; pass a context policy such as tooloop.ContextPolicy(), "
            "or any object with an async prepare(messages, *, model, overflow) method"
        )
    if store is not None and not isinstance(store, str) and not _is_store(store):
        raise ArgumentTypeError(f"store got {describe(store)}; pass a store URL such as 'sqlite:///chat.db' or a Store")
    if isinstance(store, str):
        from .store import check_store_url

        check_store_url(store)
    check_session_id(session_id)
    require(rerun_interrupted, bool, "rerun_interrupted", "pass True or False")


def check_session_id(session_id: Any) -> None:
    """None, or a non-empty string."""
    if session_id is None:
        return
    require(session_id, str, "session_id", "pass the session's id as a string")
    if not session_id.strip():
        raise ArgumentValueError("session_id is an empty string; pass a non-empty id, or None for no stored session")


def check_run_arguments(
    prompt: Any,
    history: Any,
    approvals: Any,
    cancel: Any,
    approve: Any,
    session_id: Any,
) -> tuple[tuple[Message, ...] | None, Approvals]:
    """The arguments of ``run()``, ``conversation()`` and ``stream()``; returns the history and the
    approvals, read once (either may be a one-shot iterator)."""
    if cancel is not None:
        require(cancel, CancelToken, "cancel", "pass a tooloop.CancelToken() and call token.cancel() to stop the run")
    _callable_or_none(approve, "approve", "pass a function taking an ApprovalRequest and returning True/False")
    check_session_id(session_id)
    return (None if history is None else _history(history)), _approvals(approvals)


def check_prompt(prompt: Any) -> str | tuple[UserPart, ...] | None:
    """A run's prompt: None, a non-empty string, or its content parts (strings become text parts)."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ArgumentValueError("prompt is an empty string; pass the user's message, or None to continue")
        return prompt
    if isinstance(prompt, _PART_TYPES):
        prompt = [prompt]
    if isinstance(prompt, bytes | Mapping) or not isinstance(prompt, Iterable):
        raise ArgumentTypeError(f"prompt got {describe(prompt)}; {_PROMPT_FIX}")
    parts = tuple(_prompt_part(item, at) for at, item in enumerate(prompt))
    if not any(not isinstance(p, TextContent) or p.text.strip() for p in parts):
        raise ArgumentValueError("prompt has no content; give at least one non-empty text or an attachment")
    return parts


def _prompt_part(item: Any, at: int) -> UserPart:
    if isinstance(item, str):
        return TextContent(item)
    if isinstance(item, _PART_TYPES):
        if isinstance(item, ImageContent | AudioContent | DocumentContent):
            _check_media(item, at)
        return item
    raise ArgumentTypeError(f"prompt[{at}] got {describe(item)}; {_PROMPT_FIX}")


def _check_media(part: ImageContent | AudioContent | DocumentContent, at: int) -> None:
    name = type(part).__name__
    if not isinstance(part.data, str) or not part.data:
        raise ArgumentTypeError(
            f"prompt[{at}] is a {name} whose data is {describe(part.data)}; give the content as a base64 string"
        )
    if not isinstance(part.mime_type, str) or "/" not in part.mime_type:
        raise ArgumentValueError(
            f"prompt[{at}] is a {name} with mime_type {part.mime_type!r}; give a media type such as 'image/png'"
        )


def _callable_or_none(value: Any, param: str, fix: str) -> None:
    if value is not None and not callable(value):
        raise ArgumentTypeError(f"{param} got {describe(value)}; {fix}")


def _history(history: Any) -> tuple[Message, ...]:
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Iterable):
        raise ArgumentTypeError(
            f"history got {describe(history)}; pass the messages of an earlier run, e.g. history=result.transcript"
        )
    messages = tuple(history)
    for position, message in enumerate(messages):
        if not isinstance(message, _MESSAGE_TYPES):
            raise ArgumentTypeError(f"history[{position}] got {describe(message)}; {_message_fix(message)}")
    return messages


def _message_fix(value: Any) -> str:
    if isinstance(value, Mapping) and "role" in value:
        return (
            "history holds tooloop messages, not provider dicts: build UserMessage(text), "
            "AssistantMessage(text), SystemMessage(text), or read a saved transcript with Transcript.from_json"
        )
    return "each item must be a UserMessage, AssistantMessage, SystemMessage or ToolCallMessage"


def _approvals(approvals: Any) -> Approvals:
    if isinstance(approvals, Mapping):
        decisions: Approvals = dict(approvals)
        values: Iterable[Any] = decisions.values()  # type: ignore[union-attr]
    elif isinstance(approvals, str | bytes) or not isinstance(approvals, Iterable):
        raise ArgumentTypeError(f"approvals got {describe(approvals)}; {_APPROVALS_FIX}")
    else:
        decisions = values = tuple(approvals)
    for decision in values:
        if not isinstance(decision, ApprovalDecision):
            raise ArgumentTypeError(f"approvals holds {describe(decision)}; {_APPROVALS_FIX}")
    return decisions


_APPROVALS_FIX = "pass the decisions made on result.pending_approvals, e.g. approvals=[request.approve()]"


def _is_store(value: object) -> bool:
    from .store.base import Store  # imported on use: a run without a store never loads the stores

    return isinstance(value, Store)
