"""An MCP server's questions to the user (elicitation), asked of the editor behind the session.

A client that advertises ``elicitation.form`` (or ``.url``) gets the question itself as
``elicitation/create``, scoped to the session and, when it is known, to the MCP call that asked.
Any other client is asked through ``session/request_permission`` when the answer is a plain yes
or no (a page to open, or a form with nothing required); a form with required fields it cannot
show is refused with the reason, which reaches the server and, through the failed call, the model.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from acp import RequestError, schema
from acp.interfaces import Client
from pydantic import ValidationError

if TYPE_CHECKING:  # the MCP SDK is imported only when a session has MCP servers
    from ..mcp import Elicitation, ElicitationAnswer

__all__ = ["ANSWER_OPTIONS", "ClientAsker"]

_log = logging.getLogger("tooloop.acp")

ANSWER_OPTIONS = (
    schema.PermissionOption(option_id="accept", name="Accept", kind="allow_once"),
    schema.PermissionOption(option_id="decline", name="Decline", kind="reject_once"),
)
"""What a client without elicitation support is offered for a yes-or-no question."""


class ClientAsker:
    """Answers the elicitation requests of one session's MCP servers by asking its client.

    ``running`` gives the ids of the calls of a server (by name) running now, so that a form can
    say which call asked.
    """

    def __init__(
        self,
        client: Callable[[], Client],
        session_id: str,
        capabilities: schema.ClientCapabilities | None,
        running: Callable[[str], list[str]] = lambda server: [],
    ):
        self._client = client
        self._session_id = session_id
        elicitation = capabilities.elicitation if capabilities is not None else None
        self._forms = elicitation is not None and elicitation.form is not None
        self._pages = elicitation is not None and elicitation.url is not None
        self.running = running

    async def __call__(self, question: Elicitation) -> ElicitationAnswer:
        """The user's answer to ``question``; raises (the server is told why) when it cannot be asked."""

        try:
            if question.url is not None:
                if self._pages:
                    return await self._page(question, question.url)
                return await self._yes_or_no(question, f"{question.server} asks you to open {question.url}")
            form = _form(question)
            if self._forms and form is not None:
                return await self._form(question, form)
            required = (question.schema or {}).get("required") or []
            if required:
                raise ElicitationRefused(
                    f"the editor cannot show forms (it does not advertise ACP elicitation), and "
                    f"{question.server!r} needs {', '.join(map(str, required))}"
                )
            return await self._yes_or_no(question, f"{question.server} asks: {question.message}")
        except (RequestError, ConnectionError) as exc:
            raise ElicitationRefused(f"the editor gave no answer ({exc})") from None

    async def _form(self, question: Elicitation, form: schema.ElicitationSchema) -> ElicitationAnswer:
        mode = schema.ElicitationFormSessionMode(
            session_id=self._session_id, tool_call_id=self._call(question.server), requested_schema=form
        )
        return _answer(await self._client().create_elicitation(message=question.message, mode=mode))

    async def _page(self, question: Elicitation, url: str) -> ElicitationAnswer:
        mode = schema.ElicitationUrlSessionMode(
            session_id=self._session_id,
            tool_call_id=self._call(question.server),
            elicitation_id=uuid.uuid4().hex,
            url=url,  # type: ignore[arg-type]  # pydantic parses the URL
        )
        return _answer(await self._client().create_elicitation(message=question.message, mode=mode))

    def _call(self, server: str) -> str | None:
        calls = self.running(server)
        return calls[0] if len(calls) == 1 else None

    async def _yes_or_no(self, question: Elicitation, title: str) -> ElicitationAnswer:
        """Asked as a call of its own, so the editor shows the question next to the call that asked."""
        from ..mcp import ElicitationAnswer

        client = self._client()
        call_id = f"elicitation-{uuid.uuid4().hex[:12]}"
        asked: dict[str, Any] = {"server": question.server, "message": question.message}
        if question.url is not None:
            asked["url"] = question.url
        await client.session_update(
            session_id=self._session_id,
            update=schema.ToolCallStart(
                session_update="tool_call",
                tool_call_id=call_id,
                title=title,
                kind="other",
                status="pending",
                raw_input=asked,
            ),
        )
        call = schema.ToolCallUpdate(tool_call_id=call_id, title=title, kind="other", status="pending", raw_input=asked)
        answer = ElicitationAnswer("cancel")
        try:
            response = await client.request_permission(
                session_id=self._session_id, tool_call=call, options=list(ANSWER_OPTIONS)
            )
            outcome = response.outcome
            if isinstance(outcome, schema.AllowedOutcome):
                answer = (
                    ElicitationAnswer("accept", {}) if outcome.option_id == "accept" else ElicitationAnswer("decline")
                )
        finally:
            await client.session_update(
                session_id=self._session_id,
                update=schema.ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="completed" if answer.action == "accept" else "failed",
                    raw_output={"action": answer.action},
                ),
            )
        return answer


class ElicitationRefused(Exception):
    """The user could not be asked; the text says why (the server receives it as the error)."""


def _form(question: Elicitation) -> schema.ElicitationSchema | None:
    """The question's schema as ACP's form schema; None for one ACP cannot carry."""
    try:
        return schema.ElicitationSchema.model_validate(dict(question.schema or {}))
    except ValidationError as exc:
        _log.warning("the form of %s cannot be sent to the editor: %s", question.server, exc)
        return None


def _answer(response: Any) -> ElicitationAnswer:
    from ..mcp import ElicitationAnswer

    action = getattr(response, "action", None)
    if action == "accept":
        content = getattr(response, "content", None)
        return ElicitationAnswer("accept", dict(content) if isinstance(content, Mapping) else {})
    if action == "decline":
        return ElicitationAnswer("decline")
    return ElicitationAnswer("cancel")  # "cancel", or an action this agent does not know
