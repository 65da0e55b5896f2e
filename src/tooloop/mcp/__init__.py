"""Tools from MCP servers: ``Agent(model, tools=[MCPServer.stdio("mcp-server-time")])``.

Needs the ``mcp`` extra: ``pip install "tooloop[mcp]"``. See :class:`MCPServer`.
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ..errors import ConfigurationError

    raise ConfigurationError(f'{exc}. MCP servers need the extra: pip install "tooloop[mcp]"') from exc

from ._catalog import MCPPrompt, MCPPromptArgument, PromptMessage
from ._elicitation import Elicitation, ElicitationAnswer, ElicitationHandler
from .server import ApprovalPolicy, MCPServer

__all__ = [
    "ApprovalPolicy",
    "Elicitation",
    "ElicitationAnswer",
    "ElicitationHandler",
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPServer",
    "PromptMessage",
]
