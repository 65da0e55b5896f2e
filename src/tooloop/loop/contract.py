"""The ``Model`` seam's contract, checked on every response so a broken custom model is named."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from types import CoroutineType

from ..errors import ModelContractError
from ..events import EventHandler
from ..messages import ModelResponse, ToolCall
from ..models.base import Model, ModelRequest

__all__ = ["checked", "pending_response"]

_CONTRACT = "Model.respond(request, on_event) must be async and return a tooloop.ModelResponse"


def pending_response(model: Model, request: ModelRequest, on_event: EventHandler | None) -> Awaitable[ModelResponse]:
    """``model.respond(request, on_event)``, not awaited yet; :class:`ModelContractError` when it
    is not awaitable. Await it and pass the answer to :func:`checked`."""
    pending = model.respond(request, on_event)
    if type(pending) is not CoroutineType and not inspect.isawaitable(pending):
        raise ModelContractError(f"{_name(model)}.respond returned {pending!r}, not an awaitable: {_CONTRACT}")
    return pending


def checked(model: Model, response: object) -> ModelResponse:
    """``response`` when it keeps the contract (a ``ModelResponse`` with well-formed ``ToolCall``
    values); :class:`ModelContractError` naming the model otherwise."""
    if not isinstance(response, ModelResponse):
        raise ModelContractError(f"{_name(model)}.respond returned {response!r}: {_CONTRACT}")
    for call in response.tool_calls:
        if not (  # the usual case, checked here without a call; the slower checks say what is wrong
            type(call) is ToolCall
            and type(call.arguments) in _PLAIN_ARGUMENTS
            and type(call.id) is type(call.name) is str
        ):
            _check_call(model, call)
    return response


def _check_call(model: Model, call: object) -> None:
    if not isinstance(call, ToolCall):
        raise ModelContractError(
            f"{_name(model)} returned a tool call {call!r}; ModelResponse.tool_calls holds ToolCall values"
        )
    if not isinstance(call.arguments, Mapping | str):
        raise ModelContractError(
            f"{_name(model)} returned ToolCall {call.name!r} with arguments={call.arguments!r}; "
            "ToolCall.arguments must be a dict or the JSON text of an object"
        )
    if not isinstance(call.id, str) or not isinstance(call.name, str):
        raise ModelContractError(
            f"{_name(model)} returned ToolCall(id={call.id!r}, name={call.name!r}); the id and the name must be strings"
        )


_PLAIN_ARGUMENTS = (str, dict)


def _name(model: Model) -> str:
    return type(model).__name__
