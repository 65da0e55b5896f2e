"""An MCP server built on the official SDK's ``MCPServer``, for the edges a client must hold.

Run with a Python that has ``mcp`` installed (the tests use the peers' own virtualenv):
``python hostile_server.py`` speaks stdio; ``python hostile_server.py http PORT`` serves
streamable HTTP on ``127.0.0.1:PORT/mcp``.

Tools: ``a.b`` and ``a_b`` (two names one sanitiser could merge), ``delete_all``, ``big_text``
(``size`` characters), ``image_and_resource`` (an image and a text resource of ``size``
characters), ``ask_name`` (asks the user for a name by elicitation), ``whoami`` (the HTTP session
id the call came in), ``grow`` (adds the tool ``grown`` and says so with
``notifications/tools/list_changed``). Prompts:
``review``. Resources: ``notes://today`` (text), ``notes://logo`` (binary), ``notes://secret``.
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(60)).decode()

server = MCPServer("hostile-server")


@server.tool(name="a.b", description="The dotted tool")
def dotted() -> str:
    return "the dotted tool ran"


@server.tool(name="a_b", description="The underscored tool")
def underscored() -> str:
    return "the underscored tool ran"


@server.tool(description="Delete everything")
def delete_all() -> str:
    return "deleted everything"


@server.tool(description="Text of the given size")
def big_text(size: int) -> str:
    return "x" * (size - 3) + "END"


@server.tool(description="An image and an embedded text resource of the given size")
def image_and_resource(size: int) -> list[types.ContentBlock]:
    resource = types.TextResourceContents(uri="file:///big.txt", mime_type="text/plain", text="r" * size)
    return [types.ImageContent(data=PNG, mime_type="image/png"), types.EmbeddedResource(resource=resource)]


class Name(BaseModel):
    name: str


@server.tool(description="Ask the user for their name")
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept":
        return f"hello {answer.data.name}"
    return f"no name: {answer.action}"


class Consent(BaseModel):
    remember: bool = False


@server.tool(description="Ask the user to agree (a question with nothing required)")
async def ask_consent(ctx: Context) -> str:
    answer = await ctx.elicit("May I clear the cache?", Consent)
    return f"consent: {answer.action}"


@server.tool(description="Ask the user to open a page (URL elicitation)")
async def ask_login(ctx: Context) -> str:
    answer = await ctx.elicit_url("Sign in to continue", "https://example.com/login", "login-1")
    return f"login: {answer.action}"


@server.tool(description="The HTTP session this call came in")
def whoami(ctx: Context) -> str:
    request = ctx.request_context.request
    session = request.headers.get("mcp-session-id") if request is not None else None
    return f"session {session} pid {os.getpid()}"


def grown() -> str:
    return "the grown tool ran"


@server.tool(description="Add the tool 'grown' and say so")
async def grow(ctx: Context) -> str:
    server.add_tool(grown, name="grown", description="A tool added at run time")
    await ctx.session.send_tool_list_changed()
    await anyio.sleep(0.5)  # over HTTP the notice takes another stream than the answer: let it arrive first
    return "added the tool 'grown'"


@server.prompt(description="Ask for a code review")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


@server.resource("notes://today", description="Today's note", mime_type="text/plain")
def today() -> str:
    return "buy milk"


@server.resource("notes://logo", description="The logo", mime_type="image/png")
def logo() -> bytes:
    return base64.b64decode(PNG)


@server.resource("notes://secret", description="Not for the agent", mime_type="text/plain")
def secret() -> str:
    return "the secret note"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
