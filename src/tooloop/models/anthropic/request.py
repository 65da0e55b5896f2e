"""Turning a :class:`ModelRequest` into the JSON body of an Anthropic Messages API request.

Pure data mapping, no SDK import. The rules Anthropic enforces and how they are met:

* System messages go to the top-level ``system`` field, joined by blank lines.
* Roles must alternate: adjacent messages with the same role are merged into one message (tool
  results and a user text that follows them end up in one user message, results first).
* A tool-call batch is one assistant message (its own thinking, text, ``tool_use`` blocks)
  followed by one user message with every ``tool_result`` in the same order.
* Empty or whitespace-only text blocks are rejected by the API, so they are never sent.
* Tool-call ids must match ``^[a-zA-Z0-9_-]+$``: others are rewritten by :class:`IdMapper`.
* A request whose history holds ``tool_use`` blocks must define tools. When the request has no
  tools any more, the tools named in the history are declared with a permissive schema and
  ``tool_choice`` ``none``, so the model can read the history but cannot call them.
* Prompt caching (``ModelSettings.cache`` ``"auto"``): ``cache_control`` breakpoints on the last
  tool, on the system prompt and on the last block of the two latest messages: four, Anthropic's
  limit. The latest one moves forward every turn; the one before it still matches what the
  previous request cached, so a turn that adds two messages reads the cache too.
* The provider's tool search (``ModelRequest.tool_search``): the BM25 tool search tool goes first
  and deferred tools carry ``defer_loading``; the tools breakpoint goes on the last tool that is
  not deferred (deferred ones are not part of the cached prefix). An answer with server blocks
  (the search's ``server_tool_use`` and ``tool_search_tool_result``) is kept block by block in
  ``provider_data["anthropic"]["content"]`` and sent back in the same order, its ``tool_use``
  blocks rebuilt from the calls as they stand; without tool search in the request, the search's
  blocks are left out (the API would refuse a result of a tool it was not given).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, assert_never

from ...messages import (
    AssistantMessage,
    AudioContent,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingPart,
    ToolCallMessage,
    UserMessage,
    UserPart,
)
from ...outcome import for_model, native_parts
from ..base import MemoKey, ModelRequest, ModelSettings, OutputSchema
from ..inputs import decoded_text, refuse
from ..portable import BatchMemo, IdMapper, ToolBatch, Turn, batch_memo, own_thinking, turns

__all__ = ["INPUT_KINDS", "PROVIDER", "SEARCH_TOOL", "build_body"]

PROVIDER = "anthropic"
INPUT_KINDS = frozenset({"image", "document"})
"""What a Messages API user turn takes besides text: ``image`` and ``document`` blocks."""
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_HISTORY_TOOL_DESCRIPTION = "A tool used earlier in this conversation; it is no longer available."
_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]")
SEARCH_TOOL: dict[str, str] = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
"""Anthropic's tool search tool, the variant that takes a query in words (as the local search does)."""
_SEARCH_NAMES = frozenset({"tool_search_tool_bm25", "tool_search_tool_regex"})

Block = dict[str, Any]


def build_body(
    request: ModelRequest,
    *,
    model: str,
    settings: ModelSettings,
    max_tokens: int,
    thinking: Mapping[str, Any] | None = None,
    native_output: bool = False,
) -> tuple[dict[str, Any], str | None]:
    """The request body, and the name of the forced output tool when native output is used."""
    batches = batch_memo(request, _BATCHES)
    system, messages, used_tools = convert_messages(request.messages, model, batches, tool_search=request.tool_search)
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if system:
        body["system"] = system
    thinks = thinking is not None and thinking.get("type") != "disabled"
    output_tool = _add_tools(body, request, used_tools, settings, native_output, thinks)
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.stop:
        body["stop_sequences"] = list(settings.stop)
    if thinking is not None:
        body["thinking"] = dict(thinking)
    if settings.cache in (None, "auto"):
        add_breakpoints(body, settings.cache_ttl)
    return body, output_tool


MAX_BREAKPOINTS = 4
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def add_breakpoints(body: dict[str, Any], ttl: str | None) -> None:
    """Mark the cacheable prefixes of ``body``: last tool, system, the two latest messages."""
    marker: Block = {"type": "ephemeral", "ttl": ttl} if ttl == "1h" else {"type": "ephemeral"}
    left = MAX_BREAKPOINTS
    tools = body.get("tools")
    at = next((i for i in range(len(tools) - 1, -1, -1) if not tools[i].get("defer_loading")), None) if tools else None
    if tools and at is not None:
        tools[at] = {**tools[at], "cache_control": marker}
        left -= 1
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": marker}]
        left -= 1
    for message in reversed(body["messages"][-min(left, 2) :] if left else []):
        blocks = message["content"]
        at = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].get("type") not in _UNMARKABLE), None)
        if at is not None:
            blocks[at] = {**blocks[at], "cache_control": marker}


