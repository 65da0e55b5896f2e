"""The JSON form of the cassette file: requests, responses and stream events, with secrets scrubbed.

Requests are written in the neutral form of :mod:`tooloop.transcript` so a cassette reads like a
transcript; a response keeps everything the loop looks at (text, tool calls, stop reason, usage,
thinking, refusal, provider data).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from decimal import Decimal
from typing import Any

from .._json import to_jsonable
from ..events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import ModelResponse, StopReason, ToolCall, Usage
from ..models._secrets import scrub_json
from ..models.base import ModelRequest, ModelSettings, OutputSchema, ToolDefinition
from ..transcript import message_to_dict, thinking_from_dict, thinking_to_dict


def request_to_dict(request: ModelRequest) -> dict[str, Any]:
    """The neutral, scrubbed JSON form of a request (what a cassette stores and compares)."""
    messages = []
    for message in request.messages:
        data = message_to_dict(message)
        if "provider_data" in data:
            data["provider_data"] = scrub_json(data["provider_data"])
        messages.append(data)
    return {
        "messages": messages,
        "tools": [_tool_to_dict(tool) for tool in request.tools],
        "settings": _settings_to_dict(request.settings),
        "output": _output_to_dict(request.output),
        "tool_choice": request.tool_choice,
    }


def _tool_to_dict(tool: ToolDefinition) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": to_jsonable(tool.parameters),
    }
    if tool.strict is not None:
        data["strict"] = tool.strict
    return data


def _settings_to_dict(settings: ModelSettings) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in fields(settings):
        value = getattr(settings, f.name)
        if f.name == "extra":
            if value:
                data["extra"] = scrub_json(to_jsonable(value))
        elif value is not None:
            data[f.name] = to_jsonable(value)
    return data


def _output_to_dict(output: OutputSchema | None) -> dict[str, Any] | None:
    if output is None:
        return None
    return {
        "name": output.name,
        "schema": to_jsonable(output.schema),
        "description": output.description,
        "strict": output.strict,
    }


def response_to_dict(response: ModelResponse) -> dict[str, Any]:
    """The JSON form of a response, provider data scrubbed."""
    data: dict[str, Any] = {
        "text": response.text,
        "tool_calls": [_call_to_dict(call) for call in response.tool_calls],
        "stop_reason": response.stop_reason.value,
        "usage": _usage_to_dict(response.usage),
    }
    if response.thinking:
        data["thinking"] = [thinking_to_dict(part) for part in response.thinking]
    if response.refusal is not None:
        data["refusal"] = response.refusal
    if response.model is not None:
        data["model"] = response.model
    if response.provider_data:
        data["provider_data"] = scrub_json(to_jsonable(response.provider_data))
    if response.response_id is not None:
        data["response_id"] = response.response_id
    if response.stop_sequence is not None:
        data["stop_sequence"] = response.stop_sequence
    return data


def _usage_to_dict(usage: Usage) -> dict[str, Any]:
    data = {f.name: getattr(usage, f.name) for f in fields(Usage) if f.name not in ("cost", "estimated")}
    if usage.cost is not None:
        data["cost"] = str(usage.cost)
    if usage.estimated:
        data["estimated"] = True
    return data


def _usage_from_dict(data: Mapping[str, Any]) -> Usage:
    cost = data.get("cost")
    counts = {k: v for k, v in data.items() if k != "cost"}
    return Usage(**counts, cost=None if cost is None else Decimal(str(cost)))


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    # Arguments stay what the model produced: raw JSON text stays a string, a dict stays an object.
    data: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": to_jsonable(call.arguments)}
    if call.provider_data:
        data["provider_data"] = scrub_json(to_jsonable(call.provider_data))
    return data


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    """Read a response written by :func:`response_to_dict`."""
    calls = tuple(
        ToolCall(
            id=str(call["id"]),
            name=str(call["name"]),
            arguments=call.get("arguments", {}),
            provider_data=call.get("provider_data"),
        )
        for call in data.get("tool_calls", ())
    )
    return ModelResponse(
        str(data.get("text", "")),
        calls,
        StopReason(data["stop_reason"]) if "stop_reason" in data else None,  # type: ignore[arg-type]
        _usage_from_dict(data.get("usage", {})),
        thinking=tuple(thinking_from_dict(part) for part in data.get("thinking", ())),
        refusal=data.get("refusal"),
        model=data.get("model"),
        provider_data=dict(data.get("provider_data", {})),
        response_id=data.get("response_id"),
        stop_sequence=data.get("stop_sequence"),
    )


def event_to_dict(event: ModelEvent) -> dict[str, Any]:
    """The JSON form of one stream event."""
    if isinstance(event, ToolCallDelta):
        data: dict[str, Any] = {"kind": event.kind, "index": event.index}
        if event.tool_call_id is not None:
            data["tool_call_id"] = event.tool_call_id
        if event.name is not None:
            data["name"] = event.name
        if event.arguments_delta:
            data["arguments_delta"] = event.arguments_delta
        return data
    return {"kind": event.kind, "text": event.text}


def event_from_dict(data: Mapping[str, Any]) -> ModelEvent:
    """Read one stream event written by :func:`event_to_dict`."""
    kind = data["kind"]
    if kind == "text_delta":
        return TextDelta(str(data["text"]))
    if kind == "thinking_delta":
        return ThinkingDelta(str(data["text"]))
    if kind == "tool_call_delta":
        return ToolCallDelta(
            index=int(data["index"]),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            arguments_delta=str(data.get("arguments_delta", "")),
        )
    raise ValueError(f"unknown event kind {kind!r}")


def events_for(response: ModelResponse) -> list[ModelEvent]:
    """The deltas a streaming adapter would have emitted for ``response`` (one per part).

    Used on replay when the recording was made without streaming, so streaming code still runs.
    """
    events: list[ModelEvent] = [ThinkingDelta(part.text) for part in response.thinking if part.text]
    if response.text:
        events.append(TextDelta(response.text))
    for index, call in enumerate(response.tool_calls):
        arguments = call.arguments if isinstance(call.arguments, str) else _dumps(call.arguments)
        events.append(ToolCallDelta(index, call.id, call.name, arguments))
    return events


def _dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)
