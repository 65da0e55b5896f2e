"""Tools: the ``@tool`` decorator, parameter schemas, and concurrent execution."""

from .tool import Tool, ToolContext, as_tool, tool

__all__ = ["Tool", "ToolContext", "as_tool", "tool"]
