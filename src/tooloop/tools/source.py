"""``ToolSource``: tools that live outside the agent (an MCP server's), started and listed on demand.

The loop knows a source only through this protocol: it asks for the current tools before every
model request, and the agent starts and closes its sources. What a source is made of (a
subprocess, an HTTP session) is its own business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .tool import Tool

__all__ = ["ToolSource"]


@runtime_checkable
class ToolSource(Protocol):
    """A provider of tools with a life of its own: started, listed, closed.

    A source is shared by every run of the agents it belongs to, so its methods must be safe to
    call from concurrent runs.
    """

    @property
    def name(self) -> str:
        """A short name for messages."""
        ...

    async def start(self) -> None:
        """Make the tools available; does nothing when already started."""
        ...

    async def list_tools(self) -> Sequence[Tool]:
        """The tools offered now, starting the source on first use.

        Called before every model request, so it must be cheap when nothing changed.
        """
        ...

    async def aclose(self) -> None:
        """Release what :meth:`start` acquired; a later use starts the source again."""
        ...
