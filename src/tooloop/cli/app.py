"""The ``tooloop`` command: the Typer application and its commands.

Every command's work lives in a module of its own; this one declares options, help and examples.
Subcommands of other subpackages register in :data:`LAZY_COMMANDS` and are imported only when
invoked or listed, so ``tooloop run`` never pays for them.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from ..errors import ToolloopError
from .approvals import Approve
from .exits import CliError, ExitCode, describe, exit_code_for_error
from .terminal import Terminal

__all__ = ["LAZY_COMMANDS", "CliCommand", "app", "main"]

LAZY_COMMANDS: dict[str, str] = {"acp": "tooloop.acp.cli:app", "web": "tooloop.web.cli:app"}
"""Subcommands defined elsewhere: name -> ``"module:attribute"`` of a ``typer.Typer`` (or a
click command), imported on first use. An extra that is not installed gives a command that says
which one to install."""


def _missing_extra(name: str, error: ImportError) -> Any:
    stub = typer.Typer(add_completion=False)

    @stub.command(name=name, help=f"(not available: {error}; install it with pip install 'tooloop\\[{name}]')")
    def unavailable() -> None:
        Terminal().error(f"'tooloop {name}' needs an extra: pip install 'tooloop[{name}]' ({error})")
        raise typer.Exit(ExitCode.USAGE)

    return typer.main.get_command(stub)


def _installed(target: str) -> bool:
    """True when the module defining the command is part of this installation (its package's
    optional dependencies may still be missing: invoking it then says which extra to install)."""
    module = target.partition(":")[0]
    try:
        if importlib.util.find_spec(module.rpartition(".")[0]) is None:
            return False
        return importlib.util.find_spec(module) is not None
    except ImportError:  # the package is there, its dependencies are not
        return True


class LazyGroup(TyperGroup):
    """A command group that imports the subcommands of :data:`LAZY_COMMANDS` when first needed."""

    def list_commands(self, ctx: Any) -> list[str]:
        lazy = [n for n in LAZY_COMMANDS if n not in self.commands and _installed(LAZY_COMMANDS[n])]
        return [*super().list_commands(ctx), *lazy]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in LAZY_COMMANDS or not _installed(LAZY_COMMANDS[cmd_name]):
            return command
        module_name, _, attribute = LAZY_COMMANDS[cmd_name].partition(":")
        try:
            target = getattr(importlib.import_module(module_name), attribute)
        except ImportError as exc:
            return _missing_extra(cmd_name, exc)
        command = typer.main.get_command(target) if isinstance(target, typer.Typer) else target
        command.name = cmd_name
        self.commands[cmd_name] = command
        return command


def _pairs(_ctx: Any, value: Any) -> list[str]:
    return [json.dumps(list(pair)) for pair in value or ()]


class CliCommand(TyperCommand):
    """A command of ``tooloop``: flags show no value placeholder in the help, and ``-o/--option``
    takes two values (``KEY VALUE``, repeatable), handed to the command as JSON pairs."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for param in self.params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
            if param.name == "option":
                param.nargs = 2
                param.multiple = True
                param.process_value = _pairs  # type: ignore[method-assign,assignment]

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


def option_pairs(values: list[str] | None) -> tuple[tuple[str, Any], ...]:
    """``-o KEY VALUE`` pairs as :class:`CliCommand` hands them over, each value read as JSON
    when it is JSON."""
    from .options import option_value

    pairs = [json.loads(value) for value in values or ()]
    return tuple((key, option_value(text)) for key, text in pairs)


