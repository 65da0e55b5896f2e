"""tooloop values as ACP ``session/update`` payloads: tool calls, their outcomes, text, replays.

Pure functions: they build the SDK's pydantic models and send nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, Literal, TypeAlias, assert_never

from acp import schema

from .._json import to_jsonable
from ..messages import (
    AssistantMessage,
    AudioContent,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
    UserPart,
)
from ..tools.tool import Tool

__all__ = [
    "ToolKind",
    "Update",
    "failed_or_completed",
    "replay",
    "text_chunk",
    "thought_chunk",
    "tool_call_finished",
    "tool_call_pending",
    "tool_call_running",
    "tool_kind",
    "tool_title",
    "turn_usage",
    "user_chunks",
]

ToolKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
KINDS: frozenset[str] = frozenset(ToolKind.__args__)  # type: ignore[attr-defined]

Update: TypeAlias = (
    schema.UserMessageChunk
    | schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.UsageUpdate
)

_TITLE_LIMIT = 80


def text_chunk(text: str) -> schema.AgentMessageChunk:
    """A piece of the agent's answer."""
    return schema.AgentMessageChunk(session_update="agent_message_chunk", content=_text(text))


def thought_chunk(text: str) -> schema.AgentThoughtChunk:
    """A piece of the model's visible reasoning."""
    return schema.AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(text))


def user_chunk(text: str) -> schema.UserMessageChunk:
    """What the user said (replayed by ``session/load``)."""
    return schema.UserMessageChunk(session_update="user_message_chunk", content=_text(text))


def user_chunks(message: UserMessage) -> Iterator[schema.UserMessageChunk]:
    """A user message (replayed by ``session/load``): its text, or each of its parts in order."""
    if not message.parts:
        yield user_chunk(message.text)
        return
    for part in message.parts:
        yield schema.UserMessageChunk(session_update="user_message_chunk", content=_user_block(part))


def _user_block(
    part: UserPart,
) -> (
    schema.TextContentBlock | schema.ImageContentBlock | schema.AudioContentBlock | schema.EmbeddedResourceContentBlock
):
    if isinstance(part, TextContent):
        return _text(part.text)
    if isinstance(part, ImageContent):
        return schema.ImageContentBlock(type="image", data=part.data, mime_type=part.mime_type)
    if isinstance(part, AudioContent):
        return schema.AudioContentBlock(type="audio", data=part.data, mime_type=part.mime_type)
    if isinstance(part, DocumentContent):
        uri = f"attachment:{part.name or 'document'}"
        resource = schema.BlobResourceContents(uri=uri, blob=part.data, mime_type=part.mime_type)
        return schema.EmbeddedResourceContentBlock(type="resource", resource=resource)
    assert_never(part)


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def tool_metadata(tool: Tool | None) -> Mapping[str, Any]:
    """The tool's metadata mapping (``title``, ``kind``...), empty when it has none."""
    return tool.metadata if tool is not None else {}


def tool_kind(tool: Tool | None) -> ToolKind:
    """The ACP kind of a tool: its metadata's ``kind``, else what MCP annotations say, else ``other``."""
    kind = tool_metadata(tool).get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return kind  # type: ignore[return-value]
    annotations = getattr(tool, "annotations", None)
    if getattr(annotations, "readOnlyHint", None) or getattr(annotations, "read_only_hint", None):
        return "read"
    return "other"


def tool_title(name: str, arguments: Mapping[str, Any], tool: Tool | None) -> str:
    """A one-line title for the editor: the tool's own title or name, with its arguments in short."""
    label = tool_metadata(tool).get("title") or getattr(tool, "title", None) or name
    if not arguments:
        return str(label)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in arguments.items())
    title = f"{label}({shown})"
    return title if len(title) <= _TITLE_LIMIT else title[: _TITLE_LIMIT - 1] + "…"


def _short(value: Any) -> str:
    text = json.dumps(to_jsonable(value), ensure_ascii=False)
    return text if len(text) <= 30 else text[:29] + "…"


def tool_call_pending(call_id: str, name: str, arguments: Mapping[str, Any], tool: Tool | None) -> schema.ToolCallStart:
    """The first update of a call: ``pending``, with a title, a kind and the raw input."""
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, arguments, tool),
        kind=tool_kind(tool),
        status="pending",
        raw_input=to_jsonable(dict(arguments)),
    )


def tool_call_running(call_id: str) -> schema.ToolCallProgress:
    """The call began to run."""
    return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")


def tool_call_progress(
    call_id: str, progress: float, total: float | None, message: str | None
) -> schema.ToolCallProgress:
    """A running call reported progress: shown as its content until the outcome replaces it."""
    amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    text = f"{message} ({amount})" if message else f"progress: {amount}"
    block = schema.ContentToolCallContent(type="content", content=_text(text))
    return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, content=[block])


def failed_or_completed(message: ToolCallMessage) -> Literal["completed", "failed"]:
    """ACP has no ``cancelled`` tool status: a call that did not produce a result ``failed``."""
    return "completed" if message.status is ToolCallStatus.OK else "failed"


