"""Building a Gemini ``generateContent`` request body, in the wire format (camelCase JSON).

Gemini-only data (thought parts, ``thoughtSignature`` values, Gemini's own function-call ids) is
sent back to Gemini only; roles alternate as Gemini requires; ``settings.extra`` fields go where
the SDK puts them (:func:`with_extra`).
"""

from __future__ import annotations

import base64
import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

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
from ...outcome import for_model, native_parts
from ..base import MemoKey, ModelRequest, ModelSettings, ToolDefinition
from ..portable import BatchMemo, ToolBatch, own_thinking, turns

__all__ = ["PROVIDER", "TO_URLSAFE", "GeminiRequest", "generation", "with_extra"]

PROVIDER = "google"
# Documented value that tells Gemini 3 to accept a function call it did not sign (history written
# by another provider, or by hand).
_SKIP_SIGNATURE = "skip_thought_signature_validator"
_UNANSWERED = "(No answer to these tool results: the conversation moved on.)"
_TOOL_CHOICE = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_GENERATION = re.compile(r"gemini-(\d+)")


class GeminiRequest:
    """The request bodies of one model: its Gemini generation, its tool list encoded once."""

    def __init__(self, model_name: str) -> None:
        self._generation = generation(model_name)
        self._tools_in: tuple[ToolDefinition, ...] | None = None
        self._tools_out: list[dict[str, Any]] = []
        self._sent: MemoKey[_Sent] = MemoKey("gemini batches")

    def body(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        """The request body for ``request`` with the merged ``settings`` (``settings.extra`` not yet added)."""
        contents, system = self._contents(request)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
        if request.tools:
            body["tools"] = self._tools(request.tools)
            if request.tool_choice != "auto":
                body["toolConfig"] = {"functionCallingConfig": {"mode": _TOOL_CHOICE[request.tool_choice]}}
        body["generationConfig"] = _generation_config(request, settings, self._generation)
        return body

    def _contents(self, request: ModelRequest) -> tuple[list[dict[str, Any]], list[str]]:
        """The ``contents`` and system texts of the request's messages: in a run, those of the
        messages its last request sent are taken as they were, and only the messages after them
        converted (every request sends the whole history again)."""
        sign_foreign = self._generation >= 3
        if request.memo is None:
            return _contents(request.messages, BatchMemo(), [], [], sign_foreign)
        sent = request.memo.part(self._sent, _Sent)
        messages = tuple(request.messages)  # a transcript's every index, slice and len is Python code
        start = sent.converted(messages)
        if start:
            contents, system = list(sent.contents), list(sent.system)
            _contents(messages[start:], sent, contents, system, sign_foreign)
        else:
            contents, system = _contents(messages, sent, [], [], sign_foreign)
        sent.keep(messages, contents, system)
        return contents, system

    def _tools(self, tools: tuple[ToolDefinition, ...]) -> list[dict[str, Any]]:
        if tools != self._tools_in:  # the same definitions in every request (compared by identity first)
            # The SDK writes a declaration's fields with their proto names (parameters_json_schema).
            declarations = [
                {"name": t.name, "description": t.description, "parameters_json_schema": dict(t.parameters)}
                for t in tools
            ]
            self._tools_out = [{"functionDeclarations": declarations}]
            self._tools_in = tools
        return self._tools_out


def generation(model_name: str) -> int:
    """The Gemini major version in the name (``gemini-3-pro`` -> 3); unknown names count as current."""
    match = _GENERATION.search(model_name)
    return int(match.group(1)) if match else 99


class _Sent(BatchMemo[list[dict[str, Any]]]):
    """What one model keeps in a run's memo: its converted tool batches, and the messages the
    run's last request sent with their ``contents`` and system texts. Nothing here is changed once
    made (a merge of two turns makes a new one)."""

    __slots__ = ("contents", "messages", "system")

    def __init__(self) -> None:
        super().__init__()
        self.messages: tuple[Message, ...] = ()
        self.contents: list[dict[str, Any]] = []
        self.system: list[str] = []

    def converted(self, messages: tuple[Message, ...]) -> int:
        """How many leading ``messages`` are those sent last (the same objects), 0 if not all of them
        are, or if the next message continues the last one's tool batch."""
        kept = self.messages
        count = len(kept)
        total = len(messages)
        if not count or total < count or not all(map(operator.is_, kept, messages)):
            return 0
        if total > count:
            after, last = messages[count], kept[-1]
            if isinstance(after, ToolCallMessage) and isinstance(last, ToolCallMessage):
                return 0 if after.batch_id == last.batch_id else count
        return count

    def keep(self, messages: tuple[Message, ...], contents: list[dict[str, Any]], system: list[str]) -> None:
        self.messages = messages
        self.contents = contents
        self.system = system


def _contents(
    messages: Sequence[Message],
    batches: BatchMemo[list[dict[str, Any]]],
    contents: list[dict[str, Any]],
    system: list[str],
    sign_foreign: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """``contents`` and ``system`` (the system texts) with those of ``messages`` added; a tool
    batch's contents made once for all the requests that send it (``batches``: its messages never
    change). No turn already in ``contents`` is changed: a merge replaces the last one."""
    for item in turns(messages):
        if isinstance(item, ToolBatch):
            made = batches.get(item.calls)
            if made is None:
                made = batches.put(item.calls, _batch_contents(item, sign_foreign))
            calls, results = made
            _add(contents, "model", calls["parts"], calls)
            _add(contents, "user", results["parts"], results)  # after a model turn: never merged
        elif isinstance(item, UserMessage):
            parts = [_user_part(part) for part in item.parts] if item.parts else [{"text": item.text}]
            _add(contents, "user", parts)
        elif isinstance(item, AssistantMessage):
            _add(contents, "model", _assistant_parts(item))
        elif isinstance(item, SystemMessage):
            system.append(item.text)  # gathered into ``system_instruction`` by the caller
        else:
            assert_never(item)
    return contents, system


def _user_part(part: UserPart) -> dict[str, Any]:
    """A user message's part: ``text``, or ``inlineData`` (images, audio and documents alike)."""
    if isinstance(part, TextContent):
        return {"text": part.text}
    if isinstance(part, ImageContent | AudioContent | DocumentContent):
        return {"inlineData": {"mimeType": part.mime_type, "data": part.data}}
    assert_never(part)


def _add(
    contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]], made: dict[str, Any] | None = None
) -> None:
    """Append a turn (``made``, when it is already one) so that roles alternate, as Gemini requires.

    Two turns of one role merge (into a new turn: the last one may be a remembered one), except
    user text after tool results (a run that stopped before the model answered them): Gemini reads
    text merged into a results turn as part of the results, so a short model turn goes between them.
    """
    if not parts:
        return
    last = contents[-1] if contents else None
    if last is None or last["role"] != role:
        contents.append(made or {"role": role, "parts": parts})
    elif role == "user" and any("functionResponse" in p for p in last["parts"]):
        contents.append({"role": "model", "parts": [{"text": _UNANSWERED}]})
        contents.append(made or {"role": role, "parts": parts})
    else:
        contents[-1] = {"role": role, "parts": last["parts"] + parts}


