"""``MCPServer``: an MCP server's tools as a tool source of an agent."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import hashlib
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED

from mcp import types

from ..errors import ConfigurationError, ToolError, ToolSourceError
from ..messages import EmbeddedResource, ResourceLink, ToolOutput
from ..tools.tool import Tool, ToolContext
from ._catalog import (
    Filters,
    MCPPrompt,
    PromptMessage,
    paginate,
    to_link,
    to_prompt,
    to_prompt_message,
    to_resource,
)
from ._connection import Connection, HttpSpec, SamplingHandler
from ._elicitation import ElicitationHandler, answer_with
from ._results import to_output
from ._stdio import MAX_MESSAGE_SIZE, StdioSpec

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["ApprovalPolicy", "MCPServer", "asking_through"]

ApprovalPolicy = Literal["never", "always", "destructive"]
"""Which of a server's tools need approval: none, all, or those that may change things."""

_T = TypeVar("_T")
_CONTEXT = "_tooloop_context"
_CLOSED = "Connection closed"  # the SDK's message when the transport ended under a request
_NAME_LIMIT = 64  # the strictest provider (OpenAI) takes 64 characters of [A-Za-z0-9_-]


class MCPServer:
    """An MCP server whose tools an agent offers its model: ``Agent(model, tools=[add, server])``.

    Build one with :meth:`stdio` (a subprocess) or :meth:`http` (streamable HTTP). The server
    starts on first use, or with every other server of the agent in ``async with agent:``; it is
    shared by the runs of its agents and stopped by ``await agent.aclose()``, at the end of
    ``async with``, or at interpreter exit. A server that stopped is started again on the next call.

    Options:

    * ``prefix``: put before every tool name (``prefix="time_"`` offers ``time_get_current_time``);
      names are made to fit every provider's rules (``[A-Za-z0-9_-]``, at most 64 characters).
    * ``include`` / ``exclude``: offer only these tools, or all but these (the server's names);
      or a mapping by component: ``exclude={"tools": ["delete_all"], "prompts": ["debug"],
      "resources": ["notes://secret"]}`` (resources by URI or name). A name the server does not
      list is a :class:`ConfigurationError`.
    * ``timeout``: seconds one call may take; past it the call is cancelled on the server.
    * ``approve``: ``"never"`` (the default, like plain functions), ``"always"``, or
      ``"destructive"``: a call needs approval unless the tool is read-only or non-destructive
      by its annotations, and annotations count only with ``trust_annotations=True``.
    * ``sampling``: a model (or model string) that answers the server's sampling requests.
    * ``elicitation``: answers the server's questions to the user (MCP elicitation): a function
      taking an :class:`Elicitation` and returning an :class:`ElicitationAnswer` (or awaitable).
      Without it the server is told the client cannot ask the user.
    * ``max_message_size``: the largest message in bytes read from the server (32 MiB); a
      larger answer fails its call with a :class:`ToolError`.
    """

    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        *,
        name: str,
        prefix: str | None = None,
        include: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
        exclude: Iterable[str] | Mapping[str, Iterable[str]] = (),
        timeout: float | None = None,
        trust_annotations: bool = False,
        approve: ApprovalPolicy = "never",
        start_timeout: float = 60.0,
        sampling: Any = None,
        max_message_size: int = MAX_MESSAGE_SIZE,
        elicitation: ElicitationHandler | None = None,
    ):
        if approve not in ("never", "always", "destructive"):
            raise ConfigurationError(f"approve= must be 'never', 'always' or 'destructive', got {approve!r}")
        if timeout is not None and timeout <= 0:
            raise ConfigurationError(f"timeout= of MCP server {name!r} must be positive, got {timeout!r}")
        if max_message_size <= 0:
            raise ConfigurationError(
                f"max_message_size= of MCP server {name!r} must be positive, got {max_message_size!r}"
            )
        self._spec = dataclasses.replace(spec, max_message_size=max_message_size)
        self._name = name
        self.prefix = prefix or ""
        self.filters = Filters.of(name, include, exclude)
        self.timeout = timeout
        self.trust_annotations = trust_annotations
        self.approve: ApprovalPolicy = approve
        self.start_timeout = start_timeout
        self._sampling = _sampler(sampling) if sampling is not None else None
        self._asker = elicitation
        self._elicitation = answer_with(name, elicitation) if elicitation is not None else None
        self._connection: Connection | None = None
        self._tools: tuple[Tool, ...] | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a subprocess speaking MCP on stdin/stdout.

        It gets a minimal environment (``PATH``, ``HOME`` and the like) plus ``env``, never the
        whole environment of this process, so API keys do not leak into servers by accident.
        """
        spec = StdioSpec(command=command, args=tuple(args), env=dict(env) if env else None, cwd=cwd)
        return cls(spec, name=name or _stem(command, args), **options)

    @classmethod
    def http(
        cls, url: str, headers: Mapping[str, str] | None = None, *, name: str | None = None, **options: Any
    ) -> MCPServer:
        """A server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""
        spec = HttpSpec(url=url, headers=dict(headers) if headers else None)
        return cls(spec, name=name or _host(url), **options)

    def __repr__(self) -> str:
        return f"MCPServer({self._name!r})"

    @property
    def name(self) -> str:
        """The server's name (in tool errors and messages)."""
        return self._name

    @property
    def elicitation(self) -> ElicitationHandler | None:
        """What answers the server's questions to the user (None: the server is told nobody can)."""
        return self._asker

    def with_elicitation(self, handler: ElicitationHandler | None) -> MCPServer:
        """A server like this one whose questions to the user go to ``handler``.

        The copy is not started: it runs its own process (or HTTP session) on first use, and
        this one goes on as it was. It is how a server built elsewhere (a ``tooloop.toml``
        agent's) gets the asker of where it is served (``tooloop acp`` asks the editor).
        """
        server = copy.copy(self)
        server._asker = handler
        server._elicitation = answer_with(self._name, handler) if handler is not None else None
        server._connection, server._tools = None, None
        server._locks = weakref.WeakKeyDictionary()
        return server

    @property
    def include(self) -> frozenset[str] | None:
        """The only tools offered (None: all)."""
        return self.filters.include["tools"]

    @property
    def exclude(self) -> frozenset[str]:
        """The tools never offered."""
        return self.filters.exclude["tools"]

    @property
    def pid(self) -> int | None:
        """The process id of a running stdio server."""
        connection = self._connection
        if connection is None or connection.process is None or connection.process.returncode is not None:
            return None
        return connection.process.pid

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start the server (does nothing when it runs); raises :class:`ToolSourceError`."""
        await self._connect()

    async def aclose(self) -> None:
        """Stop the server; a later use starts it again."""
        async with self._lock():
            connection, self._connection = self._connection, None
            self._tools = None
            if connection is not None and connection.loop is asyncio.get_running_loop():
                await connection.close()

    async def __aenter__(self) -> MCPServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def _connect(self) -> Connection:
        connection = self._connection
        if connection is not None and connection.usable():
            return connection
        async with self._lock():
            connection = self._connection
            if connection is not None and connection.usable():
                return connection
            if connection is not None and connection.loop is asyncio.get_running_loop():
                await connection.close()  # it died: reap it before starting again
            connection = Connection(self._name, self._spec, self._sampling, self._elicitation)
            self._connection, self._tools = None, None
            await connection.open(self.start_timeout)
            self._connection = connection
            return connection

    # ------------------------------------------------------------------ tools

    async def list_tools(self) -> Sequence[Tool]:
        """The server's tools (filtered, prefixed), listed again after it said they changed."""
        connection = await self._connect()
        tools = self._tools
        if tools is None or connection.tools_changed:
            connection.tools_changed = False
            try:
                connection, listed = await self._request(_list_all)
            except MCPError as exc:
                raise ToolSourceError(
                    f"{connection.describe()} failed to list its tools: {exc.error.message}"
                ) from None
            tools = self._tools = self._wrap(listed, connection)
        return tools

    async def _request(self, action: Callable[[Connection], Awaitable[_T]]) -> tuple[Connection, _T]:
        """``action`` on the live session, and the connection it ran on. A server that ended our
        session (HTTP 404 to a request carrying its ``Mcp-Session-Id``: expired, or the server
        restarted) did not run the request: as the MCP specification asks, a new session is
        opened (one for all the requests that found the old one gone) and the request sent once more."""
        connection = await self._connect()
        try:
            return connection, await action(connection)
        except (MCPError, ToolSourceError):  # also: closed under us by a call that renewed the session
            if not connection.session_ended:
                raise
        connection.broken = True
        renewed = await self._connect()
        try:
            return renewed, await action(renewed)
        except MCPError:
            if renewed.session_ended:
                raise ToolSourceError(f"{renewed.describe()} ended a new session at once; giving up") from None
            raise

    def _wrap(self, listed: Sequence[types.Tool], connection: Connection) -> tuple[Tool, ...]:
        self.filters.check(self._name, "tools", {t.name for t in listed})
        wanted = [t for t in listed if self.filters.wants("tools", t.name)]
        names = _provider_names([self.prefix + spec.name for spec in wanted])
        return tuple(self._tool(spec, name) for spec, name in zip(wanted, names, strict=True))

    def _tool(self, spec: types.Tool, name: str) -> Tool:
        return Tool(
            name=name,
            description=spec.description or spec.title or "",
            parameters=spec.input_schema,
            function=functools.partial(self._call, spec.name),
            requires_approval=self._needs_approval(spec.annotations),
            timeout=self.timeout,
            context_param=_CONTEXT,
        )

    def _needs_approval(self, annotations: types.ToolAnnotations | None) -> bool:
        if self.approve == "never":
            return False
        if self.approve == "always" or not self.trust_annotations or annotations is None:
            return True
        # the spec's defaults: not read-only, destructive
        return not (annotations.read_only_hint is True or annotations.destructive_hint is False)

    # ------------------------------------------------------------------ prompts and resources

    async def prompts(self) -> tuple[MCPPrompt, ...]:
        """The prompt templates the server offers (filtered by ``include`` / ``exclude``)."""

        async def listing(connection: Connection) -> list[types.Prompt]:
            async def page(params: types.PaginatedRequestParams | None) -> tuple[list[types.Prompt], str | None]:
                listed = await connection.session.list_prompts(params=params)
                return listed.prompts, listed.next_cursor

            return await paginate(page)

        listed = await self._ask("list its prompts", listing)
        self.filters.check(self._name, "prompts", {p.name for p in listed})
        return tuple(to_prompt(p) for p in listed if self.filters.wants("prompts", p.name))

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> tuple[PromptMessage, ...]:
        """The messages of the prompt ``name`` filled with ``arguments``; ``messages[0].text`` can
        be a run's prompt. A prompt that is not offered is a :class:`ConfigurationError`."""
        if not self.filters.wants("prompts", name):
            raise ConfigurationError(f"prompt {name!r} of MCP server {self._name!r} is excluded")

        async def get(connection: Connection) -> types.GetPromptResult:
            return await connection.session.get_prompt(name, dict(arguments) if arguments else None)

        result = await self._ask(f"fill its prompt {name!r}", get)
        return tuple(to_prompt_message(m) for m in result.messages)

    async def resources(self) -> tuple[ResourceLink, ...]:
        """The resources the server offers, as links (filtered by ``include`` / ``exclude``)."""

        async def listing(connection: Connection) -> list[types.Resource]:
            async def page(params: types.PaginatedRequestParams | None) -> tuple[list[types.Resource], str | None]:
                listed = await connection.session.list_resources(params=params)
                return listed.resources, listed.next_cursor

            return await paginate(page)

        listed = await self._ask("list its resources", listing)
        self.filters.check(self._name, "resources", {str(r.uri) for r in listed} | {r.name for r in listed})
        return tuple(to_link(r) for r in listed if self.filters.wants("resources", str(r.uri), r.name))

    async def read_resource(self, uri: str) -> tuple[EmbeddedResource, ...]:
        """The contents of the resource at ``uri`` as content parts (a tool can return them in a
        :class:`ToolOutput`). With ``include`` / ``exclude`` for resources, only a listed resource
        that is offered can be read; another is a :class:`ConfigurationError`."""
        filtered = self.filters.include["resources"] is not None or self.filters.exclude["resources"]
        if filtered and uri not in {link.uri for link in await self.resources()}:
            raise ConfigurationError(f"resource {uri!r} of MCP server {self._name!r} is not offered (include/exclude)")

        async def read(connection: Connection) -> types.ReadResourceResult:
            return await connection.session.read_resource(uri)

        result = await self._ask(f"read {uri!r}", read)
        return tuple(to_resource(c) for c in result.contents)

    async def _ask(self, what: str, action: Callable[[Connection], Awaitable[_T]]) -> _T:
        try:
            _, answer = await self._request(action)
        except MCPError as exc:
            raise ToolSourceError(f"MCP server {self._name!r} failed to {what}: {exc.error.message}") from None
        return answer

    # ------------------------------------------------------------------ calls

    async def _call(self, tool_name: str, **arguments: Any) -> ToolOutput:
        context: ToolContext = arguments.pop(_CONTEXT)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            context.report_progress(progress, total, message)

        async def call(connection: Connection) -> types.CallToolResult:
            try:
                return await connection.session.call_tool(tool_name, arguments, progress_callback=on_progress)
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED and exc.error.message == _CLOSED:
                    raise self._stopped(connection) from None
                raise

        try:
            _, result = await self._request(call)
        except MCPError as exc:
            raise ToolError(f"{exc.error.message} (MCP error {exc.code})") from None
        except RuntimeError as exc:  # the SDK checks structured content against the output schema
            raise ToolError(str(exc).split("\n\n", 1)[0]) from None
        return to_output(result)

    def _stopped(self, connection: Connection) -> ToolSourceError:
        connection.broken = True
        return ToolSourceError(
            f"{connection.describe()} stopped during the call; it will be started again on the next call"
            + connection.stderr_tail()
        )


