"""Google Gemini adapter on the official ``google-genai`` SDK (``"google:..."`` / ``"gemini:..."``).

Requests go through ``client.aio.models.generate_content`` (plain) or ``generate_content_stream``
(SSE, ``alt=sse``). Gemini-only data (thought parts, ``thoughtSignature`` values, Gemini's own
function-call ids) is kept as ``ThinkingPart(provider="google")`` and under the ``"google"`` key of
``provider_data``, and is sent back to Gemini only. See docs/providers.md.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import importlib
import json
import math
import os
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, assert_never, cast

from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

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
from ._adapter import DEFAULT_TIMEOUT, ProviderModel, check_retries, idle_timeout
from ._errors import provider_error
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings
from .portable import ToolBatch, Turn, own_thinking, turns

__all__ = ["GeminiModel", "create"]


def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Transport and timeout errors of the HTTP libraries the SDK may use (httpx, its fork httpx2)."""
    transport: list[type[Exception]] = []
    timeout: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        transport.append(module.HTTPError)
        timeout.append(module.TimeoutException)
    return tuple(transport), tuple(timeout)


_TRANSPORT_ERRORS, _TIMEOUT_ERRORS = _http_errors()
_CAUGHT: tuple[type[Exception], ...] = (genai_errors.APIError, *_TRANSPORT_ERRORS)

PROVIDER = "google"
_API_VERSION = "v1beta"
_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
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

    Options: ``max_retries`` (default 2), ``timeout`` (seconds without a byte), ``client`` (a ready ``genai.Client``).
    """
    known = {"max_retries", "timeout", "client"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    return GeminiModel(model_name, base_url=base_url, api_key=api_key, settings=settings, provider=provider, **options)


class GeminiModel(ProviderModel):
    """A Gemini model behind the ``Model`` protocol.

    The API key is ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``. Retryable errors
    (429, 5xx, connection failures before anything streamed) are retried ``max_retries`` times,
    honouring the server's ``Retry-After`` header or ``RetryInfo.retryDelay``.
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
    ):
        self._max_retries = check_retries(max_retries)
        self._generation = _generation(model_name)
        self._base = base_url or _DEFAULT_BASE_URL
        idle = idle_timeout(timeout)
        make = functools.partial(_client, api_key, base_url, idle)
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=PerLoop(client, None, _close) if client is not None else PerLoop(make(), make, _close),
            secret=api_key or next((os.environ[name] for name in _KEY_ENV if os.environ.get(name)), None),
            attempts=self._max_retries + 1,
            idle_timeout=idle,
        )

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return self._base

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        contents, system = _contents(request.messages, sign_foreign=self._generation >= 3)
        config = cast("genai_types.GenerateContentConfigDict", _config(request, settings, system, self._generation))
        attempt = 0
        while True:
            reader = _Reader(self._name, on_event)
            try:
                return await self._once(contents, config, stream, reader)
            except _CAUGHT as exc:
                error = self._error(exc, attempt + 1)
                delay = _backoff(error, attempt)
                if delay is None or attempt >= self._max_retries or reader.emitted:
                    self._fail(exc, attempt + 1)
            await asyncio.sleep(delay)
            attempt += 1

    async def _once(
        self,
        contents: list[dict[str, Any]],
        config: genai_types.GenerateContentConfigDict,
        stream: bool,
        reader: _Reader,
    ) -> ModelResponse:
        models = self._clients.get().aio.models
        self._sent({"model": self._name, "contents": contents, "config": config})
        if not stream:
            response = await models.generate_content(model=self._name, contents=contents, config=config)
            self._received(response)
            reader.add(response)
            return reader.finish(streamed=False)
        chunks = await models.generate_content_stream(model=self._name, contents=contents, config=config)
        async for chunk in self._tapped(chunks):
            reader.add(chunk)
        return reader.finish(streamed=True)

    def _error(self, exc: Exception, attempts: int) -> ProviderError:
        if isinstance(exc, _TIMEOUT_ERRORS):
            return self._transport_error(exc, attempts, timed_out=True)
        if not isinstance(exc, genai_errors.APIError):
            return self._transport_error(exc, attempts, timed_out=False)
        return provider_error(
            self.provider,
            status=exc.code,
            codes=[exc.status, *_reasons(exc.details)],
            message=exc.message or str(exc.details),
            headers=getattr(exc.response, "headers", None),
            body=exc.details,
            secret=self._secret,
        )


def _client(api_key: str | None, base_url: str | None, timeout: float) -> genai.Client:
    key = api_key or next((os.environ[name] for name in _KEY_ENV if os.environ.get(name)), None)
    if not key:
        raise ConfigurationError(
            "no Gemini API key: pass api_key=... or set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment"
        )
    # v1beta carries parametersJsonSchema / responseJsonSchema. The SDK's own retries stay off
    # (no retry_options): ours honour Retry-After and RetryInfo.
    # The SDK turns ``timeout`` into the client's idle timeout and also into an X-Server-Timeout
    # header, a deadline for the whole generation on Google's side; that deadline stays generous.
    server_deadline = str(max(_SERVER_DEADLINE, math.ceil(timeout)))
    options = genai_types.HttpOptions(
        base_url=base_url,
        api_version=_API_VERSION,
        timeout=int(timeout * 1000),
        headers={"X-Server-Timeout": server_deadline},
    )
    return genai.Client(api_key=key, vertexai=False, http_options=options)


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
    elif role == "user" and any("function_response" in p for p in last["parts"]):
        contents.append({"role": "model", "parts": [{"text": _UNANSWERED}]})
        contents.append({"role": role, "parts": parts})
    else:
        last["parts"].extend(parts)


