"""Subagents: an agent run as one tool call of another (``Agent.as_tool``).

The parent's call runs a whole nested run of the child agent and its result is the child's
answer. Everything of the child stays tied to that call:

* its transcript: in a stored session, the child's own session ``"<parent session>.<call id>"``
  in the same store (viewable and exportable like any session; the call's result names it);
  without a store, the call's result holds it;
* its usage: every request and call of the child counts in the parent's ``Usage`` as it happens,
  and before each of its requests the child checks the parent's ``max_cost`` too;
* its traces: without a tracer of its own it uses the parent's, so its ``invoke_agent`` span
  (named after the agent, else the tool) nests under the parent's ``execute_tool`` span;
* its events: they reach the parent's stream as :class:`~tooloop.events.SubagentEvent` values
  tagged with the call's id (deeper subagents: ``"call_1/call_7"``);
* cancellation: cancelling the parent cancels the child; the child stopping early (a limit, a
  cancellation of its own) is that call's error, never the parent's stop;
* approvals: a child's call that needs one asks the parent's approver (the request's id is the
  path ``"<call id>/<child call id>"``); without an approver the call waits with the parent, which
  stops with ``APPROVAL_REQUIRED`` listing the child's requests. Deciding them and resuming the
  parent resumes the child where it stood: the child's turn is keyed by the parent's call id, so
  no finished call of either runs again, also after a restart.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._checks import require_text
from .agent import INHERIT
from .errors import ApprovalMismatchError, ToolArgumentsError, ToolError, ToolloopError
from .events import Event, SubagentEvent
from .loop.approval import ApprovalsPending, Approver, nested_decisions
from .loop.channel import EventChannel
from .loop.result import ApprovalDecision, ApprovalRequest, RunResult
from .loop.run import Run
from .messages import StopReason, TextContent, ToolOutput
from .tools.tool import Tool, ToolContext, check_tool_name
from .transcript import message_to_dict

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["INHERIT", "subagent_tool"]


_PROMPT = "What to ask the agent: the whole task, with every detail it needs (it sees nothing else)."


def subagent_tool(agent: Agent, *, name: str, description: str, deps: Any = INHERIT) -> Tool:
    """The :class:`Tool` that runs ``agent`` as one call (see :meth:`Agent.as_tool`)."""
    check_tool_name(name)
    require_text(description, f"description of subagent tool {name!r}")

    async def run_subagent(ctx: ToolContext, **arguments: Any) -> ToolOutput:
        prompt = arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip() or set(arguments) - {"prompt"}:
            raise ToolArgumentsError(f"{name} takes one argument, 'prompt': a non-empty string")
        child_deps = ctx.deps if deps is INHERIT else deps
        return await _Nested(agent, name, ctx).run(prompt, child_deps)

    parameters = {
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": _PROMPT}},
        "required": ["prompt"],
        "additionalProperties": False,
    }
    return Tool(
        name=name,
        description=description,
        parameters=parameters,
        function=run_subagent,
        context_param="ctx",
        metadata={"subagent": True, "kind": "think"},
    )


class _Nested:
    """One call's nested run: what it takes from the parent run, and its outcome."""

    def __init__(self, agent: Agent, name: str, ctx: ToolContext):
        self.agent = agent
        self.name = name
        self.path = ctx.tool_call_id
        self.ctx = ctx
        parent = ctx.parent
        self.parent: Run | None = parent if isinstance(parent, Run) else None

    async def run(self, prompt: str, deps: Any) -> ToolOutput:
        parent, ctx = self.parent, self.ctx
        store = parent.session_store if parent is not None else None
        session_id = f"{ctx.session_id}.{self.path}" if store is not None and ctx.session_id else None
        agent = (
            self.agent.with_session(session_id, store) if store is not None and session_id is not None else self.agent
        )
        if parent is not None and parent.config.tracer is not None and agent._options.tracer is None:
            agent = agent._copy(tracer=parent.config.tracer)  # the child's spans nest in the parent's trace
        decisions = nested_decisions(parent.decisions, self.path) if parent is not None else {}
        run = agent._run(
            prompt,
            None,
            decisions,
            ctx.cancel_token,
            self._approver(),
            session_id=session_id,
            turn_id=self.path if session_id is not None else None,
            deps=deps,
        )
        self._link(run)
        try:
            await run.finish()
        except ApprovalMismatchError as exc:  # nothing ran: the call keeps waiting, the parent raises it
            raise ApprovalsPending((), exc) from None
        except ToolloopError as exc:
            raise ToolError(f"subagent {self.name!r} failed: {exc}") from exc
        return self._outcome(run.result(), session_id)

    def _approver(self) -> Approver | None:
        """The parent's approver, asked about the child's calls by their path (unless the child has its own)."""
        parent = self.parent
        if parent is None or parent.config.approver is None or self.agent._resolved().approver is not None:
            return None
        return _asking(parent.config.approver, self.path)

    def _link(self, run: Run) -> None:
        parent = self.parent
        if parent is None:
            return
        run.record.upstream = parent.record
        run.denying_undecided = parent.denying_undecided  # the parent moved on: the child's waiting calls are denied
        run.outer_limit = parent.cost_check
        run.subagent = (f"{parent.subagent[0]}/{self.path}" if parent.subagent else self.path, self.name)
        if parent.record.events is not None:
            run.send_events_to(_forwarding(parent.record.emit, self.path))

    def _outcome(self, result: RunResult, session_id: str | None) -> ToolOutput:
        reason = result.stop_reason
        if reason is StopReason.APPROVAL_REQUIRED:
            if session_id is None:
                raise ToolError(
                    f"subagent {self.name!r} has calls waiting for approval, and the parent run has no stored "
                    "session to keep them in while they wait: give the parent an approver (approve=) or a session"
                )
            raise ApprovalsPending(tuple(_surfaced(self.path, r) for r in result.pending_approvals))
        if reason is not StopReason.END_TURN:
            raise ToolError(f"subagent {self.name!r} stopped before it answered ({reason.value})")
        answer = result.transcript.final_text
        structured: dict[str, Any] = {"subagent": self.name, "answer": answer}
        if result.output is not None and not isinstance(result.output, str):
            structured["output"] = _plain(result.output)
        if session_id is not None:
            structured["session_id"] = session_id
        else:
            structured["transcript"] = [message_to_dict(m) for m in result.transcript]
        return ToolOutput(parts=(TextContent(answer),), structured=structured)


