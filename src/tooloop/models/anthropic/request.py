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

import json
import operator
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
    ToolCallStatus,
    UserMessage,
    UserPart,
)
from ...outcome import for_model, native_parts
from ...transport.client import dumps, loads
from ..base import MemoKey, ModelRequest, ModelSettings, OutputSchema, ToolDefinition
from ..inputs import decoded_text, refuse
from ..portable import IdMapper, ToolBatch, Turn, own_thinking, turns

__all__ = ["INPUT_KINDS", "PROVIDER", "SEARCH_TOOL", "AnthropicRequest", "build_body"]

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
    return AnthropicRequest().body(
        request, model=model, settings=settings, max_tokens=max_tokens, thinking=thinking, native_output=native_output
    )


MAX_BREAKPOINTS = 4
_LATEST = MAX_BREAKPOINTS - 2  # the breakpoints on messages: the two latest
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
_MARKERS: dict[str, Block] = {"5m": {"type": "ephemeral"}, "1h": {"type": "ephemeral", "ttl": "1h"}}
_MARKER_JSON = {ttl: json.dumps(marker, separators=(",", ":")).encode() for ttl, marker in _MARKERS.items()}
_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def _cache_ttl(settings: ModelSettings) -> str | None:
    """How long the breakpoints keep what they mark (a key of ``_MARKERS``); None without prompt caching."""
    cache = settings.cache
    if cache is None or cache == "auto":
        return "1h" if settings.cache_ttl == "1h" else "5m"
    return None


class AnthropicRequest:
    """The request bodies of one model, its tool list built once (and again only when it changes).

    :meth:`body` makes the body as dicts (for the SDK and the tests), :meth:`payload` its JSON
    directly (the lean transport): the messages a run's previous request sent go out as the JSON
    they became then, and the tool list as the JSON made when it was built.
    """

    __slots__ = ("_tools_in", "_tools_json", "_tools_out")

    def __init__(self) -> None:
        self._tools_in: tuple[Any, ...] | None = None
        self._tools_out: list[Block] = []
        self._tools_json = b"[]"

    def body(
        self,
        request: ModelRequest,
        *,
        model: str,
        settings: ModelSettings,
        max_tokens: int,
        thinking: Mapping[str, Any] | None = None,
        native_output: bool = False,
    ) -> tuple[dict[str, Any], str | None]:
        """The request body, and the name of the forced output tool when native output is used."""
        ttl = _cache_ttl(settings)
        marker = None if ttl is None else _MARKERS[ttl]
        system, sent, new, _ = request_messages(request, model, 0 if marker is None else _LATEST)
        messages = [*loads(b"[" + sent + b"]"), *new] if sent else new
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        output_tool = self._fill(body, request, system, settings, marker, thinking, native_output, spliced=False)
        if marker is not None:
            _mark_latest(messages, marker, _LATEST)
        return body, output_tool

    def payload(
        self,
        request: ModelRequest,
        *,
        model: str,
        settings: ModelSettings,
        max_tokens: int,
        thinking: Mapping[str, Any] | None,
        native_output: bool,
        stream: bool,
    ) -> tuple[bytes, str | None]:
        """:meth:`body` as the JSON it is sent as, with ``settings.extra`` over it and ``stream``
        set when asked; the name of the forced output tool."""
        ttl = _cache_ttl(settings)
        marker = None if ttl is None else _MARKERS[ttl]
        system, sent, new, encoded = request_messages(request, model, 0 if marker is None else _LATEST)
        head: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        output_tool = self._fill(head, request, system, settings, marker, thinking, native_output, spliced=True)
        spliced_tools = "tools" not in head and bool(request.tools)
        if settings.extra:
            head.update(settings.extra)
        if stream:
            head["stream"] = True
        parts = [dumps(head)[:-1]]  # without its closing brace
        if "messages" not in head:
            if ttl is not None:
                encoded = _marked_latest(new, encoded, _MARKER_JSON[ttl], _MARKERS[ttl])
            parts += (b',"messages":[', b",".join((sent, *encoded)) if sent else b",".join(encoded), b"]")
        if spliced_tools and "tools" not in head:
            parts += (b',"tools":', self._tools_json)
        parts.append(b"}")
        return b"".join(parts), output_tool

    def _fill(
        self,
        body: dict[str, Any],
        request: ModelRequest,
        system: str,
        settings: ModelSettings,
        marker: Block | None,
        thinking: Mapping[str, Any] | None,
        native_output: bool,
        *,
        spliced: bool,
    ) -> str | None:
        """Everything but the messages into ``body`` (the request's own tool list too unless
        ``spliced``: then it is :attr:`_tools_json`); the forced output tool's name."""
        # prompt caching: breakpoints on the last tool, the system prompt and the two latest
        # messages (MAX_BREAKPOINTS in all)
        if system:
            body["system"] = system if marker is None else [{"type": "text", "text": system, "cache_control": marker}]
        thinks = thinking is not None and thinking.get("type") != "disabled"
        output_tool = None
        if request.tools and not (native_output and request.output is not None):
            tools = self._tools(request.tools, request.tool_search, marker)
            if not spliced:
                body["tools"] = tools
            body["tool_choice"] = _choice(_CHOICES[request.tool_choice], settings)
        else:  # structured output as a forced tool, or no tools but those the history used
            tools, output_tool = _add_tools(body, request, native_output, thinks, settings)
            if tools and marker is not None:
                _mark_last_tool(tools, marker)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.stop:
            body["stop_sequences"] = list(settings.stop)
        if thinking is not None:
            body["thinking"] = dict(thinking)
        return output_tool

    def _tools(self, tools: tuple[ToolDefinition, ...], tool_search: bool, marker: Block | None) -> list[Block]:
        """The tool list (its breakpoint on the last tool not deferred), made again only when the
        definitions, the tool search or the marker change (the same every turn of a run)."""
        key = (tools, tool_search, marker)
        if key != self._tools_in:  # the same definitions every turn (compared by identity first)
            out = _tool_specs(tools, tool_search)
            if marker is not None:
                _mark_last_tool(out, marker)
            self._tools_out = out
            self._tools_json = dumps(out)
            self._tools_in = key
        return self._tools_out


