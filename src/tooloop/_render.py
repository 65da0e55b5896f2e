"""Readable renderings of a conversation: plain text, or rich renderables (rich imported lazily).

Behind :meth:`tooloop.Transcript.render`. Only message values are read here, so the plain form
needs nothing beyond the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._json import to_jsonable
from .messages import (
    AssistantMessage,
    Message,
    StopReason,
    SystemMessage,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from .outcome import attachment_mark

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "arguments_text",
    "clip",
    "final_stop",
    "outcome_text",
    "render_rich",
    "render_text",
    "usage_text",
    "user_text",
]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible marker saying how much was left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def arguments_text(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as compact JSON, the way the model wrote them."""
    return json.dumps(to_jsonable(dict(arguments)), ensure_ascii=False, default=str)


def usage_text(usage: Usage) -> str:
    """``1,234 tokens in, 56 out · 3 requests · 2 tool calls`` (cached and reasoning tokens when any)."""
    parts = [f"{usage.input_tokens:,} tokens in, {usage.output_tokens:,} out"]
    if usage.cache_read_tokens:
        parts[0] += f" ({usage.cache_read_tokens:,} cached)"
    if usage.reasoning_tokens:
        parts[0] += f", {usage.reasoning_tokens:,} reasoning"
    parts.append(f"{usage.requests} request{'s' if usage.requests != 1 else ''}")
    parts.append(f"{usage.tool_calls} tool call{'s' if usage.tool_calls != 1 else ''}")
    if usage.cost is not None:
        parts.append(f"${usage.cost:.6f}".rstrip("0").rstrip(".") if usage.cost else "$0")
    return " · ".join(parts)


def final_stop(messages: Iterable[Message]) -> str | None:
    """How the conversation ends, read from its last messages.

    The stop reason of a closing answer; for a conversation that ends in tool calls: waiting for
    approval, cancelled, or stopped before the model saw the results (a limit or an error).
    """
    last: Message | None = None
    pending = cancelled = False
    for message in messages:
        last = message
        if isinstance(message, ToolCallMessage):
            pending = pending or message.status is ToolCallStatus.PENDING
            cancelled = cancelled or message.status is ToolCallStatus.CANCELLED
        else:
            pending = cancelled = False
    if isinstance(last, AssistantMessage):
        return str(last.stop_reason)
    if isinstance(last, ToolCallMessage):
        if pending:
            return str(StopReason.APPROVAL_REQUIRED)
        return str(StopReason.CANCELLED) if cancelled else "stopped after tool calls"
    return None


def outcome_text(call: ToolCallMessage, limit: int) -> str:
    """``result`` for a call that ran, else ``status: text`` (with the error's type when the text
    does not already start with it), cut to ``limit`` characters."""
    content = clip(call.content, limit)
    if call.status is ToolCallStatus.OK:
        return content
    if call.error_type and not call.content.startswith(call.error_type):
        content = f"{call.error_type}: {content}"
    return f"{call.status.value}: {content}"


def subagent_session(call: ToolCallMessage) -> str | None:
    """The session a subagent's call ran in (its result names it), so a reader can open it."""
    result = call.result
    if isinstance(result, dict) and "subagent" in result and isinstance(result.get("session_id"), str):
        return str(result["session_id"])
    return None


def _text_lines(message: Message, limit: int) -> list[str]:
    if isinstance(message, SystemMessage):
        return [f"system: {message.text}"]
    if isinstance(message, UserMessage):
        return [f"user: {user_text(message)}"]
    if isinstance(message, AssistantMessage):
        lines = [f"assistant (thinking): {part.text}" for part in message.thinking if part.text]
        lines.append(f"assistant: {message.refusal or message.text}")
        if message.stop_reason is not StopReason.END_TURN:
            lines.append(f"  [stop: {message.stop_reason}]")
        return lines
    lines = [f"assistant: {message.message}"] if message.message else []
    lines.append(f"  tool {message.tool_name}({arguments_text(message.arguments)})")
    lines.append(f"    -> {outcome_text(message, limit)}")
    if (session := subagent_session(message)) is not None:
        lines.append(f"    (subagent session {session})")
    return lines


def render_text(messages: Iterable[Message], *, usage: Usage | None, stop_reason: str | None, limit: int = 500) -> str:
    """The conversation as plain text: one block per message, tool calls indented under the turn."""
    items = list(messages)
    lines: list[str] = []
    for message in items:
        lines.extend(_text_lines(message, limit))
    stop = stop_reason or final_stop(items)
    if stop is not None:
        lines.append(f"stop: {stop}")
    if usage is not None:
        lines.append(f"usage: {usage_text(usage)}")
    return "\n".join(lines)


_ROLE_STYLES = {"system": "magenta", "user": "bold cyan", "assistant": "bold green"}


def _rich_call(call: ToolCallMessage, limit: int) -> RenderableType:
    from rich.text import Text

    line = Text("  ⚙ ", style="yellow")
    line.append(call.tool_name, style="bold yellow")
    line.append(f"({arguments_text(call.arguments)})", style="yellow")
    mark, style = ("✓", "green") if call.ok else ("✗", "red")
    outcome = Text(f"    {mark} ", style=style)
    outcome.append(outcome_text(call, limit), style="dim" if call.ok else style)
    parts = [line, outcome]
    if (session := subagent_session(call)) is not None:
        parts.append(Text(f"    (subagent session {session})", style="dim"))
    return Text("\n").join(parts)


def _rich_message(message: Message, limit: int) -> RenderableType:
    from rich.console import Group
    from rich.markdown import Markdown
    from rich.text import Text

    if isinstance(message, ToolCallMessage):
        parts: list[RenderableType] = [Text(message.message, style="green")] if message.message else []
        return Group(*parts, _rich_call(message, limit))
    header = Text(f"{message.kind}", style=_ROLE_STYLES[message.kind])
    if isinstance(message, AssistantMessage):
        body: RenderableType = Markdown(message.refusal or message.text)
        thinking = [Text(part.text, style="dim italic") for part in message.thinking if part.text]
        extra = [] if message.stop_reason is StopReason.END_TURN else [Text(f"[stop: {message.stop_reason}]", "dim")]
        return Group(header, *thinking, body, *extra)
    return Group(header, Text(user_text(message) if isinstance(message, UserMessage) else message.text))


def user_text(message: UserMessage) -> str:
    """A user message's text with a line per attachment (``[image: image/png, 2048 bytes]``)."""
    marks = [attachment_mark(part) for part in message.attachments]
    return "\n".join([message.text, *marks] if message.text else marks)


def render_rich(
    messages: Iterable[Message], *, usage: Usage | None, stop_reason: str | None, limit: int = 500
) -> RenderableType:
    """The conversation as a rich renderable: coloured roles, markdown answers, tool calls marked."""
    from rich.console import Group
    from rich.text import Text

    items = list(messages)
    parts = [_rich_message(m, limit) for m in items]
    stop = stop_reason or final_stop(items)
    if stop is not None:
        parts.append(Text(f"stop: {stop}", style="dim"))
    if usage is not None:
        parts.append(Text(f"usage: {usage_text(usage)}", style="dim"))
    return Group(*parts)
