"""Answering a server's ``sampling/createMessage`` with one of our models (text only)."""

from __future__ import annotations

from typing import Any

from mcp import types

from ..messages import AssistantMessage, Message, StopReason, SystemMessage, UserMessage
from ..models.base import Model, ModelRequest, ModelSettings
from ._connection import SamplingHandler

__all__ = ["sampling_handler"]


def sampling_handler(model: Model | str) -> SamplingHandler:
    """A handler asking ``model`` (created from its string on first use) for the completion."""
    resolved: list[Model] = []

    async def handle(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        if not resolved:
            resolved.append(_model(model))
        response = await resolved[0].respond(_request(params))
        reason = "maxTokens" if response.stop_reason is StopReason.MAX_TOKENS else "endTurn"
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=response.text),
            model=resolved[0].name,
            stop_reason=reason,
        )

    return handle


def _model(model: Model | str) -> Model:
    if isinstance(model, str):
        from ..models.registry import get_model

        return get_model(model)
    return model


def _request(params: types.CreateMessageRequestParams) -> ModelRequest:
    messages: list[Message] = [SystemMessage(params.system_prompt)] if params.system_prompt else []
    for message in params.messages:
        text = _text(message.content)
        messages.append(UserMessage(text) if message.role == "user" else AssistantMessage(text))
    settings = ModelSettings(
        temperature=params.temperature,
        max_tokens=params.max_tokens,
        stop=tuple(params.stop_sequences) if params.stop_sequences else None,
    )
    return ModelRequest(messages, settings=settings, tool_choice="none")


def _text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(b.text if isinstance(b, types.TextContent) else f"[{b.type} omitted]" for b in blocks)