def _choice(kind: str, settings: ModelSettings, name: str | None = None) -> Block:
    choice: Block = {"type": kind} if name is None else {"type": kind, "name": name}
    if settings.parallel_tool_calls is False and kind != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def _mark_last_tool(tools: list[Block], marker: Block) -> None:
    """The breakpoint on the last tool that is not deferred (deferred ones are not in the cached prefix)."""
    for at in range(len(tools) - 1, -1, -1):
        if not tools[at].get("defer_loading"):
            tools[at] = {**tools[at], "cache_control": marker}
            return


def _mark_latest(messages: list[dict[str, Any]], marker: Block, count: int) -> None:
    """Breakpoints on the last markable block of the ``count`` latest messages; those messages are
    replaced by marked copies (the others may be shared with the conversation's later requests)."""
    for index in range(len(messages) - 1, max(len(messages) - count, 0) - 1, -1):
        message = messages[index]
        blocks = message["content"]
        for at in range(len(blocks) - 1, -1, -1):
            if blocks[at].get("type") not in _UNMARKABLE:
                marked = list(blocks)
                marked[at] = {**blocks[at], "cache_control": marker}
                messages[index] = {"role": message["role"], "content": marked}
                break


def _marked_latest(
    messages: list[dict[str, Any]], encoded: list[bytes], marker_json: bytes, marker: Block
) -> list[bytes]:
    """:func:`_mark_latest` on the messages' JSON ``encoded``: the latest ones' JSON with the breakpoint."""
    marked = list(encoded)
    for index in range(len(messages) - 1, max(len(messages) - _LATEST, 0) - 1, -1):
        message, json_text = messages[index], encoded[index]
        last = message["content"][-1]
        if last.get("type") not in _UNMARKABLE and "cache_control" not in last and json_text.endswith(b"}]}"):
            # the usual case, the last block marked: its JSON is the message's but for the final "]}"
            marked[index] = b"".join((json_text[:-3], b',"cache_control":', marker_json, b"}]}"))
        else:
            copy = [message]
            _mark_latest(copy, marker, 1)
            marked[index] = dumps(copy[0])
    return marked


