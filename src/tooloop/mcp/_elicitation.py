"""A server asking the user for input (MCP elicitation), routed to whoever answers for the user."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from mcp import types

__all__ = ["Elicitation", "ElicitationAnswer", "ElicitationHandler", "answer_with"]


@dataclass(frozen=True, slots=True)
class Elicitation:
    """What a server asks: ``message`` to show, and either ``schema`` (form mode: the JSON Schema
    of a flat object whose fields the user fills) or ``url`` (URL mode: a page the user opens,
    for what must not pass through the client, such as credentials)."""

    server: str
    message: str
    schema: Mapping[str, Any] | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """The user's answer: ``accept`` (with ``content`` matching the schema in form mode),
    ``decline`` (said no) or ``cancel`` (dismissed without choosing)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None


ElicitationHandler: TypeAlias = Callable[[Elicitation], Awaitable[ElicitationAnswer] | ElicitationAnswer]
"""Answers a server's question for the user: a terminal prompt, an editor's form, a callback."""

_Callback = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


def answer_with(server: str, handler: ElicitationHandler) -> _Callback:
    """The SDK's elicitation callback for ``handler``; a handler that fails cancels the request."""

    async def elicit(params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        if isinstance(params, types.ElicitRequestURLParams):
            question = Elicitation(server, params.message, url=params.url)
        else:
            question = Elicitation(server, params.message, schema=params.requested_schema)
        try:
            answer = handler(question)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the user could not be asked: {exc}")
        if not isinstance(answer, ElicitationAnswer):
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the elicitation handler gave no answer")
        content = dict(answer.content) if answer.action == "accept" and answer.content is not None else None
        return types.ElicitResult(action=answer.action, content=content)

    return elicit
