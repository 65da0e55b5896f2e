"""A tiny scripted model for the test-kit tests: answers from a list, streams its parts, keeps requests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tooloop.events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    SystemMessage,
    ToolCallMessage,
    UserMessage,
)
from tooloop.models.base import Model, ModelRequest, ModelSettings, ToolDefinition


class ListModel:
    """Returns ``responses`` in order; when streamed, emits text in chunks of ``chunk`` characters."""

    def __init__(self, responses: Sequence[ModelResponse], *, name: str = "list-model", chunk: int = 4) -> None:
        self._responses = list(responses)
        self._name = name
        self.chunk = chunk
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        self.requests.append(request)
        if not self._responses:
            raise AssertionError("ListModel has no response left")
        response = self._responses.pop(0)
        if on_event is not None:
            for part in response.thinking:
                on_event(ThinkingDelta(part.text))
            for start in range(0, len(response.text), self.chunk):
                on_event(TextDelta(response.text[start : start + self.chunk]))
            for index, call in enumerate(response.tool_calls):
                on_event(ToolCallDelta(index, call.id, call.name))
                arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))
                on_event(ToolCallDelta(index, arguments_delta=arguments))
        return response


async def mini_run(
    model: Model,
    question: str,
    tools: dict[str, Callable[..., Any]],
    *,
    settings: ModelSettings | None = None,
    on_event: EventHandler | None = None,
) -> list[Message]:
    """A bare tool loop (until the lead's Agent lands): ask, run the calls, send results back.

    Batch ids are random on purpose, as a loop may generate them.
    """
    definitions = tuple(
        ToolDefinition(name, f"the {name} tool", {"type": "object", "properties": {"city": {"type": "string"}}})
        for name in tools
    )
    messages: list[Message] = [SystemMessage("Be brief."), UserMessage(question)]
    for _ in range(10):
        request = ModelRequest(list(messages), definitions, settings=settings or ModelSettings())
        response = await model.respond(request, on_event)
        if not response.tool_calls:
            messages.append(AssistantMessage(response.text, model=response.model))
            return messages
        batch = uuid.uuid4().hex
        for call in response.tool_calls:
            arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)
            result = tools[call.name](**arguments)
            messages.append(
                ToolCallMessage(
                    tool_name=call.name,
                    tool_call_id=call.id,
                    arguments=arguments,
                    result=result,
                    content=str(result),
                    batch_id=batch,
                    message=response.text,
                )
            )
    raise AssertionError("mini_run did not finish")
