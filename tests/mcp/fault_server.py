"""An MCP server built on the official SDK's low-level server, for faults real servers rarely show.

Run with a Python that has ``mcp`` installed (the tests use the peers' own virtualenv):
``python fault_server.py``. Tools: ``hello``; ``fail_protocol`` answers with a JSON-RPC error;
``bad_output`` returns structured content that breaks its output schema; ``grow`` adds the tool
``grown`` and says so with ``notifications/tools/list_changed``; ``crash`` kills the server
mid-call. The tool list comes in two pages.
"""

from __future__ import annotations

import os

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

EMPTY = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(name="hello", description="Say hello", input_schema=EMPTY),
    types.Tool(name="fail_protocol", description="Fail with a JSON-RPC error", input_schema=EMPTY),
    types.Tool(
        name="bad_output",
        description="Structured content that breaks the output schema",
        input_schema=EMPTY,
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ),
    types.Tool(name="grow", description="Add the tool 'grown'", input_schema=EMPTY),
    types.Tool(name="crash", description="Kill the server mid-call", input_schema=EMPTY),
]
grown: list[types.Tool] = []


async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
    everything = TOOLS + grown
    if params is None or params.cursor is None:
        return types.ListToolsResult(tools=everything[:3], next_cursor="page2")
    return types.ListToolsResult(tools=everything[3:])


def text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(text=value)]


async def call_tool(ctx, params):  # type: ignore[no-untyped-def]
    name = params.name
    if name in ("hello", "grown"):
        return types.CallToolResult(content=text(f"{name} from pid {os.getpid()}"))
    if name == "fail_protocol":
        raise MCPError(-32603, "the database is unavailable")
    if name == "bad_output":
        return types.CallToolResult(content=text('{"n": "many"}'), structured_content={"n": "many"})
    if name == "grow":
        grown.append(types.Tool(name="grown", description="A tool added at run time", input_schema=EMPTY))
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=text("added the tool 'grown'"))
    if name == "crash":
        os._exit(3)
    raise MCPError(-32602, f"Unknown tool: {name}")


server = Server("fault-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