def asking_through(agent: Agent, handler: ElicitationHandler) -> Agent:
    """``agent`` whose MCP servers that have no one to put their questions to (a ``tooloop.toml``
    agent's) ask ``handler`` instead; copies of them, not started yet, stand in for them."""
    sources = [
        source.with_elicitation(handler) if isinstance(source, MCPServer) and source.elicitation is None else source
        for source in agent.tool_sources
    ]
    if all(new is old for new, old in zip(sources, agent.tool_sources, strict=True)):
        return agent
    return agent.with_tool_sources(*sources)


_LAUNCHERS = frozenset({"node", "npx", "python", "python3", "uv", "uvx", "bunx", "deno", "sh", "bash", "docker"})


def _stem(command: str, args: Sequence[str]) -> str:
    """A default server name: the program, or the first argument of a launcher (``npx pkg``)."""
    candidates = [command]
    if command.rsplit("/", 1)[-1] in _LAUNCHERS:
        candidates = [a for a in args if not a.startswith("-")] + candidates
    for part in candidates:
        base = re.sub(r"\.(py|js|mjs|cjs|ts)$", "", part.rstrip("/").rsplit("/", 1)[-1].split("@")[0])
        stem = re.sub(r"[^A-Za-z0-9_-]", "", base)
        if stem:
            return stem
    return "mcp"


