"""One live session with an MCP server, owned by a task of its own.

The SDK's transports and session are context managers that must be entered and left by the same
task; the owner task does both, and other tasks (the runs' tool calls) use the session meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.client._transport import TransportStreams
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED

from mcp import ClientSession, types

from ..errors import ToolSourceError
from ._stdio import MAX_MESSAGE_SIZE, StdioProcess, StdioSpec, stdio_transport

__all__ = ["Connection", "HttpSpec", "SamplingHandler"]

SamplingHandler = Callable[[types.CreateMessageRequestParams], Awaitable[types.CreateMessageResult]]
ElicitationCallback = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]

_Streams = TransportStreams
_SESSION_HEADER = "mcp-session-id"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpSpec:
    """How to reach a streamable HTTP server."""

    url: str
    headers: Mapping[str, str] | None = None
    max_message_size: int = MAX_MESSAGE_SIZE


class Connection:
    """A started server: its session, process (for stdio) and whether its tool list changed."""

    def __init__(
        self,
        name: str,
        spec: StdioSpec | HttpSpec,
        sampling: SamplingHandler | None,
        elicitation: ElicitationCallback | None = None,
    ):
        self.name = name
        self.spec = spec
        self.loop = asyncio.get_running_loop()
        self.process: StdioProcess | None = None
        self.tools_changed = False
        self.broken = False
        self.session_ended = False
        """The server answered 404 to a request carrying our session id: the session is gone."""
        self._sampling = sampling
        self._elicitation = elicitation
        self._session: ClientSession | None = None
        self._ready: asyncio.Future[None] = self.loop.create_future()
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    @property
    def session(self) -> ClientSession:
        """The initialized session."""
        assert self._session is not None
        return self._session

    def usable(self) -> bool:
        """True while the server runs, on the running event loop, and nothing broke."""
        try:
            same_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False
        exited = self.process is not None and self.process.returncode is not None
        return same_loop and not self.broken and not exited and self._owner is not None and not self._owner.done()

    def describe(self) -> str:
        """The server's name and how it is reached, for error messages: the program it runs or the
        origin of its URL, never arguments, paths or queries (they may carry keys)."""
        return describe(self.name, self.spec)

    def redact(self, text: str) -> str:
        """``text`` without the server's URL or arguments (an HTTP error quotes the URL it asked)."""
        return redact(text, self.spec)

    def stderr_tail(self) -> str:
        """What the server last wrote to stderr, as a suffix for error messages."""
        tail = self.redact(self.process.tail()) if self.process is not None else ""
        return f"\nits stderr ended with:\n{tail}" if tail.strip() else ""

    async def open(self, start_timeout: float) -> None:
        """Start the server and complete the MCP handshake, or raise :class:`ToolSourceError`."""
        self._owner = asyncio.create_task(self._own(), name=f"tooloop-mcp-{self.name}")
        try:
            async with asyncio.timeout(start_timeout):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise ToolSourceError(
                f"{self.describe()} did not answer the MCP handshake within {start_timeout:g} seconds"
                + self.stderr_tail()
            ) from None
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop the server (waits for the process to end)."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            if not self._ready.done() or self._ready.cancelled() or self._ready.exception() is not None:
                owner.cancel()  # still in the handshake: nothing waits for the closing signal yet
            await asyncio.wait([owner])
        if not self._ready.done():
            self._ready.cancel()
        elif not self._ready.cancelled():
            self._ready.exception()  # retrieved: a failure nobody waits for any more is not an error

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        sampling_callback=self._on_sampling if self._sampling is not None else None,
                        elicitation_callback=self._on_elicitation if self._elicitation is not None else None,
                        client_info=types.Implementation(name="tooloop", version=_version()),
                    )
                )
                await session.initialize()
                self._session = session
                self._ready.set_result(None)
                await self._closing.wait()
        except Exception as exc:
            self.broken = True
            if not self._ready.done():
                self._ready.set_exception(self._start_error(exc))

    def _start_error(self, exc: BaseException) -> ToolSourceError:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if isinstance(exc, ToolSourceError):
            return ToolSourceError(f"{self.describe()} failed to start: {self.redact(str(exc))}")
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            reason = "it closed the connection before completing the MCP handshake"
        else:
            reason = self.redact(str(exc)) or type(exc).__name__
        exited = self.process.returncode if self.process is not None else None
        status = f" (exit status {exited})" if exited is not None else ""
        return ToolSourceError(f"{self.describe()} failed to start{status}: {reason}" + self.stderr_tail())

    def _transport(self) -> AbstractAsyncContextManager[_Streams]:
        if isinstance(self.spec, StdioSpec):
            return self._stdio(self.spec)
        return _http(self.spec, self._on_response)

    @asynccontextmanager
    async def _stdio(self, spec: StdioSpec) -> AsyncIterator[_Streams]:
        async with stdio_transport(spec) as (read, write, process):
            self.process = process
            yield read, write

    async def _on_response(self, response: Any) -> None:
        if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
            self.session_ended = True

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed = True

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert self._elicitation is not None
        return await self._elicitation(params)

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        assert self._sampling is not None
        try:
            return await self._sampling(params)
        except Exception as exc:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"sampling failed: {exc}")


@asynccontextmanager
async def _http(spec: HttpSpec, on_response: Callable[[Any], Awaitable[None]]) -> AsyncIterator[_Streams]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers=dict(spec.headers or {}))
    client.event_hooks["response"].append(on_response)
    async with (
        client,
        streamable_http_client(spec.url, http_client=client, max_sse_event_size=spec.max_message_size) as streams,
    ):
        yield streams[0], streams[1]


def describe(name: str, spec: StdioSpec | HttpSpec) -> str:
    """``MCP server 'name' (command: program)`` or ``(url: scheme://host:port)``."""
    if isinstance(spec, StdioSpec):
        return f"MCP server {name!r} (command: {spec.command})"
    return f"MCP server {name!r} (url: {origin(spec.url)})"


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: no user, password, path or query."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<invalid URL>"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}" if parts.scheme and host else "<URL without a host>"


def redact(text: str, spec: StdioSpec | HttpSpec) -> str:
    """``text`` with the server's URL, or its command line and arguments, replaced by a mark."""
    if isinstance(spec, HttpSpec):
        secrets = [spec.url, spec.url.split("#", 1)[0], spec.url.split("?", 1)[-1] if "?" in spec.url else ""]
        shown = f"{origin(spec.url)}/..."
    else:
        secrets = [spec.command_line, *spec.args] if spec.args else []  # the program itself is shown anyway
        shown = "..."
    for secret in sorted((s for s in secrets if len(s) >= _SHORTEST_REDACTED), key=len, reverse=True):
        text = text.replace(secret, shown)
    return text


_SHORTEST_REDACTED = 6  # shorter arguments ('-v', 'run') are flags and words, not keys


def _version() -> str:
    from .. import __version__

    return __version__
