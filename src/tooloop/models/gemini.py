"""Google Gemini adapter (``"google:..."`` / ``"gemini:..."``), on the Gemini API's wire format.

By default requests go out on the lean transport (:mod:`._lean_gemini`): ``POST
{base_url}/v1beta/models/{model}:generateContent`` (plain) or ``:streamGenerateContent?alt=sse``
(streamed), with the headers, timeouts and server-side deadline ``google-genai`` would use, at a
fraction of its client CPU. ``transport="sdk"`` sends them through ``google-genai``'s
``client.aio.models.generate_content`` / ``generate_content_stream`` instead (always the case for a
``client`` you pass, and when a proxy is configured for the URL). Either way the adapter builds
one request body in the wire format and reads the answer as the wire's JSON, with its own retries.

Gemini-only data (thought parts, ``thoughtSignature`` values, Gemini's own function-call ids) is
kept as ``ThinkingPart(provider="google")`` and under the ``"google"`` key of ``provider_data``,
and is sent back to Gemini only. See docs/providers.md.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.metadata
import json
import math
import os
import platform
import random
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, assert_never

from ..errors import ConfigurationError, ModelResponseError, ProviderConnectionError, ProviderError
from ..events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    ModelResponse,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCall,
    Usage,
    UserMessage,
)
from ..outcome import for_model, native_parts
from ._adapter import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, ProviderModel, check_retries, idle_timeout
from ._errors import provider_error, retry_after
from ._lean_gemini import GeminiEvents, GeminiStatusError, GeminiStreamError, LeanGemini
from ._lean_http import ConnectTimeout, ReadTimeout, TransportError
from ._lean_openai import lean_eligible
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings, ToolDefinition
from .payloads import listening
from .portable import ToolBatch, Turn, own_thinking, turns

if TYPE_CHECKING:
    from google import genai

__all__ = ["GeminiModel", "create"]

PROVIDER = "google"
_API_VERSION = "v1beta"
_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_OPTIONS = frozenset({"max_retries", "timeout", "client", "transport"})
# Documented value that tells Gemini 3 to accept a function call it did not sign (history written
# by another provider, or by hand).
_SKIP_SIGNATURE = "skip_thought_signature_validator"
_UNANSWERED = "(No answer to these tool results: the conversation moved on.)"
_TOOL_CHOICE = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
# Finish reasons that mean the model produced something unusable; retrying the request may help.
_BROKEN = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)
_GENERATION = re.compile(r"gemini-(\d+)")
_BAD_NAME = re.compile(r"\.\.|[?&#%\s\x00-\x1f\x7f]")
_MAX_RETRY_AFTER = 60.0  # a longer wait is the caller's decision, not a silent sleep
_SERVER_DEADLINE = 600  # seconds Google may spend on one generation, however slowly it streams


def create(
    model_name: str,
    *,
    provider: str = PROVIDER,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> GeminiModel:
    """Registry factory for ``"google:<model>"`` and ``"gemini:<model>"``.

    Options: ``max_retries`` (default 2), ``timeout`` (seconds without a byte), ``client`` (a
    ready ``genai.Client``), ``transport`` (``"lean"``, the default, or ``"sdk"``: see the module
    docstring).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    return GeminiModel(model_name, base_url=base_url, api_key=api_key, settings=settings, provider=provider, **options)


