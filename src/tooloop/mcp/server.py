"""``MCPServer``: an MCP server's tools as a tool source of an agent."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED

from mcp import types

from ..errors import ConfigurationError, ToolError, ToolSourceError
from ..messages import ToolOutput
from ..tools.tool import Tool, ToolContext
from ._connection import Connection, HttpSpec, SamplingHandler
from ._results import to_output
from ._stdio import MAX_MESSAGE_SIZE, StdioSpec

__all__ = ["ApprovalPolicy", "MCPServer"]

ApprovalPolicy = Literal["never", "always", "destructive"]
"""Which of a server's tools need approval: none, all, or those that may change things."""

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
    * ``include`` / ``exclude``: offer only these tools, or all but these (the server's names).
    * ``timeout``: seconds one call may take; past it the call is cancelled on the server.
    * ``approve``: ``"never"`` (the default, like plain functions), ``"always"``, or
      ``"destructive"``: a call needs approval unless the tool is read-only or non-destructive
      by its annotations, and annotations count only with ``trust_annotations=True``.
    * ``sampling``: a model (or model string) that answers the server's sampling requests.
    * ``max_message_size``: the largest message in bytes read from the server (32 MiB); a
      larger answer fails its call with a :class:`ToolError`.
    """

    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        *,
        name: str,
        prefix: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        timeout: float | None = None,
        trust_annotations: bool = False,
        approve: ApprovalPolicy = "never",
        start_timeout: float = 60.0,
        sampling: Any = None,
        max_message_size: int = MAX_MESSAGE_SIZE,
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
        self.include = frozenset(include) if include is not None else None
        self.exclude = frozenset(exclude)
        self.timeout = timeout
        self.trust_annotations = trust_annotations
        self.approve: ApprovalPolicy = approve
        self.start_timeout = start_timeout
        self._sampling = _sampler(sampling) if sampling is not None else None
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
            connection = Connection(self._name, self._spec, self._sampling)
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
            listed = await self._list_all(connection)
            tools = self._tools = self._wrap(listed, connection)
        return tools

    async def _list_all(self, connection: Connection) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await connection.session.list_tools(params=params)
            except MCPError as exc:
                raise ToolSourceError(f"{connection.describe()} failed to list its tools: {exc.error.message}") from exc
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def _wrap(self, listed: Sequence[types.Tool], connection: Connection) -> tuple[Tool, ...]:
        known = {t.name for t in listed}
        _check_filter(connection, "include", self.include, known)
        _check_filter(connection, "exclude", self.exclude, known)
        wanted = [t for t in listed if t.name not in self.exclude and (self.include is None or t.name in self.include)]
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

    # ------------------------------------------------------------------ calls

    async def _call(self, tool_name: str, **arguments: Any) -> ToolOutput:
        context: ToolContext = arguments.pop(_CONTEXT)
        connection = await self._connect()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            context.report_progress(progress, total, message)

        try:
            result = await connection.session.call_tool(tool_name, arguments, progress_callback=on_progress)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED and exc.error.message == _CLOSED:
                raise self._stopped(connection) from None
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


def _check_filter(connection: Connection, option: str, names: frozenset[str] | None, known: set[str]) -> None:
    """A name in ``include``/``exclude`` that is no tool of the server is a mistake: say which."""
    unknown = sorted(names - known) if names else []
    if unknown:
        raise ConfigurationError(
            f"{option}= of MCP server {connection.name!r} names {', '.join(map(repr, unknown))}, which is not one of "
            f"its tools (its tools: {', '.join(sorted(known)) or 'none'}); check the spelling"
        )


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