def convert_messages(
    messages: Sequence[Message], model: str, *, tool_search: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """``(system text, Anthropic messages)``; ``tool_search``: the request has the tool search tool
    (else the search's blocks of earlier answers are left out)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    _convert(messages, model, tool_search, system, out)
    return "\n\n".join(system), out


_VALID_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _tool_id(original: str) -> str:
    """A tool-call id as Anthropic takes it: itself, or its rewrite (which depends on the id alone,
    so nothing is kept between calls)."""
    if _VALID_ID.fullmatch(original):
        return original
    return IdMapper("a-zA-Z0-9_-", 64, "toolu_")(original)


class _RunPart:
    """What a run keeps for its next Anthropic request: the messages its latest request sent, the
    JSON of the Anthropic messages they became (before breakpoints, comma-separated), the role of
    the last of those, and the system texts. The next request of the run sends the same messages
    and a few more, and only those are converted. Kept as bytes and strings: at a thousand
    conversations waiting for their answers, every container kept is one more object for the
    garbage collector to scan."""

    __slots__ = ("last_role", "messages", "sent", "system", "tool_search")

    def __init__(self) -> None:
        self.messages: tuple[Message, ...] = ()
        self.sent = b""
        self.last_role = ""
        self.system: tuple[str, ...] = ()  # texts only: a tuple the collector stops tracking
        self.tool_search = False


_RUN: MemoKey[_RunPart] = MemoKey("anthropic")


def request_messages(
    request: ModelRequest, model: str, latest: int
) -> tuple[str, bytes, list[dict[str, Any]], list[bytes]]:
    """The system text, the JSON of the Anthropic messages the run's previous request sent (b""
    for none), the messages after them and their JSON (new dicts: the caller may change them).

    What the previous request sent is reused when the request's messages start with its messages,
    and what follows neither merges into its last message nor leaves fewer than ``latest`` new
    messages (the latest ones get breakpoints); else everything is converted anew."""
    memo = request.memo
    if memo is None:
        system, made = convert_messages(request.messages, model, tool_search=request.tool_search)
        return system, b"", made, [dumps(message) for message in made]
    run = memo.part(_RUN, _RunPart)
    messages = tuple(request.messages)
    tool_search = request.tool_search
    done = _already_sent(run, messages, tool_search)
    texts = list(run.system) if done else []
    out: list[dict[str, Any]] = []
    _convert(messages[done:] if done else messages, model, tool_search, texts, out)
    sent = run.sent if done else b""
    if sent and (len(out) < latest or (out and out[0]["role"] == run.last_role)):
        texts, out, sent = [], [], b""  # breakpoints or a merge fall on what was sent: all anew
        _convert(messages, model, tool_search, texts, out)
    encoded = [dumps(message) for message in out]
    if out:
        run.sent = b",".join((sent, *encoded)) if sent else b",".join(encoded)
        run.last_role = out[-1]["role"]
    elif not sent:
        run.sent, run.last_role = b"", ""
    run.messages, run.system, run.tool_search = messages, tuple(texts), tool_search
    return "\n\n".join(texts), sent, out, encoded


def _already_sent(sent: _RunPart, messages: tuple[Message, ...], tool_search: bool) -> int:
    """How many of ``messages`` the previous request sent as they start: all of its messages
    when they are the very start of ``messages`` (and do not end inside a batch going on)."""
    before = sent.messages
    count = len(before)
    if not count or count > len(messages) or sent.tool_search != tool_search:
        return 0
    if not all(map(operator.is_, before, messages)):
        return 0
    if count < len(messages):
        last, after = before[-1], messages[count]
        if isinstance(last, ToolCallMessage) and isinstance(after, ToolCallMessage) and last.batch_id == after.batch_id:
            return 0  # the batch goes on: converted again as a whole
    return count


def _convert(
    messages: Sequence[Message],
    model: str,
    tool_search: bool,
    system: list[str],
    out: list[dict[str, Any]],
) -> None:
    """Add what ``messages`` become to ``system`` (texts) and ``out`` (Anthropic messages, a role's
    adjacent messages merged)."""
    for item in turns(messages):
        if type(item) is ToolBatch:
            for message in _batch(item, tool_search):
                if out and out[-1]["role"] == message["role"]:
                    _merge(out, message["content"])
                else:
                    out.append(message)
            continue
        if isinstance(item, SystemMessage):
            if item.text.strip():
                system.append(item.text)
            continue
        for role, blocks in _turn(item, model, tool_search):
            if not blocks:
                continue
            if out and out[-1]["role"] == role:
                _merge(out, blocks)
            else:
                out.append({"role": role, "content": blocks})


def _merge(out: list[dict[str, Any]], blocks: list[Block]) -> None:
    """``blocks`` added to the last message (a new one: the last may be a batch's, which is kept)."""
    last = out[-1]
    out[-1] = {"role": last["role"], "content": [*last["content"], *blocks]}


def used_tools(messages: Sequence[Message]) -> list[str]:
    """The names of the tools the history's calls used, in order."""
    return list(dict.fromkeys(m.tool_name for m in messages if isinstance(m, ToolCallMessage)))


_Batch = tuple[dict[str, Any], ...]


def _batch(item: ToolBatch, tool_search: bool) -> _Batch:
    """The messages a tool batch becomes: its assistant turn, then its results."""
    first = item.calls[0]
    if first.thinking or first.provider_data:
        return _merged(_turn(item, "", tool_search))  # a batch's blocks do not depend on the model
    return _plain_batch(item.calls)  # the usual batch: text, calls, results


def _merged(turned: list[tuple[str, list[Block]]]) -> _Batch:
    """(role, blocks) pairs as messages, a role's adjacent blocks in one."""
    messages: list[dict[str, Any]] = []
    for role, blocks in turned:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        elif blocks:
            messages.append({"role": role, "content": blocks})
    return tuple(messages)


def _plain_batch(calls: Sequence[ToolCallMessage]) -> _Batch:
    """What :func:`_turn` makes of a batch without thinking or kept blocks, made directly."""
    uses = _text(calls[0].message)
    results: list[Block] = []
    for call in calls:
        call_id = _tool_id(call.tool_call_id)
        arguments = {} if call.raw_arguments is not None else dict(call.arguments)
        uses.append({"type": "tool_use", "id": call_id, "name": call.tool_name, "input": arguments})
        results.append(_tool_result(call, call_id))
    return {"role": "assistant", "content": uses}, {"role": "user", "content": results}


def _turn(item: Turn, model: str, tool_search: bool = False) -> list[tuple[str, list[Block]]]:
    """The (role, blocks) a turn becomes; adjacent ones of a role end up in one message."""
    if isinstance(item, UserMessage):
        if item.parts:
            return [("user", [block for part in item.parts for block in _user_blocks(part, model)])]
        return [("user", _text(item.text))]
    if isinstance(item, AssistantMessage):
        kept = _kept_content(item.provider_data)
        if kept is not None:
            return [("assistant", _replayed(kept, (), tool_search))]
        return [("assistant", [*_thinking_blocks(item.thinking), *_text(item.text)])]
    if isinstance(item, ToolBatch):
        kept = _kept_content(item.first.provider_data)
        results = [_tool_result(call, _tool_id(call.tool_call_id)) for call in item.calls]
        if kept is not None:
            return [("assistant", _replayed(kept, item.calls, tool_search)), ("user", results)]
        return [
            ("assistant", [*_thinking_blocks(item.first.thinking), *_text(item.text)]),
            ("assistant", [_tool_use(call) for call in item.calls]),
            ("user", results),
        ]
    if isinstance(item, SystemMessage):
        return []  # gathered into the top-level ``system`` field by the caller
    assert_never(item)


def _kept_content(provider_data: Mapping[str, Any]) -> list[Any] | None:
    """The content blocks of an answer with server blocks, kept as they came (see :mod:`.response`)."""
    data = provider_data.get(PROVIDER)
    content = data.get("content") if isinstance(data, Mapping) else None
    return list(content) if isinstance(content, list | tuple) else None


def _replayed(kept: list[Any], calls: Sequence[ToolCallMessage], tool_search: bool) -> list[Block]:
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
                blocks.append(_tool_use(call))
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


def _tool_use(call: ToolCallMessage) -> Block:
    arguments = {} if call.raw_arguments is not None else dict(call.arguments)
    return {"type": "tool_use", "id": _tool_id(call.tool_call_id), "name": call.tool_name, "input": arguments}


def _tool_result(call: ToolCallMessage, call_id: str) -> Block:
    if call.status is ToolCallStatus.OK and not call.parts:  # the usual outcome: its text as it is
        text, is_error = call.content, False
    else:
        outcome = for_model(call)
        native = native_parts(outcome, _IMAGE_TYPES)
        if native is not None:
            content = [_result_block(part) for part in native]
            return {"type": "tool_result", "tool_use_id": call_id, "is_error": outcome.is_error, "content": content}
        text, is_error = outcome.text, outcome.is_error
    block: Block = {"type": "tool_result", "tool_use_id": call_id, "is_error": is_error}
    if text.strip():
        block["content"] = text
    return block


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _result_block(part: TextContent | ImageContent) -> Block:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}


