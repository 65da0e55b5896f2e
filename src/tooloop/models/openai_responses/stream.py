"""Reading a streamed Responses API answer: deltas to the listener, the terminal event's response as the result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from openai.types.responses import Response

from ...errors import ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse
from ...transport.client import StreamError
from .request import PROVIDER
from .response import read

__all__ = ["Streamer"]


class Streamer:
    """Forwards stream deltas to ``on_event`` and returns the response of the terminal event."""

    def __init__(self, on_event: EventHandler | None):
        self.on_event = on_event
        self.call_index: dict[int, int] = {}

    async def run(self, events: AsyncIterator[Any]) -> ModelResponse:
        """Read the stream to its end (so its connection goes back to the pool) and return the response."""
        final: ModelResponse | None = None
        async for event in events:
            if final is None:
                final = self._event(event)
        if final is None:
            raise ProviderConnectionError("the OpenAI stream ended before the response finished", provider=PROVIDER)
        return final

    def _event(self, event: Any) -> ModelResponse | None:
        # ``event`` is one member of the SDK's ResponseStreamEvent union, told apart by ``type``.
        kind = event.type
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return read(cast(Response, event.response))
        if kind == "error":
            raise StreamError(event.model_dump(mode="json"))
        on_event = self.on_event
        if on_event is None:
            return None
        if kind == "response.output_text.delta":
            on_event(TextDelta(event.delta))
        elif kind == "response.reasoning_summary_text.delta":
            on_event(ThinkingDelta(event.delta))
        elif kind == "response.function_call_arguments.delta":
            index = self.call_index.get(event.output_index)
            if index is not None:
                on_event(ToolCallDelta(index, arguments_delta=event.delta))
        elif kind == "response.output_item.added" and event.item.type == "function_call":
            index = self.call_index[event.output_index] = len(self.call_index)
            on_event(ToolCallDelta(index, event.item.call_id, event.item.name))
        return None
