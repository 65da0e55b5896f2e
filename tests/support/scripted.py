"""Models scripted for loop tests."""

from __future__ import annotations

from tooloop import ModelResponse, ToolCall, ToolCallMessage
from tooloop.models.base import ModelRequest
from tooloop.testing import FunctionModel


def calls_then(text: str, *calls: ToolCall) -> FunctionModel:
    """A model that asks for ``calls`` until it has seen a tool result, then answers ``text``."""

    def answer(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolCallMessage) for m in request.messages):
            return ModelResponse(text)
        return ModelResponse(tool_calls=calls)

    return FunctionModel(answer)