def _host(url: str) -> str:
    """A default server name from its URL: the host, never the path or query (they may carry keys)."""
    try:
        return urlsplit(url).hostname or "mcp"
    except ValueError:
        return "mcp"


async def _list_all(connection: Connection) -> list[types.Tool]:
    async def page(params: types.PaginatedRequestParams | None) -> tuple[list[types.Tool], str | None]:
        listed = await connection.session.list_tools(params=params)
        return listed.tools, listed.next_cursor

    return await paginate(page)


def _provider_names(raw_names: Sequence[str]) -> list[str]:
    """Names within every provider's rules, one per raw name, all distinct. A valid name is kept
    as it is; only invalid ones are changed, and never into a name the server already uses."""
    taken = {raw for raw in raw_names if _valid_name(raw)}
    names: list[str] = []
    for raw in raw_names:
        name = raw if _valid_name(raw) and raw not in names else _provider_name(raw, taken)
        taken.add(name)
        names.append(name)
    return names


def _valid_name(name: str) -> bool:
    return len(name) <= _NAME_LIMIT and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name) is not None


def _provider_name(raw: str, taken: set[str]) -> str:
    """``raw`` within every provider's rules, distinct from ``taken``."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", raw)
    if not re.match(r"[A-Za-z_]", name):
        name = f"_{name}"
    if len(name) > _NAME_LIMIT or name in taken:
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        name = f"{name[: _NAME_LIMIT - 9]}_{digest}"
    return name


def _sampler(model: Any) -> SamplingHandler:
    from ._sampling import sampling_handler

    return sampling_handler(model)