app = typer.Typer(
    name="tooloop",
    cls=LazyGroup,
    help="The multi-turn LLM tool-calling loop from a terminal: run, chat, sessions.",
    epilog="Exit codes: 0 answered · 1 error · 2 usage · 3 limit · 4 approval needed · 5 refused · 130 cancelled.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from .._version import __version__

        sys.stdout.write(f"tooloop {__version__}\n")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_show_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """The multi-turn LLM tool-calling loop from a terminal: run, chat, sessions."""


# ---------------------------------------------------------------------- shared options

Debug = Annotated[bool, typer.Option("--debug", help="On an error, show the full traceback.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only the answer: no progress or tool lines.")]
Store = Annotated[
    str | None,
    typer.Option(
        "--store", metavar="URL", help="Session store (sqlite:///file.db, postgresql://...); default $TOOLOOP_STORE."
    ),
]
Model = Annotated[
    str | None,
    typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="e.g. openai:gpt-4.1-mini, ollama:qwen3, @name."),
]
System = Annotated[str | None, typer.Option("--system", "-s", metavar="TEXT", help="Instructions for the model.")]
Tools = Annotated[
    list[str] | None,
    typer.Option(
        "--tool",
        "-t",
        metavar="MODULE:NAME",
        help="A tool by import path (package.module:function, file.py:function) or a tools plugin's name; repeatable.",
    ),
]
AgentName = Annotated[
    str | None,
    typer.Option(
        "--agent",
        "-A",
        metavar="NAME",
        help="An agent of tooloop.toml (\\[agents.NAME]), or module:attribute of an Agent; options change it.",
    ),
]
Mcp = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="COMMAND",
        help='An MCP server: "COMMAND ARGS" run over stdio, or a \\[mcp_servers] name of tooloop.toml; repeatable.',
    ),
]
McpUrl = Annotated[
    list[str] | None,
    typer.Option("--mcp-url", metavar="URL", help="An MCP server over streamable HTTP; repeatable."),
]
MaxTurns = Annotated[int | None, typer.Option("--max-turns", metavar="N", help="Stop after N model requests.")]
Timeout = Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", help="Stop a run after this long.")]
ApproveOption = Annotated[
    Approve,
    typer.Option(
        "--approve",
        case_sensitive=False,
        help="Tool calls that need approval: ask on the terminal, allow all, or deny all.",
    ),
]
Options = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        metavar="KEY VALUE",
        help="A model option: temperature, max_tokens, top_p, seed, stop, or any provider field; repeatable.",
    ),
]
BaseUrl = Annotated[
    str | None, typer.Option("--base-url", metavar="URL", help="The provider's server (an OpenAI-compatible URL...).")
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option("--api-key-env", metavar="NAME", help="Read the API key from this environment variable."),
]
Attach = Annotated[
    list[str] | None,
    typer.Option(
        "--attach",
        "-a",
        metavar="PATH|URL|-",
        help="An image, audio or document for the model (a file, an http(s) URL, or - for stdin); repeatable.",
    ),
]
AttachType = Annotated[
    str | None,
    typer.Option(
        "--attach-type", metavar="TYPE", help="The media type of the attachments (e.g. image/png) when not detected."
    ),
]
Fragment = Annotated[
    list[str] | None,
    typer.Option(
        "--fragment", "-f", metavar="PATH", help="A text file whose text goes into the prompt, before it; repeatable."
    ),
]
Schema = Annotated[
    str | None,
    typer.Option(
        "--schema",
        metavar="SCHEMA",
        help="""Answer as JSON matching this: a JSON Schema file, inline JSON Schema, or '{"name": "str"}'; """
        "the session remembers it.",
    ),
]
NoSchema = Annotated[bool, typer.Option("--no-schema", help="Answer in plain text: forget the session's --schema.")]
NoStream = Annotated[bool, typer.Option("--no-stream", help="Plain requests instead of streamed ones.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of text.")]


def finish(work: Callable[[], Coroutine[Any, Any, ExitCode | None]], *, debug: bool, quiet: bool = False) -> NoReturn:
    """Run a command's coroutine; turn what it raises into a short message and an exit code."""
    debug = debug or bool(os.environ.get("TOOLOOP_DEBUG"))
    try:
        code = asyncio.run(work())
    except BrokenPipeError:
        _reader_went_away()
    except (CliError, ToolloopError, OSError) as exc:
        if debug:
            traceback.print_exc()
        Terminal(quiet=quiet).error(describe(exc))
        raise typer.Exit(exit_code_for_error(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.CANCELLED) from None
    except Exception as exc:
        if debug:
            raise
        Terminal().error(f"internal error: {type(exc).__name__}: {exc} (run again with --debug for the traceback)")
        raise typer.Exit(ExitCode.ERROR) from None
    raise typer.Exit(code or ExitCode.OK)


def _reader_went_away() -> NoReturn:
    """The reader of stdout closed it (``| head``): stop quietly, as other commands do; what was
    still buffered is dropped, not reported at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise typer.Exit(ExitCode.OK)


def _register_commands() -> None:
    # Imported here so that 'tooloop.cli.app' can be imported by the command modules themselves.
    from . import commands  # noqa: F401  # registers the commands on 'app'


def _one_line_plugin_warnings() -> None:
    """A broken plugin is one line on stderr (``warning: ...``), not a warning's two."""
    import warnings

    shown = warnings.showwarning

    def show(
        message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if category.__module__ == "tooloop.plugins":
            sys.stderr.write(f"warning: {message}\n")
            return
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main() -> None:
    """Entry point of the ``tooloop`` console script and ``python -m tooloop``."""
    from .._children import sigterm_as_interrupt

    sigterm_as_interrupt()  # an editor or process manager stopping us: cleaned up like Ctrl-C
    _one_line_plugin_warnings()
    _register_commands()
    app(prog_name=Path("tooloop").name)
