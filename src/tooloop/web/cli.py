"""``tooloop web``: serve the web app; the CLI imports this module only when the command runs."""

from __future__ import annotations

import asyncio
import sys
import webbrowser
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(add_completion=False, rich_markup_mode="rich")

_EXAMPLES = """[bold]Examples[/bold]

  tooloop web

  tooloop web --store postgresql://localhost/agents --port 8800 --open
"""


@app.command(epilog=_EXAMPLES)
def web(
    store: Annotated[
        str | None,
        typer.Option(
            "--store", metavar="URL", help="The sessions to show (default: $TOOLOOP_STORE or ./tooloop-sessions.db)."
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; only this machine by default.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).", min=0, max=65535)] = 8765,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the address in a browser.")] = False,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="Answer requests without the token (only for a trusted machine).")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", metavar="FILE", help="The tooloop.toml whose agents fork and re-run.")
    ] = None,
) -> None:
    """Look at sessions in a browser: timelines, live runs, fork and re-run, compare, batch results.

    Prints the address to open; it holds a random token that every request needs (--no-token
    turns that off). Nothing stored is changed or deleted: fork and re-run only add sessions.
    """
    from ..store.journal import user_store_url

    try:
        from . import _serve
    except ImportError as exc:
        typer.echo(f"tooloop web needs the web extra: pip install 'tooloop[web]' ({exc})", err=True)
        raise typer.Exit(2) from exc
    url = store or user_store_url()
    options = _serve.Options(url, host, port, None if no_token else _serve.new_token(), config)
    opened = webbrowser.open if open_browser else None
    try:
        asyncio.run(_serve.serve(options, announce=lambda address: _announce(address, opened)))
    except KeyboardInterrupt:
        pass
    except _serve.ServeError as exc:
        typer.echo(f"tooloop web: {exc}", err=True)
        raise typer.Exit(2) from exc


def _announce(address: str, opened: object) -> None:
    print(f"tooloop web: {address}", flush=True)
    note = "the address holds the token every request needs" if "token=" in address else "no token: --no-token"
    print(f"  (Ctrl-C stops it; {note})", file=sys.stderr, flush=True)
    if callable(opened):
        opened(address)
