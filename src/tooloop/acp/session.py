"""One ACP session: its agent (with the client's MCP servers), its conversation, its running turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from acp import RequestError, schema

from ..agent import Agent
from ..loop.cancel import CancelToken
from ..loop.frontdoors import EventStream
from ..tools.tool import Tool
from ..transcript import Transcript

if TYPE_CHECKING:
    from .turn import Turn

__all__ = ["McpServerSpec", "Session", "SessionTools"]

McpServerSpec: TypeAlias = schema.McpServerStdio | schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer
"""An MCP server as a client describes it in ``session/new`` or ``session/load``."""


class SessionTools:
    """Turns the MCP servers a client passes into tools of its session."""

    @property
    def http(self) -> bool:
        """Whether streamable HTTP servers are accepted (``mcpCapabilities.http``)."""
        return False

    async def connect(self, specs: Sequence[McpServerSpec], cwd: str) -> list[Any]:
        """Tool sources for ``specs``; ``-32602`` for a server that cannot be used."""
        if specs:
            raise RequestError.invalid_params({"details": "MCP servers passed by the client are not supported"})
        return []


class Session:
    """A conversation with one agent; at most one prompt turn runs at a time."""

    def __init__(self, session_id: str, cwd: str, agent: Agent, sources: Sequence[Any], *, stored: bool):
        self.id = session_id
        self.cwd = cwd
        self.agent = agent
        self.stored = stored
        self.history: Transcript | None = None
        self.remembered: dict[str, bool] = {}
        """Tool name -> True (always allow) or False (always reject), for the session's life."""
        self.token: CancelToken | None = None
        self._sources = tuple(sources)

    @classmethod
    async def open(
        cls,
        session_id: str,
        cwd: str,
        agent: Agent,
        tools: SessionTools,
        servers: Sequence[McpServerSpec],
        *,
        stored: bool,
    ) -> Session:
        """A session whose agent also has the tools of ``servers``."""
        sources = await tools.connect(servers, cwd)
        if sources:
            agent = agent.with_tools(*sources)
        return cls(session_id, cwd, agent, sources, stored=stored)

    @property
    def busy(self) -> bool:
        """True while a prompt turn runs."""
        return self.token is not None

    def begin(self) -> CancelToken:
        """Mark a turn as running; its token cancels it."""
        self.token = CancelToken()
        return self.token

    def end(self) -> None:
        """The turn was answered."""
        self.token = None

    def cancel(self) -> None:
        """Cancel the running turn, if any."""
        if self.token is not None:
            self.token.cancel("the client cancelled the prompt turn")

    def stream(self, text: str, turn: Turn) -> EventStream:
        """The events of one turn: a stored session continues itself, else from the history."""
        if self.stored:
            return self.agent.stream(text, cancel=self.token, approve=turn.approve)
        return self.agent.stream(text, history=self.history, cancel=self.token, approve=turn.approve)

    def keep(self, transcript: Transcript) -> None:
        """The conversation after a turn (a stored session keeps it in the store)."""
        if not self.stored:
            self.history = transcript

    async def tool_map(self) -> Mapping[str, Tool]:
        """The tools of the session by name (for titles and kinds)."""
        return {t.name: t for t in self.agent.tools}

    async def aclose(self) -> None:
        """Stop the session's MCP servers."""
        for source in self._sources:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()
