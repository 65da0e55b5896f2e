"""Building a Chat Completions request body from the conversation, as plain dicts.

What differs between servers on the request side is a named option with a per-provider default
in the registry: ``max_tokens_field``, ``raw_invalid_arguments``, ``tool_id_max_length``,
``reasoning_field``, and ``system_role``, ``native_output``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, assert_never

from ...errors import ConfigurationError
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
from ...outcome import for_model
from ..base import MemoKey, ModelRequest, ModelSettings, OutputSchema, ToolDefinition
from ..inputs import ALL_INPUTS, data_url, decoded_text, file_name, kinds_text, refuse, wav_or_mp3
from ..portable import BatchMemo, IdMapper, ToolBatch, Turn, batch_memo, encode_arguments, own_thinking, turns
from .reasoning import DETAILS, content_chunks
from .schema import strict_schema

__all__ = ["REASONING_FIELDS", "ChatRequest"]

REASONING_FIELDS = ("reasoning_content", "reasoning", "content")
"""Where a server reads reasoning back: a text field of the assistant message, or ``"content"``
(``thinking`` chunks ahead of the text, Mistral's form)."""


class ChatRequest:
    """The request bodies of one model: its name, its server's quirks, its tool list encoded once."""

    def __init__(
        self,
        model: str,
        provider: str,
        *,
        native_output: bool = True,
        system_role: Literal["system", "developer"] = "system",
        max_tokens_field: str = "max_tokens",
        raw_invalid_arguments: bool = False,
        tool_id_max_length: int | None = None,
        tool_id_length: int | None = None,
        reasoning_field: str | None = None,
        input_kinds: frozenset[str] = ALL_INPUTS,
    ) -> None:
        if system_role not in ("system", "developer"):
            raise ConfigurationError(f"system_role must be 'system' or 'developer', not {system_role!r}")
        if reasoning_field is not None and reasoning_field not in REASONING_FIELDS:
            raise ConfigurationError(
                f"reasoning_field must be one of {REASONING_FIELDS} or None, not {reasoning_field!r}"
            )
        self.model = model
        self.provider = provider
        self._native_output = native_output
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field
        self._raw_arguments = raw_invalid_arguments
        self._id_limit = tool_id_max_length
        self._id_length = tool_id_length
        self._reasoning_field = reasoning_field
        self.input_kinds = input_kinds
        self._tools_in: tuple[ToolDefinition, ...] | None = None
        self._tools_out: list[dict[str, Any]] = []
        self._batches: MemoKey[BatchMemo[list[dict[str, Any]]]] = MemoKey("openai_chat batches")

    def body(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        """The request body for ``request`` with the merged ``settings``."""
        messages = self._messages(request.messages, batch_memo(request, self._batches))
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = self._tools(request.tools)
            if request.tool_choice != "auto":
                body["tool_choice"] = request.tool_choice
            if settings.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = settings.parallel_tool_calls
        if request.output is not None and self._native_output:
            body["response_format"] = _response_format(request.output)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body[self._max_tokens_field] = settings.max_tokens
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.stop:
            body["stop"] = list(settings.stop)
        if settings.seed is not None:
            body["seed"] = settings.seed
        if request.cache_key is not None and self.provider == "openai" and settings.cache in (None, "auto"):
            body["prompt_cache_key"] = request.cache_key  # extra, below, may set another
        if settings.extra:
            body.update(settings.extra)
        return body

    def _tools(self, tools: tuple[ToolDefinition, ...]) -> list[dict[str, Any]]:
        if tools != self._tools_in:  # the same definitions every turn (compared by identity first)
            self._tools_out = [_tool(t) for t in tools]
            self._tools_in = tools
        return self._tools_out

    def _messages(self, messages: Sequence[Message], batches: BatchMemo[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        ids: Callable[[str], str] = str
        if self._id_length:  # Mistral's rule: exactly this many letters and digits
            ids = IdMapper("a-zA-Z0-9", self._id_length, "", min_length=self._id_length)
        elif self._id_limit:
            ids = IdMapper(max_length=self._id_limit)
        out: list[dict[str, Any]] = []
        for item in turns(messages):
            if isinstance(item, ToolBatch):  # made once for every request of the run that sends it
                made = batches.get(item.calls)
                if made is None:  # a batch's messages never change, nor do the ids (a rewrite depends on the id alone)
                    made = batches.put(item.calls, self._batch(item, ids))
                out.extend(made)  # the list copied; no message in it is changed afterwards
            else:
                out.extend(self._turn(item, ids))
        return out

    def _turn(self, item: Turn, ids: Callable[[str], str]) -> list[dict[str, Any]]:
        if isinstance(item, ToolBatch):
            return self._batch(item, ids)
        if isinstance(item, UserMessage):
            content = [self._part(part) for part in item.parts] if item.parts else item.text
            return [{"role": "user", "content": content}]
        if isinstance(item, AssistantMessage):
            turn = {"role": "assistant", "content": _assistant_text(item)}
            return [self._with_reasoning(turn, item.thinking, item.provider_data)]
        if isinstance(item, SystemMessage):
            return [{"role": self._system_role, "content": item.text}]
        assert_never(item)

    def _part(self, part: UserPart) -> dict[str, Any]:
        """A user message's content part: ``text``, ``image_url``, ``input_audio`` or ``file``."""
        if isinstance(part, TextContent):
            return {"type": "text", "text": part.text}
        if isinstance(part, DocumentContent) and (text := decoded_text(part)) is not None:
            # as text: most compatible servers have no file input, and every model reads text
            return {"type": "text", "text": f'<document name="{file_name(part)}">\n{text}\n</document>'}
        label = f"{self.provider} model {self.model!r}"
        if part.kind not in self.input_kinds:
            raise refuse(part, label, kinds_text(self.input_kinds))
        if isinstance(part, ImageContent):
            return {"type": "image_url", "image_url": {"url": data_url(part)}}
        if isinstance(part, AudioContent):
            return {"type": "input_audio", "input_audio": {"data": part.data, "format": wav_or_mp3(part, label)}}
        if isinstance(part, DocumentContent):
            return {"type": "file", "file": {"filename": file_name(part), "file_data": data_url(part)}}
        assert_never(part)

    def _batch(self, batch: ToolBatch, ids: Callable[[str], str]) -> list[dict[str, Any]]:
        """One assistant turn with its tool calls, then one ``tool`` message per call, in order.

        Arguments that were not valid JSON go back as they came where the server keeps them as
        text (``raw_invalid_arguments``, OpenAI itself: the model sees its mistake); other servers
        often parse them while building the prompt, so they get ``{}`` and the error result says
        what was wrong.
        """
        calls = []
        results = []
        for call in batch.calls:
            call_id = ids(call.tool_call_id)
            function = {"name": call.tool_name, "arguments": _arguments(call, self._raw_arguments)}
            calls.append({"id": call_id, "type": "function", "function": function})
            content = call.content if call.status is ToolCallStatus.OK else for_model(call).text
            results.append({"role": "tool", "tool_call_id": call_id, "content": content})
        turn = {"role": "assistant", "content": batch.text or None, "tool_calls": calls}
        first = batch.first
        return [self._with_reasoning(turn, first.thinking, first.provider_data), *results]

    def _with_reasoning(
        self, turn: dict[str, Any], thinking: tuple[ThinkingPart, ...], data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """An assistant turn with its reasoning, where this server reads it back.

        ``reasoning_field`` names where: a text field, or ``"content"`` (thinking chunks ahead of
        the text). ``reasoning_details`` this provider sent go back as they came.
        """
        own = data.get(self.provider) if data else None
        if own and own.get(DETAILS):
            turn[DETAILS] = own[DETAILS]
        if self._reasoning_field is None or not thinking:
            return turn
        parts = [part for part in own_thinking(thinking, self.provider) if not part.redacted and part.text]
        if not parts:
            return turn
        if self._reasoning_field == "content":
            turn["content"] = content_chunks(parts, turn["content"])
        else:
            turn[self._reasoning_field] = "".join(part.text for part in parts)
        return turn


def _assistant_text(message: AssistantMessage) -> str:
    if message.refusal and message.refusal not in message.text:
        return f"{message.text}\n{message.refusal}" if message.text else message.refusal
    return message.text


def _arguments(call: ToolCallMessage, raw: bool) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments if raw else "{}"
    return encode_arguments(call.arguments)


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": strict_schema(tool.parameters) if tool.strict else _plain(tool.parameters),
    }
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _response_format(output: OutputSchema) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "name": _SCHEMA_NAME.sub("_", output.name)[:64] or "output",
        "schema": strict_schema(output.schema) if output.strict else _plain(output.schema),
        "strict": output.strict,
    }
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def _plain(value: Any) -> Any:
    """``value`` with every mapping a plain dict and every tuple a list, ready for the SDK's JSON encoder."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