def tool_call_finished(message: ToolCallMessage) -> schema.ToolCallProgress:
    """The call's outcome: ``completed`` or ``failed``, its content and its raw output."""
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=message.tool_call_id,
        status=failed_or_completed(message),
        content=outcome_content(message),
        raw_output=raw_output(message),
    )


def raw_output(message: ToolCallMessage) -> Any:
    """What the tool returned (JSON values), or what went wrong."""
    if message.status is ToolCallStatus.OK:
        return to_jsonable(message.result)
    return {"status": message.status.value, "error": message.error_type, "message": message.content}


ToolCallContent: TypeAlias = (
    schema.ContentToolCallContent | schema.FileEditToolCallContent | schema.TerminalToolCallContent
)


def outcome_content(message: ToolCallMessage) -> list[ToolCallContent]:
    """The outcome as ACP content: the parts a tool returned (text, images, resources), else its text."""
    blocks = [block for part in getattr(message, "parts", ()) if (block := content_block(part)) is not None]
    if not blocks and message.content:
        blocks = [_text(message.content)]
    content: list[ToolCallContent] = [schema.ContentToolCallContent(type="content", content=b) for b in blocks]
    return content


Block: TypeAlias = (
    schema.TextContentBlock
    | schema.ImageContentBlock
    | schema.AudioContentBlock
    | schema.ResourceContentBlock
    | schema.EmbeddedResourceContentBlock
)


def content_block(part: Any) -> Block | None:
    """One content part of a tool outcome as an ACP content block (None for an unknown kind)."""
    kind = getattr(part, "kind", None)
    if kind == "text":
        return _text(part.text)
    if kind == "image":
        return schema.ImageContentBlock(type="image", data=part.data, mime_type=part.mime_type)
    if kind == "audio":
        return schema.AudioContentBlock(type="audio", data=part.data, mime_type=part.mime_type)
    if kind == "resource_link":
        return schema.ResourceContentBlock(
            type="resource_link",
            uri=part.uri,
            name=part.name,
            title=part.title,
            description=part.description,
            mime_type=part.mime_type,
            size=part.size,
        )
    if kind == "resource":
        return _embedded(part)
    return None


def _embedded(part: Any) -> schema.EmbeddedResourceContentBlock:
    resource: schema.TextResourceContents | schema.BlobResourceContents
    if part.text is not None:
        resource = schema.TextResourceContents(uri=part.uri, text=part.text, mime_type=part.mime_type)
    else:
        resource = schema.BlobResourceContents(uri=part.uri, blob=part.blob or "", mime_type=part.mime_type)
    return schema.EmbeddedResourceContentBlock(type="resource", resource=resource)


def usage_update(used: int, size: int, cost: Decimal | None = None) -> schema.UsageUpdate:
    """Tokens in the context now, out of the model's context window, and the session's cost so
    far in US dollars (left out when a price is unknown)."""
    total = None if cost is None else schema.Cost(amount=float(cost), currency="USD")
    return schema.UsageUpdate(session_update="usage_update", used=used, size=size, cost=total)


def turn_usage(usage: Usage) -> schema.Usage:
    """A turn's token counts as ``PromptResponse.usage``."""
    return schema.Usage(
        total_tokens=usage.input_tokens + usage.output_tokens,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        thought_tokens=usage.reasoning_tokens or None,
        cached_read_tokens=usage.cache_read_tokens or None,
        cached_write_tokens=usage.cache_write_tokens or None,
    )


# ---------------------------------------------------------------------- session/load


def replay(messages: Iterable[Message], tools: Mapping[str, Tool]) -> Iterator[Update]:
    """The updates that show a stored conversation again, oldest first."""
    batch = None
    for message in messages:
        if isinstance(message, ToolCallMessage):
            if message.batch_id != batch:  # the text of a response that asked for tools comes first
                yield from _replay_answer(message.thinking, message.message)
            batch = message.batch_id
            yield _replay_call(message, tools.get(message.tool_name))
            continue
        batch = None
        if isinstance(message, UserMessage):
            yield from user_chunks(message)
        elif isinstance(message, AssistantMessage):
            yield from _replay_answer(message.thinking, message.text)
        elif not isinstance(message, SystemMessage):
            assert_never(message)


def _replay_answer(thinking: tuple[ThinkingPart, ...], text: str) -> Iterator[Update]:
    for part in thinking:
        if part.text and not part.redacted:
            yield thought_chunk(part.text)
    if text:
        yield text_chunk(text)


def _replay_call(message: ToolCallMessage, tool: Tool | None) -> schema.ToolCallStart:
    start = tool_call_pending(message.tool_call_id, message.tool_name, message.arguments, tool)
    if not message.status.finished:
        return start
    return start.model_copy(
        update={
            "status": failed_or_completed(message),
            "content": outcome_content(message),
            "raw_output": raw_output(message),
        }
    )
