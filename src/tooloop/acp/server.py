"""``AcpServer``: one tooloop agent behind the Agent Client Protocol (version 1), over stdio.

Methods served: ``initialize``, ``session/new``, ``session/prompt``, ``session/cancel``,
``session/close``, and ``session/load``, ``session/resume`` and ``session/list`` when a store is
configured. Everything else, custom ``_vendor`` requests included, is answered ``-32601``;
schema errors ``-32602``.

Answers worth knowing (they are documented in ``docs/acp.md``):

* an unknown session id is ``-32602`` with ``data.details`` naming it;
* a prompt sent while the same session is still answering one is refused with ``-32602``
  (send ``session/cancel`` and wait for the running prompt's answer first);
* a failure of the model provider is ``-32603`` with the error's text; after ``session/cancel``
  the prompt is always answered ``{"stopReason": "cancelled"}``, whatever was raised inside.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import acp
from acp import RequestError, schema
from acp.interfaces import Client

from ..agent import Agent
from ..errors import ConfigurationError, SessionNotFoundError, ToolloopError
from ..messages import UserPart
from ..models.inputs import input_kinds
from ..models.profiles import DEFAULT_PROFILE, profile_for
from ..store.base import SessionInfo, Store
from ..tools.tool import Tool
from . import updates
from .elicit import ClientAsker, ElicitationRefused
from .prompt import prompt_content
from .session import McpServerSpec, Session, SessionTools
from .turn import Turn

if TYPE_CHECKING:  # the MCP SDK is imported only when the agent or a session has MCP servers
    from ..mcp import Elicitation, ElicitationAnswer

__all__ = ["AcpServer"]

_log = logging.getLogger("tooloop.acp")

STEER_METHOD = "tooloop/steer"
"""The extension request (``_tooloop/steer`` on the wire) that sends a message into a running turn."""


class AcpServer:
    """Serves ``agent`` to one ACP client; each ACP session gets its own conversation.

    With ``store`` the conversations are stored sessions (their ACP session id is the store's
    session id) and ``session/load`` is offered; without it they live in memory.
    """

    def __init__(self, agent: Agent, *, store: Store | None = None, tools: SessionTools | None = None):
        self._agent = self._asking_in_sessions(agent)
        self._store = store
        self._tools = tools or SessionTools()
        self._sessions: dict[str, Session] = {}
        self._conn: Client | None = None
        self._capabilities: schema.ClientCapabilities | None = None

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the connection to the client."""
        self._conn = conn

    @property
    def _client(self) -> Client:
        if self._conn is None:  # pragma: no cover - the SDK connects before any request
            raise RequestError.internal_error({"details": "not connected"})
        return self._conn

    def _asking_in_sessions(self, agent: Agent) -> Agent:
        """``agent`` whose own MCP servers (a ``tooloop.toml`` agent's), when nothing answers
        their questions to the user, ask the editor in the session calling them (copies of them,
        not started yet, stand in for them)."""
        if not agent.tool_sources:
            return agent
        try:
            from ..mcp.server import asking_through
        except ConfigurationError:  # no MCP SDK: none of the sources is an MCP server
            return agent
        return asking_through(agent, self._ask_in_session)

    async def _ask_in_session(self, question: Elicitation) -> ElicitationAnswer:
        """A question of one of the agent's own MCP servers, which every session shares: asked
        through the session whose running turn is calling that server, as a client's server is."""
        asking = [s for s in self._sessions.values() if s.running(question.server)]
        if len(asking) > 1:
            raise ElicitationRefused(
                f"{len(asking)} sessions are calling {question.server!r} at once; the one that asks cannot be told"
            )
        ask = asking[0].ask if asking else None
        if ask is None:
            raise ElicitationRefused(f"no session is calling {question.server!r} now; there is nobody to ask")
        return await ask(question)

    # ------------------------------------------------------------------ handshake

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **_: Any,
    ) -> schema.InitializeResponse:
        """Speak protocol version 1 whatever the client asked; advertise only what works."""
        from .. import __version__

        self._capabilities = client_capabilities
        stored = self._store is not None
        capabilities = schema.AgentCapabilities(
            load_session=stored,
            prompt_capabilities=_prompt_capabilities(_input_kinds(self._agent)),
            mcp_capabilities=schema.McpCapabilities(http=self._tools.http),
            session_capabilities=schema.SessionCapabilities(
                list=schema.SessionListCapabilities() if stored else None,
                resume=schema.SessionResumeCapabilities() if stored else None,
                close=schema.SessionCloseCapabilities(),
            ),
        )
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            auth_methods=[],
            agent_info=schema.Implementation(name="tooloop", title=self._agent.name or "tooloop", version=__version__),
        )

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[McpServerSpec] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> schema.NewSessionResponse:
        """A new conversation with its own id, with the client's MCP servers as extra tools."""
        _check_directories(cwd, additional_directories)
        session_id = uuid.uuid4().hex
        session = await self._open(session_id, cwd, mcp_servers or ())
        if self._store is not None:  # known to session/load and session/list before its first prompt
            try:
                await self._store.set_metadata(session_id, metadata={"cwd": cwd})
            except BaseException:
                await session.aclose()
                raise
        self._sessions[session_id] = session
        return schema.NewSessionResponse(session_id=session_id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[McpServerSpec] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> schema.LoadSessionResponse:
        """Replay a stored conversation as updates, then answer; its next prompt continues it."""
        await self._reopen(session_id, cwd, mcp_servers, additional_directories, replay=True)
        return schema.LoadSessionResponse()

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Sequence[McpServerSpec] | None = None,
        **_: Any,
    ) -> schema.ResumeSessionResponse:
        """Continue a stored conversation without replaying it (the client still shows it)."""
        await self._reopen(session_id, cwd, mcp_servers, additional_directories, replay=False)
        return schema.ResumeSessionResponse()

    async def _reopen(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[McpServerSpec] | None,
        additional_directories: list[str] | None,
        *,
        replay: bool,
    ) -> None:
        store = self._stored("session/load" if replay else "session/resume")
        _check_directories(cwd, additional_directories)
        old = self._sessions.get(session_id)
        if old is not None and old.busy:
            raise _busy(session_id)
        try:
            transcript = await store.load(session_id)
            info = await store.get_session(session_id)
        except SessionNotFoundError:
            raise RequestError.invalid_params({"details": f"no stored session {session_id!r}"}) from None
        session = await self._open(session_id, cwd, mcp_servers or ())
        session.spent = info.usage
        if replay:
            for update in updates.replay(transcript, await session.tool_map()):
                await self._client.session_update(session_id=session_id, update=update)
        self._sessions[session_id] = session
        if old is not None:
            await old.aclose()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> schema.ListSessionsResponse:
        """The stored sessions, most recently used first, a page at a time (``cwd`` filters them)."""
        store = self._stored("session/list")
        offset = _offset(cursor)
        found = await store.list_sessions(limit=_PAGE + 1, offset=offset)
        page = [_info(info) for info in found[:_PAGE]]
        listed = [info for info in page if cwd is None or info.cwd == cwd]
        more = str(offset + _PAGE) if len(found) > _PAGE else None
        return schema.ListSessionsResponse(sessions=listed, next_cursor=more)

    async def close_session(self, session_id: str, **_: Any) -> schema.CloseSessionResponse:
        """Cancel the session's running turn, stop its MCP servers and forget it (a stored session
        stays in the store)."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            raise RequestError.invalid_params({"details": f"unknown session {session_id!r}"})
        session.cancel()
        await session.aclose()
        return schema.CloseSessionResponse()

    def _stored(self, method: str) -> Store:
        if self._store is None:
            raise RequestError.method_not_found(method)
        return self._store

    async def _open(self, session_id: str, cwd: str, servers: Sequence[McpServerSpec]) -> Session:
        agent = self._agent
        if self._store is not None:
            agent = agent.with_session(session_id, self._store)
        ask = ClientAsker(lambda: self._client, session_id, self._capabilities)
        return await Session.open(session_id, cwd, agent, self._tools, servers, stored=self._store is not None, ask=ask)

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"details": f"unknown session {session_id!r}"})
        return session

    # ------------------------------------------------------------------ prompts

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> schema.PromptResponse:
        """Run one turn, streaming its updates; answered with the turn's stop reason."""
        session = self._session(session_id)
        text = prompt_content(prompt, _input_kinds(session.agent))
        if session.busy:
            raise _busy(session_id)
        token = session.begin()
        try:
            turn = Turn(
                self._client,
                session_id,
                await session.tool_map(),
                session.remembered,
                token,
                _context_window(session.agent),
                session.spent,
            )
            session.turn = turn
            stop = await _run_turn(session, turn, text)
        finally:
            session.end()
        used = turn.result.usage if turn.result is not None else None
        if used is not None:
            session.spent = session.spent + used
        return schema.PromptResponse(stop_reason=stop, usage=None if used is None else updates.turn_usage(used))

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stop the session's running turn at once; its prompt is answered ``cancelled``."""
        session = self._sessions.get(session_id)
        if session is None:
            _log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        session.cancel()

    # ------------------------------------------------------------------ extensions

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_tooloop/steer`` (see :func:`steer`); any other custom request: ``-32601``."""
        if method == STEER_METHOD:
            return self._steer(params)
        raise RequestError.method_not_found(f"_{method}")

    def _steer(self, params: dict[str, Any]) -> dict[str, Any]:
        """``{"sessionId", "text"}``: send the user's message into the session's running turn.

        Answered ``{"delivered": true}`` when the turn took it (the model sees it at the next safe
        boundary, or in one more turn if it was answering); ``false`` when no turn runs (send it
        as a prompt instead).
        """
        session_id, text = params.get("sessionId"), params.get("text")
        if not isinstance(session_id, str) or not isinstance(text, str) or not text.strip():
            raise RequestError.invalid_params({"details": "_tooloop/steer takes {sessionId: string, text: string}"})
        events = self._session(session_id).events
        return {"delivered": events is not None and events.steer(text)}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Unknown custom notifications are ignored, as the protocol asks."""

    async def aclose(self) -> None:
        """Cancel running turns and stop every session's MCP servers."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.cancel()
        await asyncio.gather(*(s.aclose() for s in sessions), return_exceptions=True)
        await self._agent.aclose()  # the MCP servers of the agent itself


async def _run_turn(session: Session, turn: Turn, text: str | tuple[UserPart, ...]) -> schema.StopReason:
    """The turn's ACP stop reason; after a cancel always ``cancelled``, never an error."""
    token = session.token
    assert token is not None
    try:
        async with session.stream(text, turn) as events:
            session.events = events
            async for event in events:
                await turn.handle(event)
    except Exception as exc:
        if isinstance(exc, ToolloopError) and exc.transcript is not None:
            session.keep(exc.transcript)
        if token.cancelled:
            return "cancelled"
        _log.error("the turn failed: %s", exc, exc_info=exc)
        raise RequestError.internal_error({"details": str(exc), "error": type(exc).__name__}) from exc
    result = turn.result
    if result is None:  # pragma: no cover - a stream always ends with RunFinished
        raise RequestError.internal_error({"details": "the run ended without a result"})
    session.keep(result.transcript)
    return "cancelled" if token.cancelled else cast(schema.StopReason, result.stop_reason.acp)