def _thought_parts(thinking: Sequence[ThinkingPart]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in own_thinking(thinking, PROVIDER):
        thought: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature:
            thought["thoughtSignature"] = _wire_signature(part.signature)
        parts.append(thought)
    return parts


def _lead_parts(thinking: Sequence[ThinkingPart], text: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parts before a model turn's calls: its thoughts, then its text (or a signature alone)."""
    parts = _thought_parts(thinking) if thinking else []
    signature = data.get("text_signature") if data else None
    if text or signature:
        part: dict[str, Any] = {"text": text}
        if signature:
            part["thoughtSignature"] = _wire_signature(signature)
        parts.append(part)
    return parts


def _assistant_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    data = message.provider_data.get(PROVIDER) or {}
    return _lead_parts(message.thinking, message.text or message.refusal or "", data)


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
_OK = ToolCallStatus.OK


def _batch_contents(batch: ToolBatch, sign_foreign: bool) -> list[dict[str, Any]]:
    calls = batch.calls
    first = calls[0]
    data = first.provider_data.get(PROVIDER) or {}
    parts = _lead_parts(first.thinking, first.message, data) if first.thinking or first.message or data else []
    start = len(parts)
    results: list[dict[str, Any]] = []
    for call in calls:
        name = call.tool_name
        arguments = call.arguments  # a FrozenDict, written as a dict: sent as it is, not copied
        args = arguments if isinstance(arguments, dict) else dict(arguments)
        parts.append({"functionCall": {"name": name, "args": args}})
        if call.status is _OK and not call.parts:  # the usual outcome: its text as it is
            response: dict[str, Any] = {"name": name, "response": {"result": call.content}}
        else:
            response = _response(call)
        results.append({"functionResponse": response})
    if data:
        _add_native(data, calls, parts[start:], results)
    if sign_foreign and not data.get("signatures"):  # Gemini 3 accepts unsigned calls so marked
        parts[start]["thoughtSignature"] = _SKIP_SIGNATURE
    return [{"role": "model", "parts": parts}, {"role": "user", "parts": results}]


def _response(call: ToolCallMessage) -> dict[str, Any]:
    """A call's ``functionResponse`` (without Gemini's own id) for any outcome."""
    outcome = for_model(call)
    response: dict[str, Any] = {
        "name": call.tool_name,
        "response": {"error" if outcome.is_error else "result": outcome.text},
    }
    images = native_parts(outcome, _IMAGE_TYPES) if outcome.parts else None
    if images is not None:  # the text form (placeholders included) stays the result
        # written with the proto field names, as the SDK writes a function response's parts
        response["parts"] = [
            {"inline_data": {"mime_type": p.mime_type, "data": _urlsafe(base64.b64decode(p.data))}}
            for p in images
            if isinstance(p, ImageContent)
        ]
    return response


def _add_native(
    data: Mapping[str, Any],
    calls: Sequence[ToolCallMessage],
    parts: list[dict[str, Any]],
    results: list[dict[str, Any]],
) -> None:
    """Gemini's own signatures and ids (kept in ``data``) added to the batch's calls and results."""
    signatures: Mapping[str, str] | None = data.get("signatures")
    if signatures:
        for index, call in enumerate(calls):
            signature = signatures.get(call.tool_call_id)
            if signature:
                parts[index]["thoughtSignature"] = _wire_signature(signature)
    native_ids = data.get("ids")
    if native_ids:
        for index, call in enumerate(calls):
            call_id = call.tool_call_id
            if call_id in native_ids:
                parts[index]["functionCall"]["id"] = results[index]["functionResponse"]["id"] = call_id


def _generation_config(request: ModelRequest, settings: ModelSettings, generation: int) -> dict[str, Any]:
    config: dict[str, Any] = {}
    # Before Gemini 3, JSON mode and function calling cannot be combined in one request.
    if request.output is not None and (not request.tools or generation >= 3):
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = dict(request.output.schema)
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        config["maxOutputTokens"] = settings.max_tokens
    if settings.top_p is not None:
        config["topP"] = settings.top_p
    if settings.stop is not None:
        config["stopSequences"] = list(settings.stop)
    if settings.seed is not None:
        config["seed"] = settings.seed
    return config


# Where the SDK puts each ``GenerateContentConfig`` field it sends as given: in generationConfig
# (True) or at the top of the body (False). Fields it transforms first are the SDK path's alone.
_EXTRA_FIELDS: dict[str, tuple[str, bool]] = {
    name: (re.sub(r"_(.)", lambda m: m.group(1).upper(), name), inner)
    for names, inner in (
        (
            "temperature top_p top_k candidate_count max_output_tokens stop_sequences response_logprobs logprobs "
            "presence_penalty frequency_penalty seed response_mime_type response_json_schema response_modalities "
            "media_resolution thinking_config enable_enhanced_civic_answers audio_transcription_config",
            True,
        ),
        ("safety_settings tool_config labels cached_content service_tier store", False),
    )
    for name in names.split()
}


def with_extra(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with ``settings.extra`` (the SDK's config names, or their camelCase) where the SDK puts them."""
    if not extra:
        return body
    body = {**body, "generationConfig": dict(body["generationConfig"])}
    for name, value in extra.items():
        field = _EXTRA_FIELDS.get(_CAMEL.sub("_", name).lower())
        if field is None:
            known = ", ".join(sorted(_EXTRA_FIELDS))
            raise ConfigurationError(
                f"settings.extra field {name!r} is not sent by the lean Gemini transport (it sends: {known}); "
                "use transport='sdk' for the SDK's other config fields"
            )
        wire, inner = field
        if wire == "cachedContent" and isinstance(value, str) and "/" not in value:
            value = f"cachedContents/{value}"  # as the SDK completes a bare cache id
        (body["generationConfig"] if inner else body)[wire] = value
    return body


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
TO_URLSAFE = str.maketrans("+/", "-_")


def _urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


def _wire_signature(signature: str) -> str:
    """A stored signature as the SDK sends it: URL-safe base64 with padding."""
    if len(signature) % 4 == 0 and "+" not in signature and "/" not in signature:
        return signature
    return _urlsafe(base64.urlsafe_b64decode(signature.translate(TO_URLSAFE) + "=" * (-len(signature) % 4)))
