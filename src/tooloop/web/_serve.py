"""Running the web app under uvicorn and saying where it listens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from ..errors import ConfigurationError
from ..store import check_store_url
from ._app import create_app, new_token

__all__ = ["Options", "ServeError", "new_token", "serve"]

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class ServeError(Exception):
    """The server could not start (a bad store URL, a port in use...)."""


@dataclass(frozen=True, slots=True)
class Options:
    """What ``tooloop web`` was asked for."""

    store: str
    host: str
    port: int
    token: str | None
    config: Path | None = None


async def serve(options: Options, announce: Callable[[str], None]) -> None:
    """Serve until interrupted; ``announce`` gets the address to open once the server listens."""
    try:
        check_store_url(options.store)
    except ConfigurationError as exc:
        raise ServeError(str(exc)) from exc
    hosts = frozenset({"127.0.0.1", "localhost", "[::1]"}) if options.host in _LOOPBACK else None
    app = create_app(options.store, token=options.token, config=options.config, hosts=hosts)
    config = uvicorn.Config(app, host=options.host, port=options.port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            raise ServeError(f"could not listen on {options.host}:{options.port}")
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    shown = f"[{options.host}]" if ":" in options.host else options.host
    query = f"?token={options.token}" if options.token else ""
    announce(f"http://{shown}:{port}/{query}")
    await task
