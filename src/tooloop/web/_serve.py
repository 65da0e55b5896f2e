"""Running the web app under uvicorn and saying where it listens."""

from __future__ import annotations

import asyncio
import socket
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
    listening = _listen(options.host, options.port)
    app = create_app(options.store, token=options.token, config=options.config, hosts=hosts)
    # Open pages hold live streams: on Ctrl-C give them two seconds, not for ever.
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listening]))
    while not server.started:
        if task.done():
            await task
            raise ServeError(f"could not listen on {options.host}:{options.port}")
        await asyncio.sleep(0.02)
    port = listening.getsockname()[1]
    shown = f"[{options.host}]" if ":" in options.host else options.host
    query = f"?token={options.token}" if options.token else ""
    announce(f"http://{shown}:{port}/{query}")
    await task


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, or a ServeError that says why there is none (a port in use...)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another --port)") from exc
    sock.set_inheritable(True)
    return sock
