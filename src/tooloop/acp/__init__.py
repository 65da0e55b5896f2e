"""Serve a tooloop agent to editors over the Agent Client Protocol (ACP, protocol version 1).

Needs the ``acp`` extra (``pip install 'tooloop[acp]'``), which brings the official Python SDK
(``agent-client-protocol``). Nothing in the core imports this package.

``await serve(agent)`` (or ``python -m tooloop.acp --model ...``) speaks ACP on stdin/stdout
until the client closes the connection; see ``docs/acp.md`` for what is supported.
"""

from __future__ import annotations

import logging
import sys
from typing import cast

from acp.core import AgentSideConnection
from acp.interfaces import Agent as AcpAgent

from ..agent import Agent
from ..store import Store, open_store
from .server import AcpServer
from .session import SessionTools
from .wire import LineTransport, claim_stdout, is_regular_file, open_stdio

__all__ = ["AcpServer", "SessionTools", "serve"]


async def serve(agent: Agent, *, store: Store | str | None = None, tools: SessionTools | None = None) -> None:
    """Serve ``agent`` over stdio until the client closes standard input.

    From here on, standard output carries protocol messages only: anything else written to it
    (prints, logs, child processes) goes to standard error. With ``store`` (a :class:`Store` or
    a store URL) conversations are stored sessions and ``session/load`` is offered.
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="tooloop acp: %(levelname)s %(message)s")
    opened = open_store(store) if isinstance(store, str) else None  # a bad URL fails before stdout is claimed
    from_file = is_regular_file(sys.stdin.fileno())
    reader, writer = await open_stdio(claim_stdout())
    server = AcpServer(agent, store=opened or store, tools=tools)  # type: ignore[arg-type]
    # session/resume and session/close are "unstable" in the SDK's router: served all the same
    conn = AgentSideConnection(
        cast(AcpAgent, server),
        LineTransport(reader, writer, one_at_a_time=from_file),
        listening=False,
        use_unstable_protocol=True,
    )
    try:
        await conn.listen()
    finally:
        await server.aclose()
        await conn.close()
        if opened is not None:
            await opened.close()
