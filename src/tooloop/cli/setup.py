"""From command-line options to an ``Agent``: the model, tools by import path, the store, sessions."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shlex
import sys
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..agent import Agent
from ..errors import SessionNotFoundError
from ..loop.limits import Limits
from ..store import BaseStore
from .exits import ExitCode, fail

__all__ = [
    "PROVIDER_KEYS",
    "AgentOptions",
    "ModelChoice",
    "build_agent",
    "choose_model",
    "load_tools",
    "new_session_id",
    "remember_model",
    "store_url",
]

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "ollama": (),
    "vllm": (),
    "llamacpp": (),
    "openai-compatible": (),
    "test": (),
}
"""Each built-in provider's key variables (empty: no key needed)."""

# The provider used when no model is named, first whose variable is set wins.
_DEFAULTS = (
    ("OPENAI_API_KEY", "openai:gpt-4.1-mini"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-sonnet-4-5"),
    ("GEMINI_API_KEY", "google:gemini-2.5-flash"),
    ("GOOGLE_API_KEY", "google:gemini-2.5-flash"),
    ("OLLAMA_HOST", "ollama:qwen3"),
)

_CLI_METADATA = "tooloop.cli"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model string a command uses and why, for the line that says so."""

    spec: str
    reason: str


def choose_model(explicit: str | None, remembered: str | None = None) -> ModelChoice:
    """``--model``, else the continued session's model, else ``$TOOLOOP_MODEL``, else the first
    provider whose key (or ``OLLAMA_HOST``) is set."""
    if explicit:
        return ModelChoice(explicit, "--model")
    if remembered:
        return ModelChoice(remembered, "the session's model")
    if os.environ.get("TOOLOOP_MODEL"):
        return ModelChoice(os.environ["TOOLOOP_MODEL"], "TOOLOOP_MODEL is set")
    for variable, spec in _DEFAULTS:
        if os.environ.get(variable):
            return ModelChoice(spec, f"{variable} is set")
    fail(
        "no model: pass --model PROVIDER:MODEL (e.g. --model openai:gpt-4.1-mini), set TOOLOOP_MODEL, "
        "or set a provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY); see 'tooloop models'"
    )


def _import_module(path: str) -> ModuleType:
    if path.endswith(".py"):
        file = Path(path).resolve()
        if not file.is_file():
            fail(f"--tool {path!r}: no such file")
        spec = importlib.util.spec_from_file_location(file.stem, file)
        if spec is None or spec.loader is None:
            fail(f"--tool {path!r}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(file.stem, module)
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like 'python -m': modules of the working directory import
    return importlib.import_module(path)


def load_tools(spec: str) -> list[Any]:
    """The tools named by ``package.module:name`` or ``path/file.py:name`` (a function, a ``Tool``,
    or a list of them)."""
    module_path, sep, name = spec.rpartition(":")
    if not sep or not module_path or not name:
        fail(f"--tool {spec!r} must look like package.module:function or path/to/file.py:function")
    try:
        module = _import_module(module_path)
    except ImportError as exc:
        fail(f"--tool {spec!r}: cannot import {module_path!r} ({exc}); run from the folder that holds it")
    value = getattr(module, name, None)
    if value is None:
        fail(f"--tool {spec!r}: {module_path!r} has no {name!r}")
    return list(value) if isinstance(value, list | tuple) else [value]


def store_url(explicit: str | None) -> str:
    """``--store``, else ``$TOOLOOP_STORE``, else ``sessions.db`` in the user's data folder."""
    if explicit:
        return explicit
    if os.environ.get("TOOLOOP_STORE"):
        return os.environ["TOOLOOP_STORE"]
    from platformdirs import user_data_path

    folder = user_data_path("tooloop", appauthor=False)
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'sessions.db'}"


def new_session_id() -> str:
    """A fresh session id: short, random, easy to type."""
    return uuid.uuid4().hex[:12]


async def last_session_id(store: BaseStore) -> str:
    """The most recently updated session (for ``--continue``)."""
    sessions = await store.list_sessions(limit=1)
    if not sessions:
        fail("no session to continue yet: start one with 'tooloop run \"...\"' or 'tooloop chat'")
    return sessions[0].id


async def remembered_model(store: BaseStore, session_id: str) -> str | None:
    """The model string a CLI command last used in this session, if any."""
    try:
        info = await store.get_session(session_id)
    except SessionNotFoundError:
        return None
    value = info.metadata.get(_CLI_METADATA, {})
    model = value.get("model") if isinstance(value, dict) else None
    return model if isinstance(model, str) else None


