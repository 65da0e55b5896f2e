"""``tooloop acp``: serve an agent to an editor; the CLI imports this module only when the command runs."""

from __future__ import annotations

from typing import Annotated

import typer

from .__main__ import main as serve_main

__all__ = ["app"]

app = typer.Typer(add_completion=False, rich_markup_mode="rich")

_EXAMPLES = """[bold]Examples[/bold]

  tooloop acp --model openai:gpt-4.1 --tool mypkg.tools:search

  tooloop acp --agent coder --store sqlite:///tooloop-sessions.db

In an editor (Zed: settings.json, "agent_servers"): command "tooloop", args ["acp", "--model", "openai:gpt-4.1"].
"""


@app.command(epilog=_EXAMPLES)
def acp(
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="An agent from tooloop.toml.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="e.g. openai:gpt-4.1, ollama:qwen3.")
    ] = None,
    system: Annotated[str | None, typer.Option("--system", "-s", metavar="TEXT", help="Instructions.")] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option("--tool", "-t", metavar="MODULE:NAME", help="A tool by import path or file.py:name; repeatable."),
    ] = None,
    store: Annotated[
        str | None, typer.Option("--store", metavar="URL", help="Store sessions here and offer session/load.")
    ] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", metavar="N", help="Model requests per turn.")] = None,
) -> None:
    """Serve an agent to an editor over the Agent Client Protocol on stdin/stdout.

    Standard output carries protocol messages only; logs, tool output and MCP servers' output go to
    standard error. See docs/acp.md for what is supported and how to add tooloop to an editor.
    """
    argv: list[str] = []
    for flag, value in (("--agent", agent), ("--model", model), ("--system", system), ("--store", store)):
        if value is not None:
            argv += [flag, value]
    for path in tool or ():
        argv += ["--tool", path]
    if max_turns is not None:
        argv += ["--max-turns", str(max_turns)]
    raise typer.Exit(serve_main(argv))