class GeminiModel(ProviderModel):
    """A Gemini model behind the ``Model`` protocol.

    The API key is ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``; the base URL
    ``base_url``, else ``GOOGLE_GEMINI_BASE_URL``, else Google's. Retryable errors (429, 5xx,
    connection failures before anything streamed) are retried ``max_retries`` times, honouring
    the server's ``Retry-After`` header or ``RetryInfo.retryDelay``. ``transport`` chooses the
    lean path (default) or ``google-genai`` (``"sdk"``; implied by ``client``).
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        client: genai.Client | None = None,
        transport: str = "lean",
    ):
        if transport not in ("lean", "sdk"):
            raise ConfigurationError(f"transport must be 'lean' or 'sdk', not {transport!r}")
        if not model_name or _BAD_NAME.search(model_name):
            raise ConfigurationError(f"not a Gemini model name: {model_name!r}")
        self._max_retries = check_retries(max_retries)
        self._generation = _generation(model_name)
        self._base = base_url or os.environ.get(_BASE_URL_ENV) or _DEFAULT_BASE_URL
        idle = idle_timeout(timeout)
        key = api_key or next((os.environ[name] for name in _KEY_ENV if os.environ.get(name)), None)
        self._lean: LeanGemini | None = None
        self._tools_in: tuple[ToolDefinition, ...] | None = None
        self._tools_out: list[dict[str, Any]] = []
        clients: PerLoop[Any]
        if client is not None:
            from ._gemini_sdk import close_client

            clients = PerLoop(client, None, close_client)
        else:
            clients = self._own_clients(model_name, _checked_key(key), base_url, idle, transport)
        if self._lean is not None and settings is not None:
            _with_extra({"generationConfig": {}}, settings.extra)  # refuse an unsendable field here, not per request
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=clients,
            secret=key,
            attempts=self._max_retries + 1,
            idle_timeout=idle,
        )

    def _own_clients(self, name: str, key: str, base_url: str | None, idle: float, transport: str) -> PerLoop[Any]:
        # The SDK sends its timeout as Google's X-Server-Timeout, a deadline for the whole
        # generation on Google's side; that deadline stays generous.
        deadline = str(max(_SERVER_DEADLINE, math.ceil(idle)))
        if transport == "lean" and lean_eligible(self._base):
            resource = name if name.startswith(("models/", "tunedModels/")) else f"models/{name}"
            connect = min(idle, DEFAULT_CONNECT_TIMEOUT)
            self._lean = LeanGemini(
                self._base,
                f"{_API_VERSION}/{resource}",
                _headers(key, deadline),
                connect_timeout=connect,
                read_timeout=idle,
            )
            return self._lean.pools
        from ._gemini_sdk import client_factory, close_client

        make = client_factory(key, base_url, idle, deadline)
        return PerLoop(make(), make, close_client)

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return self._base

    @property
    def transport(self) -> str:
        """``"lean"`` or ``"sdk"``: the path this model's requests take."""
        return "lean" if self._lean is not None else "sdk"

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        body = self._body(request, settings)
        sent = _with_extra(body, settings.extra) if self._lean is not None else body
        attempt = 0
        while True:
            reader = _Reader(self._name, on_event)
            try:
                return await self._once(sent, settings.extra, stream, reader)
            except ProviderError:
                raise
            except Exception as exc:
                error = self._error(exc, attempt + 1)
                if error is None:
                    raise
                delay = _backoff(error, attempt, self._requested_wait(exc))
                if delay is None or attempt >= self._max_retries or reader.emitted:
                    self._fail(exc, attempt + 1)
            await asyncio.sleep(delay)
            attempt += 1

    async def _once(
        self, body: dict[str, Any], extra: Mapping[str, Any], stream: bool, reader: _Reader
    ) -> ModelResponse:
        if self._lean is None:
            return await self._once_sdk(body, extra, stream, reader)
        self._sent(body)
        if not stream:
            data = await self._lean.generate(body)
            self._received(data)
            reader.add(data)
            return reader.finish(streamed=False)
        events = await self._lean.stream(body)
        if listening():
            return await self._read_stream(aiter(events), reader, events)
        try:
            await events.read(reader.add)  # the hot path: no iterator between the body and the reader
        except BaseException:
            events.close()  # abandoned half way: the connection's state is unknown
            raise
        return reader.finish(streamed=True)

    async def _once_sdk(
        self, body: dict[str, Any], extra: Mapping[str, Any], stream: bool, reader: _Reader
    ) -> ModelResponse:
        from . import _gemini_sdk as sdk

        client = self._clients.get()
        args = sdk.arguments(body, extra)
        self._sent({"model": self._name, **args})
        if not stream:
            data = await sdk.generate(client, self._name, args)
            self._received(data)
            reader.add(data)
            return reader.finish(streamed=False)
        return await self._read_stream(sdk.stream(client, self._name, args), reader, None)

    async def _read_stream(
        self, chunks: AsyncIterator[Any], reader: _Reader, events: GeminiEvents | None
    ) -> ModelResponse:
        add = reader.add
        try:
            async for chunk in self._tapped(chunks):
                add(chunk)
        except BaseException:
            if events is not None:
                events.close()  # abandoned half way: the connection's state is unknown
            raise
        return reader.finish(streamed=True)

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        if isinstance(exc, TransportError):
            return self._transport_error(exc, attempts, timed_out=isinstance(exc, ReadTimeout | ConnectTimeout))
        if isinstance(exc, GeminiStatusError | GeminiStreamError):
            return self._table(exc.status, exc.headers, exc.body)
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # a body or event that is not JSON
            return ModelResponseError(f"Gemini sent data that is not valid JSON: {exc}", provider=self.provider)
        if "google.genai" not in sys.modules:  # only the SDK path raises the SDK's exceptions
            return None
        from ._gemini_sdk import sdk_failure

        failure = sdk_failure(exc)
        if failure is None:
            return None
        if failure.transport is not None:
            return self._transport_error(exc, attempts, timed_out=failure.transport == "timeout")
        return self._table(failure.status, failure.headers, failure.body)

    def _requested_wait(self, exc: Exception) -> float | None:
        """Seconds the server asked to wait before trying again (Retry-After, RetryInfo), if it said."""
        if isinstance(exc, GeminiStatusError):
            return retry_after(exc.headers, exc.body)
        if "google.genai" in sys.modules:
            from ._gemini_sdk import sdk_failure

            failure = sdk_failure(exc)
            if failure is not None and failure.transport is None:
                return retry_after(failure.headers, failure.body)
        return None

    def _table(self, status: int | None, headers: Mapping[str, str] | None, body: Any) -> ProviderError:
        """Google's error JSON (``{"error": {"code", "message", "status", "details"}}``) through the error table."""
        error = body.get("error", body) if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        message = error.get("message")
        return provider_error(
            self.provider,
            status=status,
            codes=[error.get("status"), *_reasons(body)],
            message=message if isinstance(message, str) and message else str(body),
            headers=headers,
            body=body,
            secret=self._secret,
        )

    # -- request body (the wire format) ----------------------------------------------------------

    def _body(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        contents, system = _contents(request.messages, sign_foreign=self._generation >= 3)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
        if request.tools:
            body["tools"] = self._tools(request.tools)
            if request.tool_choice != "auto":
                body["toolConfig"] = {"functionCallingConfig": {"mode": _TOOL_CHOICE[request.tool_choice]}}
        body["generationConfig"] = _generation_config(request, settings, self._generation)
        return body

    def _tools(self, tools: tuple[ToolDefinition, ...]) -> list[dict[str, Any]]:
        if tools is not self._tools_in:  # the loop sends the same tuple every turn
            # The SDK writes a declaration's fields with their proto names (parameters_json_schema).
            declarations = [
                {"name": t.name, "description": t.description, "parameters_json_schema": dict(t.parameters)}
                for t in tools
            ]
            self._tools_out = [{"functionDeclarations": declarations}]
            self._tools_in = tools
        return self._tools_out


def _checked_key(key: str | None) -> str:
    if not key:
        raise ConfigurationError(
            "no Gemini API key: pass api_key=... or set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment"
        )
    if any(c in key for c in "\r\n\0"):
        raise ConfigurationError("the Gemini API key contains a line break or NUL")
    return key


def _headers(key: str, deadline: str) -> dict[str, str]:
    """The headers ``google-genai`` sends, with tooloop as the client library."""
    agent = f"tooloop/{importlib.metadata.version('tooloop')} gl-python/{platform.python_version()}"
    return {
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "content-type": "application/json",
        "x-goog-api-key": key,
        "x-server-timeout": deadline,
        "user-agent": agent,
        "x-goog-api-client": agent,
    }


def _generation(model_name: str) -> int:
    """The Gemini major version in the name (``gemini-3-pro`` -> 3); unknown names count as current."""
    match = _GENERATION.search(model_name)
    return int(match.group(1)) if match else 99


# ----------------------------------------------------------------------------------------------
# Request


def _contents(messages: Sequence[Message], *, sign_foreign: bool) -> tuple[list[dict[str, Any]], list[str]]:
    contents: list[dict[str, Any]] = []
    system: list[str] = []
    for item in turns(messages):
        if isinstance(item, SystemMessage):
            system.append(item.text)
            continue
        for content in _turn(item, sign_foreign):
            _add(contents, content["role"], content["parts"])
    return contents, system


def _turn(item: Turn, sign_foreign: bool) -> list[dict[str, Any]]:
    if isinstance(item, UserMessage):
        return [{"role": "user", "parts": [{"text": item.text}]}]
    if isinstance(item, AssistantMessage):
        return [{"role": "model", "parts": _assistant_parts(item)}]
    if isinstance(item, ToolBatch):
        return _batch_contents(item, sign_foreign)
    if isinstance(item, SystemMessage):
        return []  # gathered into ``system_instruction`` by the caller
    assert_never(item)


def _add(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Append a turn so that roles alternate, as Gemini requires.

    Two turns of one role merge, except user text after tool results (a run that stopped before
    the model answered them): Gemini reads text merged into a results turn as part of the results,
    so a short model turn goes between them.
    """
    if not parts:
        return
    last = contents[-1] if contents else None
    if last is None or last["role"] != role:
        contents.append({"role": role, "parts": parts})
    elif role == "user" and any("functionResponse" in p for p in last["parts"]):
        contents.append({"role": "model", "parts": [{"text": _UNANSWERED}]})
        contents.append({"role": role, "parts": parts})
    else:
        last["parts"].extend(parts)


def _thought_parts(thinking: Sequence[ThinkingPart]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if not thinking:
        return parts
    for part in own_thinking(thinking, PROVIDER):
        thought: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature:
            thought["thoughtSignature"] = _wire_signature(part.signature)
        parts.append(thought)
    return parts


def _text_part(text: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    signature = data.get("text_signature")
    if not text and not signature:
        return []
    part: dict[str, Any] = {"text": text}
    if signature:
        part["thoughtSignature"] = _wire_signature(signature)
    return [part]


def _assistant_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    data = message.provider_data.get(PROVIDER) or {}
    return _thought_parts(message.thinking) + _text_part(message.text or message.refusal or "", data)


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})


def _batch_contents(batch: ToolBatch, sign_foreign: bool) -> list[dict[str, Any]]:
    first = batch.first
    data = first.provider_data.get(PROVIDER) or {}
    signatures: Mapping[str, str] = data.get("signatures") or {}
    native_ids = set(data.get("ids") or ())
    parts = _thought_parts(first.thinking) + _text_part(batch.text, data)
    results: list[dict[str, Any]] = []
    for index, call in enumerate(batch.calls):
        function_call: dict[str, Any] = {"name": call.tool_name, "args": dict(call.arguments)}
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
        if call.tool_call_id in native_ids:
            function_call["id"] = response["id"] = call.tool_call_id
        part: dict[str, Any] = {"functionCall": function_call}
        signature = signatures.get(call.tool_call_id)
        if signature:
            part["thoughtSignature"] = _wire_signature(signature)
        elif index == 0 and sign_foreign and not signatures:
            part["thoughtSignature"] = _SKIP_SIGNATURE
        parts.append(part)
        results.append({"functionResponse": response})
    return [{"role": "model", "parts": parts}, {"role": "user", "parts": results}]


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


def _with_extra(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
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
_TO_URLSAFE = str.maketrans("+/", "-_")


def _urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


def _wire_signature(signature: str) -> str:
    """A stored signature as the SDK sends it: URL-safe base64 with padding."""
    if len(signature) % 4 == 0 and "+" not in signature and "/" not in signature:
        return signature
    return _urlsafe(base64.urlsafe_b64decode(signature.translate(_TO_URLSAFE) + "=" * (-len(signature) % 4)))


# ----------------------------------------------------------------------------------------------
# Response


class _Reader:
    """Accumulates one response from its chunks (a plain response is a single chunk)."""

    def __init__(self, model_name: str, on_event: EventHandler | None):
        self.on_event = on_event
        self.emitted = False
        self.model = model_name
        self.text: list[str] = []
        self.thinking: list[ThinkingPart] = []
        self.thought: list[str] = []
        self.calls: list[ToolCall] = []
        self.signatures: dict[str, str] = {}
        self.native_ids: list[str] = []
        self.text_signature: str | None = None
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block: str | None = None
        self.usage: dict[str, Any] | None = None

    def _emit(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> None:
        if self.on_event is not None:
            self.emitted = True
            self.on_event(event)

    def add(self, chunk: Any) -> None:
        """Read one response (or one chunk of a stream) in the wire's JSON."""
        if not isinstance(chunk, dict):
            raise ModelResponseError(
                f"Gemini sent a response that is not a JSON object: {chunk!r:.200}", provider=PROVIDER
            )
        usage = chunk.get("usageMetadata")
        if usage is not None:
            self.usage = usage
        version = chunk.get("modelVersion")
        if version:
            self.model = version
        feedback = chunk.get("promptFeedback")
        if feedback and feedback.get("blockReason"):
            self.block = " ".join(filter(None, [feedback["blockReason"], feedback.get("blockReasonMessage")]))
        candidates = chunk.get("candidates")
        if not candidates:
            return
        candidate = candidates[0]
        content = candidate.get("content")
        for part in (content.get("parts") if content else None) or ():
            self._part(part)
        reason = candidate.get("finishReason")
        if reason:
            self.finish_reason = reason
            self.finish_message = candidate.get("finishMessage")

    def _part(self, part: dict[str, Any]) -> None:
        raw = part.get("thoughtSignature")
        signature = raw.translate(_TO_URLSAFE) if raw else None  # stored as the SDK decodes it: URL-safe
        text = part.get("text")
        if part.get("thought"):
            if text:
                self.thought.append(text)
                self._emit(ThinkingDelta(text))
            if signature:
                self._close_thought(signature)
            return
        if self.thought:
            self._close_thought(None)
        call = part.get("functionCall")
        if call is not None:
            self._call(call, signature)
            return
        if text:
            self.text.append(text)
            self._emit(TextDelta(text))
        if signature:
            self.text_signature = signature

    def _close_thought(self, signature: str | None) -> None:
        if self.thought or signature:
            self.thinking.append(ThinkingPart("".join(self.thought), signature=signature, provider=PROVIDER))
            self.thought = []

    def _call(self, call: dict[str, Any], signature: str | None) -> None:
        native = call.get("id")
        call_id = native or f"call_{os.urandom(12).hex()}"
        if native:
            self.native_ids.append(native)
        if signature:
            self.signatures[call_id] = signature
        arguments = dict(call.get("args") or {})
        name = call.get("name")
        self.calls.append(ToolCall(call_id, name or "", arguments))
        if self.on_event is not None:
            self._emit(ToolCallDelta(len(self.calls) - 1, call_id, name, json.dumps(arguments)))

    def finish(self, *, streamed: bool) -> ModelResponse:
        self._close_thought(None)
        reason = self.finish_reason
        if self.block is None and reason is None:
            if streamed:
                raise ProviderConnectionError("the Gemini stream ended before the response finished", provider=PROVIDER)
            raise ModelResponseError("Gemini returned no candidate and no block reason", provider=PROVIDER)
        if reason in _BROKEN:
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ModelResponseError(f"Gemini stopped with {reason}{detail}", provider=PROVIDER)
        stop = StopReason.TOOL_USE if self.calls else StopReason.END_TURN
        refusal = None
        if self.block is not None:
            stop, refusal = StopReason.REFUSAL, f"prompt blocked: {self.block}"
        elif reason in _REFUSALS:
            stop, refusal = StopReason.REFUSAL, self.finish_message or f"response blocked: {reason}"
        elif reason == "MAX_TOKENS":
            stop = StopReason.MAX_TOKENS
        return ModelResponse(
            "".join(self.text),
            tuple(self.calls),
            stop,
            _usage(self.usage, len(self.calls)),
            thinking=tuple(self.thinking),
            refusal=refusal,
            model=self.model,
            provider_data=self._provider_data(),
        )

    def _provider_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.signatures:
            data["signatures"] = self.signatures
        if self.native_ids:
            data["ids"] = self.native_ids
        if self.text_signature:
            data["text_signature"] = self.text_signature
        return {PROVIDER: data} if data else {}


def _usage(meta: Mapping[str, Any] | None, tool_calls: int) -> Usage:
    if meta is None:
        return Usage(tool_calls=tool_calls)
    thoughts = meta.get("thoughtsTokenCount") or 0
    return Usage(
        input_tokens=(meta.get("promptTokenCount") or 0) + (meta.get("toolUsePromptTokenCount") or 0),
        output_tokens=(meta.get("candidatesTokenCount") or 0) + thoughts,
        tool_calls=tool_calls,
        cache_read_tokens=meta.get("cachedContentTokenCount") or 0,
        reasoning_tokens=thoughts,
    )


# ----------------------------------------------------------------------------------------------
# Errors


def _reasons(details: Any) -> list[str]:
    """The ``reason`` of each ``ErrorInfo`` in a Google error body (e.g. ``API_KEY_INVALID``)."""
    error = details.get("error", details) if isinstance(details, dict) else None
    found = error.get("details") if isinstance(error, dict) else None
    return [d["reason"] for d in found or () if isinstance(d, dict) and isinstance(d.get("reason"), str)]


def _backoff(error: ProviderError, attempt: int, requested: float | None) -> float | None:
    """Seconds to wait before retrying (``requested`` by the server, if it said), or None when
    retrying is pointless."""
    if not error.retryable:
        return None
    if requested is not None:
        return requested if requested <= _MAX_RETRY_AFTER else None
    return float(min(0.5 * 2**attempt, 8.0) * (0.5 + random.random() / 2))