def _surfaced(path: str, request: ApprovalRequest) -> ApprovalRequest:
    """A child's request as the parent shows it: named by its path, bound to the child's digest."""
    return ApprovalRequest(f"{path}/{request.tool_call_id}", request.tool_name, request.arguments, request.digest)


def _asking(approver: Approver, path: str) -> Approver:
    async def approve(request: ApprovalRequest) -> bool | ApprovalDecision:
        answer = approver(_surfaced(path, request))
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, ApprovalDecision):
            return replace(answer, tool_call_id=request.tool_call_id)
        return answer

    return approve


class _Forward(EventChannel):
    """The child's event channel: each event appended goes to the parent, tagged with the path."""

    __slots__ = ("_emit", "_path")

    def __init__(self, emit: Callable[[Event], None], path: str):
        super().__init__()
        self._emit = emit
        self._path = path

    def append(self, event: Event) -> None:
        if isinstance(event, SubagentEvent):
            self._emit(SubagentEvent(f"{self._path}/{event.path}", event.event))
        else:
            self._emit(SubagentEvent(self._path, event))


def _forwarding(emit: Callable[[Event], None], path: str) -> EventChannel:
    return _Forward(emit, path)


def _plain(value: Any) -> Any:
    """A structured output as JSON-compatible data (pydantic models and dataclasses dumped)."""
    from ._json import to_jsonable

    return to_jsonable(value)
