"""One prompt turn: the run's events as ``session/update`` notifications, and its permission requests.

The mapping relies on the loop's contract: every tool call the model asks for ends with one
outcome (a ``ToolCallFinished`` event, and the call's message in the transcript), and a call that
waits for approval is announced by ``ApprovalRequested`` before the approver is asked. A call is
shown to the editor (``tool_call``, ``pending``) the first time any of these names it, so its
``toolCallId`` is the loop's final id from the first update to the last.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Container, Mapping
from typing import Any, assert_never

from acp import RequestError, schema
from acp.interfaces import Client

from ..events import (
    ApprovalDecided,
    ApprovalRequested,
    CacheBreak,
    CacheMiss,
    Event,
    MessageAdded,
    ModelRequestFinished,
    ModelRequestStarted,
    RunFinished,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from ..loop.cancel import CancelToken
from ..loop.result import ApprovalDecision, ApprovalRequest, RunResult
from ..messages import ModelResponse, ToolCallMessage, Usage
from ..tools.tool import Tool
from . import updates
from .updates import Update

__all__ = ["PERMISSION_OPTIONS", "Turn"]

_log = logging.getLogger("tooloop.acp")

PERMISSION_OPTIONS = (
    schema.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    schema.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    schema.PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)
"""What the user is offered for a tool call that needs approval (option ids are the kinds)."""


class Turn:
    """Sends one prompt turn's updates, in order, and asks the client for permissions."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        tools: Mapping[str, Tool],
        remembered: dict[str, bool],
        token: CancelToken,
        context_window: int,
        spent: Usage,
    ):
        self._client = client
        self._session_id = session_id
        self._tools = tools
        self._remembered = remembered
        self._token = token
        self._window = context_window
        self._spent = spent
        """What the session's earlier turns used (their cost is part of each ``usage_update``)."""
        self._shown: dict[str, asyncio.Future[None]] = {}
        self._finished: set[str] = set()
        self._running: dict[str, str] = {}
        """Call id -> tool name, for the calls running now."""
        self._streamed_text = False
        self._streamed_thinking = False
        self.result: RunResult | None = None

    async def send(self, update: Update) -> None:
        """One ``session/update`` for this session."""
        await self._client.session_update(session_id=self._session_id, update=update)

    async def handle(self, event: Event) -> None:
        """Send what ``event`` shows the user (most events show nothing new)."""
        match event:
            case TextDelta() | ThinkingDelta() | ModelRequestStarted() | ModelRequestFinished():
                await self._model_event(event)
            case ApprovalRequested() | ToolCallStarted() | ToolCallFinished() | MessageAdded():
                await self._tool_event(event)
            case RunFinished(result=result):
                self.result = result
            case ToolCallProgress(tool_call_id=call_id, progress=progress, total=total, message=message):
                await self.send(updates.tool_call_progress(call_id, progress, total, message))
            case ToolCallDelta() | ApprovalDecided() | CacheMiss() | CacheBreak():
                # A call is shown once the loop settled its id and arguments; its outcome (run, or
                # failed when rejected) follows as ToolCallFinished. ACP v1 has no progress field.
                pass
            case SubagentEvent(path=path, event=ApprovalRequested(request=request)):
                # the permission request that follows names the subagent's call by its path
                await self._show(f"{path}/{request.tool_call_id}", request.tool_name, request.arguments)
            case SubagentEvent():
                pass  # a subagent's work shows as the result of the call that ran it
            case _:
                assert_never(event)

    def running(self, tools: Container[str]) -> list[str]:
        """The ids of the calls running now of the tools named in ``tools``."""
        return [call_id for call_id, name in self._running.items() if name in tools]

    async def _model_event(self, event: TextDelta | ThinkingDelta | ModelRequestStarted | ModelRequestFinished) -> None:
        match event:
            case TextDelta(text=text):
                self._streamed_text = True
                await self.send(updates.text_chunk(text))
            case ThinkingDelta(text=text):
                self._streamed_thinking = True
                await self.send(updates.thought_chunk(text))
            case ModelRequestStarted():
                self._streamed_text = self._streamed_thinking = False
            case ModelRequestFinished(response=response, usage=usage):
                await self._response_finished(response, usage)
            case _:
                assert_never(event)

    async def _tool_event(self, event: ApprovalRequested | ToolCallStarted | ToolCallFinished | MessageAdded) -> None:
        match event:
            case ApprovalRequested(request=request):
                await self._show(request.tool_call_id, request.tool_name, request.arguments)
            case ToolCallStarted(tool_call_id=call_id, tool_name=name, arguments=arguments):
                await self._show(call_id, name, arguments)
                self._running[call_id] = name
                await self.send(updates.tool_call_running(call_id))
            case ToolCallFinished(message=message):
                await self._finish(message)
            case MessageAdded(message=message):
                if isinstance(message, ToolCallMessage) and message.status.finished:
                    await self._finish(message)  # already shown by ToolCallFinished; kept as a safety net
            case _:
                assert_never(event)

    async def _response_finished(self, response: ModelResponse, usage: Usage) -> None:
        """Text a model gave without streaming it, the context's size and the session's cost."""
        if not self._streamed_thinking:
            for part in response.thinking:
                if part.text and not part.redacted:
                    await self.send(updates.thought_chunk(part.text))
        if not self._streamed_text and response.text:
            await self.send(updates.text_chunk(response.text))
        used = response.usage.input_tokens + response.usage.output_tokens
        if used > 0:
            await self.send(updates.usage_update(used, self._window, (self._spent + usage).cost))

    async def _show(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        shown = self._shown_future(call_id)
        if shown.done():
            return
        await self.send(updates.tool_call_pending(call_id, name, arguments, self._tools.get(name)))
        shown.set_result(None)

    def _shown_future(self, call_id: str) -> asyncio.Future[None]:
        future = self._shown.get(call_id)
        if future is None:
            future = self._shown[call_id] = asyncio.get_running_loop().create_future()
        return future

    async def _finish(self, message: ToolCallMessage) -> None:
        if message.tool_call_id in self._finished:
            return
        self._finished.add(message.tool_call_id)
        self._running.pop(message.tool_call_id, None)
        await self._show(message.tool_call_id, message.tool_name, message.arguments)
        await self.send(updates.tool_call_finished(message))

    # ------------------------------------------------------------------ permissions

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The approver of this turn's run: a remembered choice, else ``session/request_permission``."""
        remembered = self._remembered.get(request.tool_name)
        if remembered is not None:
            return request.approve() if remembered else request.deny(_rejected(request, always=True))
        await self._shown_future(request.tool_call_id)  # the editor saw the call before it is asked about it
        try:
            response = await self._client.request_permission(
                session_id=self._session_id,
                tool_call=self._permission_call(request),
                options=list(PERMISSION_OPTIONS),
            )
        except (RequestError, ConnectionError) as exc:  # the client is gone (closed its input) or refused
            _log.warning("could not ask the client about %s: %s", request.tool_name, exc)
            return request.deny("the user could not be asked about this call; it was not run")
        return self._decide(request, response.outcome)

    def _permission_call(self, request: ApprovalRequest) -> schema.ToolCallUpdate:
        tool = self._tools.get(request.tool_name)
        return schema.ToolCallUpdate(
            tool_call_id=request.tool_call_id,
            title=updates.tool_title(request.tool_name, request.arguments, tool),
            kind=updates.tool_kind(tool),
            status="pending",
            raw_input=dict(request.arguments),
        )

    def _decide(
        self, request: ApprovalRequest, outcome: schema.AllowedOutcome | schema.DeniedOutcome
    ) -> ApprovalDecision:
        if isinstance(outcome, schema.DeniedOutcome):  # the client cancelled the prompt turn
            self._token.cancel("the permission request was cancelled")
            return request.deny("the permission request was cancelled")
        choice = outcome.option_id
        if choice in ("allow_always", "reject_always"):
            self._remembered[request.tool_name] = choice == "allow_always"
        if choice in ("allow_once", "allow_always"):
            return request.approve()
        if choice not in ("reject_once", "reject_always"):
            _log.warning("unknown permission option %r: the call is rejected", choice)
        return request.deny(_rejected(request, always=choice == "reject_always"))


def _rejected(request: ApprovalRequest, *, always: bool) -> str:
    when = "always rejects" if always else "rejected"
    return f"the user {when} calls to {request.tool_name!r}; do not retry it unless asked"