def _thought_parts(thinking: Sequence[ThinkingPart]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in own_thinking(thinking, PROVIDER):
        thought: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature:
            thought["thought_signature"] = _unsign(part.signature)
        parts.append(thought)
    return parts


def _text_part(text: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    signature = data.get("text_signature")
    if not text and not signature:
        return []
    part: dict[str, Any] = {"text": text}
    if signature:
        part["thought_signature"] = _unsign(signature)
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
        images = native_parts(outcome, _IMAGE_TYPES)
        if images is not None:  # the text form (placeholders included) stays the result
            response["parts"] = [
                {"inline_data": {"mime_type": p.mime_type, "data": base64.b64decode(p.data)}}
                for p in images
                if isinstance(p, ImageContent)
            ]
        if call.tool_call_id in native_ids:
            function_call["id"] = response["id"] = call.tool_call_id
        part: dict[str, Any] = {"function_call": function_call}
        signature = signatures.get(call.tool_call_id)
        if signature:
            part["thought_signature"] = _unsign(signature)
        elif index == 0 and sign_foreign and not signatures:
            part["thought_signature"] = _unsign(_SKIP_SIGNATURE)
        parts.append(part)
        results.append({"function_response": response})
    return [{"role": "model", "parts": parts}, {"role": "user", "parts": results}]


def _config(request: ModelRequest, settings: ModelSettings, system: list[str], generation: int) -> dict[str, Any]:
    config: dict[str, Any] = {"automatic_function_calling": {"disable": True}}
    if system:
        config["system_instruction"] = {"parts": [{"text": text} for text in system]}
    if request.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {"name": t.name, "description": t.description, "parameters_json_schema": dict(t.parameters)}
                    for t in request.tools
                ]
            }
        ]
        if request.tool_choice != "auto":
            config["tool_config"] = {"function_calling_config": {"mode": _TOOL_CHOICE[request.tool_choice]}}
    # Before Gemini 3, JSON mode and function calling cannot be combined in one request.
    if request.output is not None and (not request.tools or generation >= 3):
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = dict(request.output.schema)
    for name, value in (
        ("temperature", settings.temperature),
        ("max_output_tokens", settings.max_tokens),
        ("top_p", settings.top_p),
        ("stop_sequences", list(settings.stop) if settings.stop is not None else None),
        ("seed", settings.seed),
    ):
        if value is not None:
            config[name] = value
    config.update(settings.extra)
    return config


def _sign(signature: bytes) -> str:
    return base64.urlsafe_b64encode(signature).decode("ascii")


def _unsign(signature: str) -> bytes:
    return base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))


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
        self.usage: genai_types.GenerateContentResponseUsageMetadata | None = None

    def _emit(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> None:
        if self.on_event is not None:
            self.emitted = True
            self.on_event(event)

    def add(self, chunk: genai_types.GenerateContentResponse) -> None:
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata
        if chunk.model_version:
            self.model = chunk.model_version
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason:
            self.block = " ".join(filter(None, [str(feedback.block_reason), feedback.block_reason_message]))
        if not chunk.candidates:
            return
        candidate = chunk.candidates[0]
        if candidate.content is not None and candidate.content.parts:
            for part in candidate.content.parts:
                self._part(part)
        if candidate.finish_reason:
            self.finish_reason = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
            self.finish_message = candidate.finish_message

    def _part(self, part: genai_types.Part) -> None:
        signature = _sign(part.thought_signature) if part.thought_signature else None
        if part.thought:
            if part.text:
                self.thought.append(part.text)
                self._emit(ThinkingDelta(part.text))
            if signature:
                self._close_thought(signature)
            return
        self._close_thought(None)
        if part.function_call is not None:
            self._call(part.function_call, signature)
            return
        if part.text:
            self.text.append(part.text)
            self._emit(TextDelta(part.text))
        if signature:
            self.text_signature = signature

    def _close_thought(self, signature: str | None) -> None:
        if self.thought or signature:
            self.thinking.append(ThinkingPart("".join(self.thought), signature=signature, provider=PROVIDER))
            self.thought = []

    def _call(self, call: genai_types.FunctionCall, signature: str | None) -> None:
        call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
        if call.id:
            self.native_ids.append(call.id)
        if signature:
            self.signatures[call_id] = signature
        arguments = dict(call.args or {})
        self.calls.append(ToolCall(call_id, call.name or "", arguments))
        if self.on_event is not None:
            self._emit(ToolCallDelta(len(self.calls) - 1, call_id, call.name, json.dumps(arguments)))

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


def _usage(meta: genai_types.GenerateContentResponseUsageMetadata | None, tool_calls: int) -> Usage:
    if meta is None:
        return Usage(tool_calls=tool_calls)
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        input_tokens=(meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0),
        output_tokens=(meta.candidates_token_count or 0) + thoughts,
        tool_calls=tool_calls,
        cache_read_tokens=meta.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


# ----------------------------------------------------------------------------------------------
# Errors


def _reasons(details: Any) -> list[str]:
    """The ``reason`` of each ``ErrorInfo`` in a Google error body (e.g. ``API_KEY_INVALID``)."""
    error = details.get("error", details) if isinstance(details, dict) else None
    found = error.get("details") if isinstance(error, dict) else None
    return [d["reason"] for d in found or () if isinstance(d, dict) and isinstance(d.get("reason"), str)]


def _backoff(error: ProviderError, attempt: int) -> float | None:
    """Seconds to wait before retrying, or None when retrying is pointless."""
    if not error.retryable:
        return None
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        return float(retry_after) if retry_after <= _MAX_RETRY_AFTER else None
    return float(min(0.5 * 2**attempt, 8.0) * (0.5 + random.random() / 2))


async def _close(client: Any) -> None:
    await client.aio.aclose()
