"""``python -m tooloop.acp``: serve one agent over stdio to an ACP client (an editor)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..agent import Agent
from ..errors import ConfigurationError
from ..store import check_store_url
from ..tools.tool import Tool, as_tool

__all__ = ["build_agent", "load_tools", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tooloop.acp",
        description="Serve a tooloop agent over the Agent Client Protocol on stdin/stdout.",
    )
    parser.add_argument("--agent", help="an agent defined in tooloop.toml")
    parser.add_argument("--model", help='a model string, e.g. "openai:gpt-4.1" or "ollama:qwen3"')
    parser.add_argument("--system", help="instructions for the model")
    parser.add_argument(
        "--tool", action="append", default=[], metavar="MODULE:NAME", help="a tool: module:name or file.py:name"
    )
    parser.add_argument("--store", metavar="URL", help="store sessions here and offer session/load")
    parser.add_argument("--max-turns", type=int, help="model requests per prompt turn")
    return parser


def load_tools(paths: Iterable[str]) -> list[Tool]:
    """Tools from ``package.module:name`` or ``path/file.py:name``; ``name`` may be a tool, a
    function or a list of them."""
    tools: list[Tool] = []
    for path in paths:
        module_name, _, attr = path.rpartition(":")
        if not module_name or not attr:
            raise ConfigurationError(f"--tool {path!r}: use the form package.module:function or file.py:function")
        try:
            module = _import(module_name)
        except (ImportError, OSError) as exc:
            raise ConfigurationError(f"--tool {path!r}: cannot import {module_name!r} ({exc})") from exc
        except Exception as exc:  # the module itself failed: a syntax error, or code that raised on import
            raise ConfigurationError(
                f"--tool {path!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        value: Any = getattr(module, attr, _MISSING)
        if value is _MISSING:
            raise ConfigurationError(f"--tool {path!r}: {module_name!r} has no {attr!r}")
        values = value if isinstance(value, list | tuple) else [value]
        try:
            tools.extend(as_tool(v) for v in values)
        except ConfigurationError as exc:
            raise ConfigurationError(f"--tool {path!r}: not a tool ({exc})") from None
    return tools


_MISSING = object()


def _import(name: str) -> ModuleType:
    if not name.endswith(".py"):
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # like 'python -m': modules of the working directory import
        return importlib.import_module(name)
    file = Path(name).resolve()
    spec = importlib.util.spec_from_file_location(file.stem, file)
    if spec is None or spec.loader is None or not file.is_file():
        raise ImportError(f"no Python file {name!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_agent(args: argparse.Namespace) -> Agent:
    """The agent the options describe."""
    if args.agent is not None:
        import tooloop

        load_agent = getattr(tooloop, "load_agent", None)
        if load_agent is None:
            raise ConfigurationError("--agent needs agents from tooloop.toml, which this version lacks")
        agent: Agent = load_agent(args.agent)
        if args.model:
            agent = agent.with_model(args.model)
    elif args.model:
        agent = Agent(args.model)
    else:
        raise ConfigurationError("give --agent NAME or --model MODEL")
    if args.system is not None:
        agent = agent.with_system(args.system)
    if args.tool:
        agent = agent.with_tools(*load_tools(args.tool))
    if args.max_turns is not None:
        agent = agent.with_limits(replace(agent.limits, max_turns=args.max_turns))  # only that field
    return agent


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, then serve until the client hangs up."""
    args = _parser().parse_args(argv)
    try:
        agent = build_agent(args)
        if args.store is not None:
            check_store_url(args.store)
    except ConfigurationError as exc:
        print(f"tooloop acp: {exc}", file=sys.stderr)
        return 2
    from .._children import sigterm_as_interrupt
    from . import serve

    sigterm_as_interrupt()  # how editors stop an agent: serve's cleanup stops the MCP servers
    try:
        asyncio.run(serve(agent, store=args.store))
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT, as for Ctrl-C
    return 0


if __name__ == "__main__":
    sys.exit(main())
