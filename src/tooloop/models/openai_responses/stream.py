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
    """Forwards stream deltas to ``on_event`` and returns the response of the terminal event.

    A call's ``ToolCallDelta`` events, joined, are its arguments even from servers that send them
    only when the call is done (LM Studio: ``function_call_arguments.done`` and the finished
    ``output_item.done``, no ``.delta`` events): what the deltas have not said yet is sent then.
    """

    def __init__(self, on_event: EventHandler | None):
        self.on_event = on_event
        self.call_index: dict[int, int] = {}
        self.said: dict[int, str] = {}
        """The arguments text sent so far for each call, by output index."""

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
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            on_event(ThinkingDelta(event.delta))
        elif kind == "response.function_call_arguments.delta":
            index = self.call_index.get(event.output_index)
            if index is not None:
                self.said[event.output_index] += event.delta
                on_event(ToolCallDelta(index, arguments_delta=event.delta))
        elif kind == "response.function_call_arguments.done":
            self._finish(event.output_index, event.arguments, on_event)
        elif kind in ("response.output_item.added", "response.output_item.done") and event.item.type == "function_call":
            if event.output_index not in self.call_index:
                self._open(event.output_index, event.item, on_event)
            elif kind == "response.output_item.done":
                self._finish(event.output_index, event.item.arguments, on_event)
        return None

    def _open(self, output_index: int, item: Any, on_event: EventHandler) -> None:
        index = self.call_index[output_index] = len(self.call_index)
        arguments = self.said[output_index] = item.arguments or ""
        on_event(ToolCallDelta(index, item.call_id, item.name, arguments))

    def _finish(self, output_index: int, arguments: str | None, on_event: EventHandler) -> None:
        """The call's whole arguments arrived: send the part the deltas have not said."""
        said = self.said.get(output_index)
        if said is None or not arguments or len(arguments) <= len(said) or not arguments.startswith(said):
            return
        self.said[output_index] = arguments
        on_event(ToolCallDelta(self.call_index[output_index], arguments_delta=arguments[len(said) :]))