async def remember_model(store: BaseStore, session_id: str, spec: str) -> None:
    """Note in the session which model string the CLI used, so ``-c`` continues with it."""
    try:
        info = await store.get_session(session_id)
    except SessionNotFoundError:
        return  # the run wrote nothing (it failed before its first message)
    metadata = {**info.metadata, _CLI_METADATA: {"model": spec}}
    await store.set_metadata(session_id, metadata=metadata)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """What the command line says about the agent."""

    model: str | None = None
    system: str | None = None
    tools: tuple[str, ...] = ()
    max_turns: int | None = None
    timeout: float | None = None
    stream: bool = True
    agent: str | None = None
    """A ``[agents.NAME]`` of ``tooloop.toml``; the other options change it."""
    mcp: tuple[str, ...] = ()
    """``--mcp``: ``"COMMAND ARGS"`` of a stdio server, or the name of a ``[mcp_servers]`` table."""
    mcp_urls: tuple[str, ...] = ()
    extra_tools: tuple[Any, ...] = field(default_factory=tuple)


def _tools(specs: Iterable[str]) -> list[Any]:
    return [t for spec in specs for t in load_tools(spec)]


MCP_APPROVAL = "destructive"
"""The approval policy of MCP servers named on the command line: a call needs approval unless
the server marks the tool read-only or non-destructive and is trusted (see docs/mcp.md)."""


def _config() -> Any:
    from ..config import load_config

    return load_config()


def _configured_server(name: str) -> Any | None:
    """``[mcp_servers.NAME]`` of ``tooloop.toml`` when ``name`` is one (no file: None)."""
    if not name.replace("-", "").replace("_", "").isalnum():
        return None
    from ..config import find_config_file

    if find_config_file() is None:
        return None
    config = _config()
    table = config.data.mcp_servers.get(name)
    if table is None:
        return None
    from .elicit import ask_on_terminal

    if table.approve:
        return config.mcp_server(name, elicitation=ask_on_terminal)
    return config.mcp_server(name, approve=MCP_APPROVAL, elicitation=ask_on_terminal)


def mcp_servers(commands: Sequence[str], urls: Sequence[str]) -> list[Any]:
    """MCP servers from ``--mcp`` (a command line, or a server named in ``tooloop.toml``) and
    ``--mcp-url``; servers given here use the approval policy :data:`MCP_APPROVAL`."""
    if not commands and not urls:
        return []
    from ..mcp import MCPServer  # the mcp extra; a clear error names it when missing
    from .elicit import ask_on_terminal

    servers: list[Any] = []
    for line in commands:
        configured = _configured_server(line.strip())
        if configured is not None:
            servers.append(configured)
            continue
        try:
            parts = shlex.split(line)
        except ValueError as exc:
            fail(f"--mcp {line!r}: {exc}")
        if not parts:
            fail('--mcp needs a command, e.g. --mcp "uvx mcp-server-time", or a server named in tooloop.toml')
        servers.append(MCPServer.stdio(parts[0], parts[1:], approve=MCP_APPROVAL, elicitation=ask_on_terminal))
    servers.extend(MCPServer.http(url, approve=MCP_APPROVAL, elicitation=ask_on_terminal) for url in urls)
    return servers


def model_label(model: Any) -> str:
    """``provider:name`` of a model object (what the CLI shows and remembers)."""
    name = getattr(model, "name", None) or type(model).__name__
    provider = getattr(model, "provider", None)
    return name if not provider or name.startswith(f"{provider}:") else f"{provider}:{name}"


def _changes(options: AgentOptions) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if options.max_turns is not None:
        changes["max_turns"] = options.max_turns
    if options.timeout is not None:
        changes["timeout"] = options.timeout
    return changes


def _from_config(options: AgentOptions, explicit_model: str | None, extra: Sequence[Any]) -> tuple[Agent, ModelChoice]:
    from ..config import load_agent

    assert options.agent is not None
    agent = load_agent(options.agent)
    if explicit_model:
        agent, choice = agent.with_model(explicit_model), ModelChoice(explicit_model, "--model")
    else:
        choice = ModelChoice(model_label(agent.model), f"agent {options.agent}")
    if options.system is not None:
        agent = agent.with_system(options.system)
    if extra:
        agent = agent.with_tools(*extra)
    if _changes(options):
        agent = agent.with_limits(**_changes(options))
    return agent, choice


def build_agent(
    options: AgentOptions, remembered: str | None, store: BaseStore, session_id: str
) -> tuple[Agent, ModelChoice]:
    """The agent the options describe, bound to ``session_id`` in ``store``, and its model choice.

    ``--model`` wins, then the agent's own model (``--agent``), then the session's, then the
    environment (:func:`choose_model`).
    """
    extra: list[Any] = [*_tools(options.tools), *mcp_servers(options.mcp, options.mcp_urls), *options.extra_tools]
    if options.agent is not None:
        agent, choice = _from_config(options, options.model, extra)
    else:
        choice = choose_model(options.model, remembered)
        agent = Agent(choice.spec, system=options.system, tools=extra, limits=Limits(**_changes(options)))
    if not options.stream:
        agent = agent.with_settings(stream=False)
    agent = agent.with_session(session_id, store)
    agent.model  # noqa: B018  # create the model now: a bad model string or a missing key stops here
    return agent, choice


def check_positive(name: str, value: float | None) -> None:
    """Usage error unless ``value`` is None or above zero."""
    if value is not None and value <= 0:
        fail(f"{name} must be above zero, not {value}", ExitCode.USAGE)