def _tool_specs(tools: Sequence[ToolDefinition], tool_search: bool) -> list[Block]:
    specs: list[Block] = [dict(SEARCH_TOOL)] if tool_search and tools else []
    for tool in tools:
        spec: Block = {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
        if tool.strict is not None:
            spec["strict"] = tool.strict
        if tool.defer_loading and tool_search:
            spec["defer_loading"] = True
        specs.append(spec)
    return specs


def _add_tools(
    body: dict[str, Any],
    request: ModelRequest,
    native_output: bool,
    thinks: bool,
    settings: ModelSettings,
) -> tuple[list[Block], str | None]:
    """The tools of a request with native output (the output tool after the others) or without
    tools (those the history used, declared so it can be read); the output tool's name."""
    tools = _tool_specs(request.tools, request.tool_search)
    choice = _CHOICES[request.tool_choice]
    output_tool = None
    if native_output and request.output is not None:
        output_tool = _output_tool_name(request.output, {t["name"] for t in tools})
        tools.append(_output_tool(request.output, output_tool))
        # With other tools the model must call one of them or the output tool: never free text.
        # Extended thinking allows only auto/none, so then the output tool is merely offered.
        has_tools = bool(request.tools) and request.tool_choice != "none"
        choice = "auto" if thinks else "any" if has_tools else "tool"
    if not tools:
        tools = [
            {"name": name, "description": _HISTORY_TOOL_DESCRIPTION, "input_schema": {"type": "object"}}
            for name in used_tools(request.messages)
        ]
        choice = "none"
    if tools:
        body["tools"] = tools
        body["tool_choice"] = _choice(choice, settings, output_tool if choice == "tool" else None)
    return tools, output_tool


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
