"""One ACP session: its agent (with the client's MCP servers), its conversation, its running turn."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from acp import RequestError, schema

from ..agent import Agent
from ..errors import ConfigurationError
from ..loop.cancel import CancelToken
from ..loop.frontdoors import EventStream
from ..messages import Usage, UserPart
from ..tools.tool import Tool
from ..transcript import Transcript
from .elicit import ClientAsker

if TYPE_CHECKING:
    from ..mcp import ElicitationHandler
    from .turn import Turn

__all__ = ["McpServerSpec", "Session", "SessionTools"]

_log = logging.getLogger("tooloop.acp")

McpServerSpec: TypeAlias = schema.McpServerStdio | schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer
"""An MCP server as a client describes it in ``session/new`` or ``session/load``."""


class SessionTools:
    """Turns the MCP servers a client passes into tools of its session (stdio and streamable HTTP).

    Each server's tools are named ``<server name>__<tool>`` so they never collide with the
    agent's own tools or another server's. Annotations from a client's servers are not trusted,
    so with the default ``approve="destructive"`` every call of theirs asks the user first (an
    "always allow" answer covers the rest of the session).
    """

    def __init__(self, *, approve: str = "destructive", timeout: float | None = None):
        self.approve = approve
        self.timeout = timeout

    @property
    def http(self) -> bool:
        """Whether streamable HTTP servers are accepted (``mcpCapabilities.http``): with the MCP SDK."""
        return importlib.util.find_spec("mcp") is not None

    async def connect(
        self, specs: Sequence[McpServerSpec], cwd: str, ask: ElicitationHandler | None = None
    ) -> list[Any]:
        """Started servers for ``specs``; ``-32602`` naming a server that cannot be used. ``ask``
        answers their questions to the user (MCP elicitation)."""
        if not specs:
            return []
        servers = [self._server(spec, cwd, ask) for spec in specs]
        results = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
        failures = [f"{server.name}: {result}" for server, result in zip(servers, results, strict=True) if result]
        if failures:
            await asyncio.gather(*(s.aclose() for s in servers), return_exceptions=True)
            raise RequestError.invalid_params({"details": "; ".join(failures)})
        return servers

    def _server(self, spec: McpServerSpec, cwd: str, ask: ElicitationHandler | None) -> Any:
        try:
            from ..mcp import MCPServer
        except ConfigurationError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        options: dict[str, Any] = {"name": spec.name, "prefix": f"{spec.name}__", "approve": self.approve}
        if self.timeout is not None:
            options["timeout"] = self.timeout
        if ask is not None:
            options["elicitation"] = ask
        if isinstance(spec, schema.McpServerStdio):
            env = {variable.name: variable.value for variable in spec.env}
            return MCPServer.stdio(spec.command, spec.args, env=env, cwd=cwd, **options)
        if isinstance(spec, schema.HttpMcpServer) and self.http:
            headers = {header.name: header.value for header in spec.headers}
            return MCPServer.http(spec.url, headers, **options)
        kind = getattr(spec, "type", "unknown")
        raise RequestError.invalid_params({"details": f"{kind} MCP servers are not supported ({spec.name!r})"})


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
        self.turn: Turn | None = None
        """The prompt turn running now, if any."""
        self.events: EventStream | None = None
        """The running turn's run, while it runs (steering messages go to it)."""
        self.spent = Usage()
        """What the session's turns used and cost so far (a loaded session starts from its stored totals)."""
        self.ask: ClientAsker | None = None
        """Puts the questions of MCP servers to the user (elicitation) to this session's client."""
        self._sources = tuple(sources)
        self._owners: dict[str, str] = {}
        """Tool name -> the name of the tool source (MCP server) offering it, as last listed."""

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
        ask: ClientAsker | None = None,
    ) -> Session:
        """A session whose agent also has the tools of ``servers``; ``ask`` puts their questions
        to the user (MCP elicitation) to the client."""
        sources = await tools.connect(servers, cwd, ask)
        if sources:
            agent = agent.with_tools(*sources)
        session = cls(session_id, cwd, agent, sources, stored=stored)
        if ask is not None:
            ask.running = session.running
            session.ask = ask
        return session

    def running(self, server: str) -> list[str]:
        """The ids of the running turn's calls of the MCP server named ``server`` (the client's or
        the agent's own)."""
        if self.turn is None:
            return []
        return self.turn.running({tool for tool, owner in self._owners.items() if owner == server})

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
        self.turn = None
        self.events = None

    def cancel(self) -> None:
        """Cancel the running turn, if any."""
        if self.token is not None:
            self.token.cancel("the client cancelled the prompt turn")

    def stream(self, text: str | tuple[UserPart, ...], turn: Turn) -> EventStream:
        """The events of one turn: a stored session continues itself, else from the history."""
        if self.stored:
            return self.agent.stream(text, cancel=self.token, approve=turn.approve)
        return self.agent.stream(text, history=self.history, cancel=self.token, approve=turn.approve)

    def keep(self, transcript: Transcript) -> None:
        """The conversation after a turn (a stored session keeps it in the store)."""
        if not self.stored:
            self.history = transcript

    async def tool_map(self) -> Mapping[str, Tool]:
        """The tools of the session by name, its MCP servers' included (for titles and kinds); which
        server offers which tool is noted for :meth:`running`."""
        tools = {t.name: t for t in self.agent.tools}
        owners: dict[str, str] = {}
        for source in self.agent.tool_sources:
            try:
                listed = await source.list_tools()
            except Exception as exc:  # a server that fails shows in the call's outcome instead
                _log.warning("could not list the tools of %s: %s", source.name, exc)
                continue
            tools.update((t.name, t) for t in listed)
            owners.update((t.name, source.name) for t in listed)
        self._owners = owners
        return tools

    async def aclose(self) -> None:
        """Stop the session's MCP servers."""
        for source in self._sources:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()