def _input_kinds(agent: Agent) -> frozenset[str]:
    """The attachment kinds the agent's model takes; none when the model cannot be made (the
    first prompt then reports why)."""
    try:
        return input_kinds(agent.model)
    except ToolloopError:
        return frozenset()


def _prompt_capabilities(kinds: frozenset[str]) -> schema.PromptCapabilities:
    """Images and audio where the model takes them; embedded resources always (text, or a binary
    resource as an image, audio or a document the model takes)."""
    return schema.PromptCapabilities(image="image" in kinds, audio="audio" in kinds, embedded_context=True)


def _context_window(agent: Agent) -> int:
    """The window the context policy assumes too: the model's own, a known model's, or the default."""
    window = getattr(agent.model, "context_window", None)
    if isinstance(window, int) and window > 0:
        return window
    name = getattr(agent.model, "name", None)
    return profile_for(name).context_window if isinstance(name, str) else DEFAULT_PROFILE.context_window


_PAGE = 50
"""Sessions per ``session/list`` page."""


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise RequestError.invalid_params({"details": f"cursor {cursor!r} is not one this agent gave"})
    return int(cursor)


def _info(info: SessionInfo) -> schema.SessionInfo:
    cwd = info.metadata.get("cwd") if isinstance(info.metadata, Mapping) else None
    return schema.SessionInfo(
        session_id=info.id,
        cwd=cwd if isinstance(cwd, str) else os.getcwd(),  # stored by another front door: ours
        title=info.title,
        updated_at=info.updated_at.isoformat() if info.updated_at is not None else None,
    )


def _busy(session_id: str) -> RequestError:
    return RequestError.invalid_params(
        {
            "details": f"session {session_id!r} is still answering a prompt; "
            "send session/cancel and wait for that prompt's answer first"
        }
    )


def _check_directories(cwd: str, additional: list[str] | None) -> None:
    if not os.path.isabs(cwd):
        raise RequestError.invalid_params({"details": f"cwd must be an absolute path, got {cwd!r}"})
    if additional:
        raise RequestError.invalid_params({"details": "additionalDirectories is not supported by this agent"})


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Tools keyed by name."""
    return {t.name: t for t in tools}