def convert_messages(
    messages: Sequence[Message], model: str, batches: BatchMemo[_Batch], *, tool_search: bool = False
) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``(system text, Anthropic messages, names of tools used in the history)``; ``batches``: the
    run's tool batches already converted; ``tool_search``: the request has the tool search tool
    (else the search's blocks of earlier answers are left out)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    used: dict[str, None] = {}
    ids = IdMapper("a-zA-Z0-9_-", 64, "toolu_")
    for item in turns(messages):
        if isinstance(item, SystemMessage):
            if item.text.strip():
                system.append(item.text)
            continue
        if isinstance(item, ToolBatch):
            turned, names = _batch(item, ids, tool_search, batches)
            for role, blocks in turned:
                _add(out, role, list(blocks))  # a copy: merging and cache breakpoints change the lists
            used.update(names)
            continue
        for role, blocks in _turn(item, ids, model, tool_search):
            _add(out, role, blocks)
    return "\n\n".join(system), out, list(used)


_Turned = list[tuple[str, list[Block]]]
_Batch = tuple[_Turned, dict[str, None]]
_BATCHES: MemoKey[BatchMemo[_Batch]] = MemoKey("anthropic batches")


def _batch(item: ToolBatch, ids: IdMapper, tool_search: bool, batches: BatchMemo[_Batch]) -> _Batch:
    """What :func:`_turn` makes of a tool batch (a role's adjacent blocks already together) and
    the names of its tools, remembered in ``batches`` for the next requests of the run, which send
    the batch again: its messages never change, and neither do the ids (a rewrite depends on the
    id alone)."""
    made = batches.get(item.calls, tool_search)
    if made is None:  # a batch's blocks do not depend on the model
        turned: _Turned = []
        for role, blocks in _turn(item, ids, "", tool_search):
            if turned and turned[-1][0] == role:
                turned[-1][1].extend(blocks)
            elif blocks:
                turned.append((role, blocks))
        made = batches.put(item.calls, (turned, dict.fromkeys(call.tool_name for call in item.calls)), tool_search)
    return made


def _turn(item: Turn, ids: IdMapper, model: str, tool_search: bool = False) -> list[tuple[str, list[Block]]]:
    """The (role, blocks) a turn becomes; adjacent ones of a role are merged by :func:`_add`."""
    if isinstance(item, ToolBatch):
        kept = _kept_content(item.first.provider_data)
        if kept is not None:
            return [
                ("assistant", _replayed(kept, item.calls, ids, tool_search)),
                ("user", [_tool_result(call, ids) for call in item.calls]),
            ]
        return [
            ("assistant", [*_thinking_blocks(item.first.thinking), *_text(item.text)]),
            ("assistant", [_tool_use(call, ids) for call in item.calls]),
            ("user", [_tool_result(call, ids) for call in item.calls]),
        ]
    if isinstance(item, UserMessage):
        if item.parts:
            return [("user", [block for part in item.parts for block in _user_blocks(part, model)])]
        return [("user", _text(item.text))]
    if isinstance(item, AssistantMessage):
        kept = _kept_content(item.provider_data)
        if kept is not None:
            return [("assistant", _replayed(kept, (), ids, tool_search))]
        return [("assistant", [*_thinking_blocks(item.thinking), *_text(item.text)])]
    if isinstance(item, SystemMessage):
        return []  # gathered into the top-level ``system`` field by the caller
    assert_never(item)


def _kept_content(provider_data: Mapping[str, Any]) -> list[Any] | None:
    """The content blocks of an answer with server blocks, kept as they came (see :mod:`.response`)."""
    data = provider_data.get(PROVIDER)
    content = data.get("content") if isinstance(data, Mapping) else None
    return list(content) if isinstance(content, list | tuple) else None


def _replayed(kept: list[Any], calls: Sequence[ToolCallMessage], ids: IdMapper, tool_search: bool) -> list[Block]:
    """An answer's blocks in their order: ``tool_use`` rebuilt from the batch's calls (a call no
    longer in the batch is left out), text that is blank left out, the rest as they came."""
    by_id = {call.tool_call_id: call for call in calls}
    blocks: list[Block] = []
    for block in kept:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            call = by_id.get(block.get("id"))  # type: ignore[arg-type]
            if call is not None:
                blocks.append(_tool_use(call, ids))
        elif kind == "text":
            if isinstance(block.get("text"), str) and block["text"].strip():
                blocks.append(_plain(block))
        elif not tool_search and (kind == "tool_search_tool_result" or block.get("name") in _SEARCH_NAMES):
            continue
        else:
            blocks.append(_plain(block))
    return blocks


def _plain(value: Any) -> Any:
    """A stored block as plain JSON values (stores hand back read-only mappings)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _user_blocks(part: UserPart, model: str) -> list[Block]:
    """A user message's part as content blocks: ``text``, ``image`` or ``document``."""
    if isinstance(part, TextContent):
        return _text(part.text)
    label = f"{PROVIDER} model {model!r}"
    if isinstance(part, ImageContent):
        if part.mime_type not in _IMAGE_TYPES:
            raise refuse(part, label, "images as JPEG, PNG, GIF or WebP")
        return [{"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}]
    if isinstance(part, DocumentContent):
        return [_document(part, label)]
    if isinstance(part, AudioContent):
        raise refuse(part, label, "text, image, document (the Messages API takes no audio)")
    assert_never(part)


def _document(part: DocumentContent, label: str) -> Block:
    """A PDF as base64, a text file as plain text (the two document sources Anthropic takes)."""
    if part.mime_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    else:
        text = decoded_text(part)
        if text is None:
            raise refuse(part, label, "documents as PDF or UTF-8 text")
        source = {"type": "text", "media_type": "text/plain", "data": text}
    block: Block = {"type": "document", "source": source}
    if part.name:
        block["title"] = part.name
    return block


def _add(out: list[dict[str, Any]], role: str, blocks: list[Block]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def _text(text: str) -> list[Block]:
    return [{"type": "text", "text": text}] if text.strip() else []


def _thinking_blocks(parts: Iterable[ThinkingPart]) -> list[Block]:
    blocks: list[Block] = []
    for part in own_thinking(tuple(parts), PROVIDER):
        if not part.signature:  # Anthropic verifies every thinking block; an unsigned one is refused
            continue
        if part.redacted:
            blocks.append({"type": "redacted_thinking", "data": part.signature})
        else:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def _tool_use(call: ToolCallMessage, ids: IdMapper) -> Block:
    arguments = {} if call.raw_arguments is not None else dict(call.arguments)
    return {"type": "tool_use", "id": ids(call.tool_call_id), "name": call.tool_name, "input": arguments}


def _tool_result(call: ToolCallMessage, ids: IdMapper) -> Block:
    outcome = for_model(call)
    block: Block = {"type": "tool_result", "tool_use_id": ids(call.tool_call_id), "is_error": outcome.is_error}
    native = native_parts(outcome, _IMAGE_TYPES)
    if native is not None:
        block["content"] = [_result_block(part) for part in native]
    elif outcome.text.strip():
        block["content"] = outcome.text
    return block


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _result_block(part: TextContent | ImageContent) -> Block:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}


def _add_tools(
    body: dict[str, Any],
    request: ModelRequest,
    used_tools: list[str],
    settings: ModelSettings,
    native_output: bool,
    thinks: bool,
) -> str | None:
    tools: list[Block] = [dict(SEARCH_TOOL)] if request.tool_search and request.tools else []
    for tool in request.tools:
        spec: Block = {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
        if tool.strict is not None:
            spec["strict"] = tool.strict
        if tool.defer_loading and request.tool_search:
            spec["defer_loading"] = True
        tools.append(spec)
    choice: Block = {"type": {"auto": "auto", "required": "any", "none": "none"}[request.tool_choice]}
    output_tool = None
    if native_output and request.output is not None:
        output_tool = _output_tool_name(request.output, {t["name"] for t in tools})
        tools.append(_output_tool(request.output, output_tool))
        # With other tools the model must call one of them or the output tool: never free text.
        # Extended thinking allows only auto/none, so then the output tool is merely offered.
        has_tools = bool(request.tools) and request.tool_choice != "none"
        if thinks:
            choice = {"type": "auto"}
        else:
            choice = {"type": "any"} if has_tools else {"type": "tool", "name": output_tool}
    if not tools and used_tools:
        tools = [
            {"name": name, "description": _HISTORY_TOOL_DESCRIPTION, "input_schema": {"type": "object"}}
            for name in used_tools
        ]
        choice = {"type": "none"}
    if tools:
        if settings.parallel_tool_calls is False and choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
        body["tools"] = tools
        body["tool_choice"] = choice
    return output_tool


def _output_tool_name(output: OutputSchema, taken: set[str]) -> str:
    name = _TOOL_NAME.sub("_", output.name)[:64] or "final_result"
    while name in taken:
        name = f"{name[:60]}_out"
    return name


def _output_tool(output: OutputSchema, name: str) -> Block:
    description = output.description or "Give the final answer by calling this tool with it."
    spec: Block = {"name": name, "description": description, "input_schema": dict(output.schema)}
    if output.strict:
        spec["strict"] = True
    return spec
