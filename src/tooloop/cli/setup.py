"""From command-line options to an ``Agent``: the model, tools by import path, the store, sessions."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shlex
import sys
import traceback
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..agent import Agent
from ..errors import ConfigurationError
from ..loop.limits import Limits
from ..store import BaseStore
from .exits import ExitCode, fail
from .ids import find_session, last_session_id
from .remember import SessionSetup, load_setup, restore
from .terminal import Terminal

__all__ = [
    "AgentOptions",
    "ModelChoice",
    "build_agent",
    "choose_model",
    "load_tools",
    "new_session_id",
    "store_url",
]

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
        if str(file.parent) not in sys.path:
            sys.path.insert(0, str(file.parent))  # its neighbours import, as from a script there
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like 'python -m': modules of the working directory import
    return importlib.import_module(path)


def _where(error: BaseException, module_path: str) -> str:
    """``file:line`` of the innermost frame of the user's code that raised ``error``."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith("<frozen")]
    last = inside[-1] if inside else (frames[-1] if frames else None)
    return f"{last.filename}:{last.lineno}" if last is not None else module_path


def _module_for(spec: str, module_path: str, option: str = "--tool") -> ModuleType:
    try:
        return _import_module(module_path)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        target = module_path.removesuffix(".py").replace("/", ".").lstrip(".")
        if missing and not target.endswith(missing) and not target.startswith(missing):
            fail(f"{option} {spec!r}: {module_path!r} needs the module {missing!r}, which is not installed ({exc})")
        fail(f"{option} {spec!r}: cannot import {module_path!r} ({exc}); run from the folder that holds it")
    except SyntaxError as exc:
        fail(f"{option} {spec!r}: syntax error at {_where(exc, module_path)}: {exc.msg}")
    except Exception as exc:
        fail(f"{option} {spec!r}: importing it raised {type(exc).__name__}: {exc} (at {_where(exc, module_path)})")


def load_tools(spec: str) -> list[Any]:
    """The tools named by ``package.module:name`` or ``path/file.py:name`` (a function, a ``Tool``,
    or a list of them)."""
    module_path, sep, name = spec.rpartition(":")
    if not sep and spec.replace("-", "_").isidentifier():
        return _plugin_tools(spec)
    if not sep or not module_path or not name:
        fail(f"--tool {spec!r} must look like package.module:function, path/to/file.py:function or a plugin's name")
    module = _module_for(spec, module_path)
    value = getattr(module, name, None)
    if value is None:
        fail(f"--tool {spec!r}: {module_path!r} has no {name!r}")
    return list(value) if isinstance(value, list | tuple) else [value]


def _plugin_tools(name: str) -> list[Any]:
    from ..errors import ArgumentValueError
    from ..plugins import plugin_tools

    try:
        return plugin_tools(name)
    except ArgumentValueError as exc:
        fail(
            f"--tool {name!r}: {exc}; a tool is package.module:function, path/to/file.py:function, "
            "or the name of an installed tools plugin ('tooloop plugins' lists them)"
        )
    except ConfigurationError as exc:
        fail(f"--tool {name!r}: {exc}")


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


STORE_CONNECT_SECONDS = 5.0
"""How long a command waits for an unreachable database before it says so."""


def open_cli_store(explicit: str | None) -> BaseStore:
    """The session store of a command (:func:`store_url`); a PostgreSQL server that does not
    answer is reported after :data:`STORE_CONNECT_SECONDS`, in one line, its password masked."""
    from ..store import check_store_url, open_store

    url = store_url(explicit)
    if check_store_url(url) != "postgresql":
        return open_store(url)
    import logging

    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)  # the error line says it all
    return open_store(url, retry_for=STORE_CONNECT_SECONDS)


def new_session_id() -> str:
    """A fresh session id: short, random, easy to type."""
    return uuid.uuid4().hex[:12]


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
    options: tuple[tuple[str, Any], ...] = ()
    """``-o KEY VALUE`` pairs (model settings and provider fields)."""
    base_url: str | None = None
    api_key_env: str | None = None
    extra_tools: tuple[Any, ...] = field(default_factory=tuple)
    schema: dict[str, Any] | None = None
    """``--schema`` (``{}``: ``--no-schema``); see :attr:`SessionSetup.schema`."""

    @property
    def setup(self) -> SessionSetup:
        """The part a session remembers."""
        return SessionSetup(
            model=self.model,
            system=self.system,
            tools=self.tools,
            mcp=self.mcp,
            mcp_urls=self.mcp_urls,
            agent=self.agent,
            options=self.options,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            schema=self.schema,
        )

    def with_setup(self, setup: SessionSetup) -> AgentOptions:
        """These options with the remembered part replaced by ``setup``."""
        return replace(
            self,
            model=setup.model,
            system=setup.system,
            tools=setup.tools,
            mcp=setup.mcp,
            mcp_urls=setup.mcp_urls,
            agent=setup.agent,
            options=setup.options,
            base_url=setup.base_url,
            api_key_env=setup.api_key_env,
            schema=setup.schema,
        )


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


def _from_config(
    options: AgentOptions, explicit_model: Any, reason: str, extra: Sequence[Any]
) -> tuple[Agent, ModelChoice]:
    assert options.agent is not None
    agent = _asking_on_terminal(named_agent(options.agent))
    if explicit_model is not None:
        agent, choice = agent.with_model(explicit_model), ModelChoice(options.model or "", reason)
    else:
        choice = ModelChoice(model_label(agent.model), f"agent {options.agent}")
    if options.system is not None:
        agent = agent.with_system(options.system)
    if extra:
        agent = agent.with_tools(*extra)
    if _changes(options):
        agent = agent.with_limits(**_changes(options))
    return agent, choice


def _asking_on_terminal(agent: Agent) -> Agent:
    """``agent`` whose own MCP servers that have no one to ask (a ``tooloop.toml`` agent's) put
    their questions to the user on the terminal, as the servers of ``--mcp`` do."""
    if not agent.tool_sources:
        return agent
    try:
        from ..mcp.server import asking_through
    except ConfigurationError:  # no MCP SDK: none of the sources is an MCP server
        return agent
    from .elicit import ask_on_terminal

    return asking_through(agent, ask_on_terminal)


def named_agent(name: str) -> Agent:
    """``--agent``: ``NAME`` of ``[agents.NAME]`` in ``tooloop.toml``, or ``module:attribute`` /
    ``path/file.py:attribute`` of an :class:`Agent` defined in Python."""
    if ":" not in name:
        from ..config import load_agent

        return load_agent(name)
    module_path, _, attribute = name.rpartition(":")
    value = getattr(_module_for(name, module_path, "--agent"), attribute, None)
    if not isinstance(value, Agent):
        what = "nothing" if value is None else f"a {type(value).__name__}"
        fail(f"--agent {name!r}: {module_path!r} has {what} named {attribute!r}, not an Agent")
    return value


def _api_key(options: AgentOptions) -> str | None:
    if options.api_key_env is None:
        return None
    key = os.environ.get(options.api_key_env)
    if not key:
        fail(f"--api-key-env {options.api_key_env}: the variable {options.api_key_env} is not set (or is empty)")
    return key


def _cli_wording(message: str) -> str:
    """A library message as the command line says it (its options, not keyword arguments)."""
    return (
        message.replace("pass api_key_env='NAME'", "pass --api-key-env NAME")
        .replace("or pass api_key=...", "or pass --api-key-env NAME (the variable that holds the key)")
        .replace("pass api_key=... or", "pass --api-key-env NAME (the variable that holds the key) or")
        .replace("need an explicit base_url", "need the server's URL: pass --base-url URL")
    )


def _model(spec: str, options: AgentOptions) -> Any:
    """The model object for ``spec`` when --base-url or --api-key-env change it, else the string."""
    if options.base_url is None and options.api_key_env is None:
        return spec
    from ..models.registry import get_model

    return get_model(spec, base_url=options.base_url, api_key=_api_key(options))


def build_agent(
    options: AgentOptions, remembered: str | None, store: BaseStore, session_id: str
) -> tuple[Agent, ModelChoice]:
    """The agent the options describe, bound to ``session_id`` in ``store``, and its model choice.

    ``--model`` wins, then the agent's own model (``--agent``), then the session's, then the
    environment (:func:`choose_model`).
    """
    from .options import settings_changes

    extra: list[Any] = [*_tools(options.tools), *mcp_servers(options.mcp, options.mcp_urls), *options.extra_tools]
    settings = settings_changes(options.options)
    try:
        if options.agent is not None:
            spec = options.model or remembered
            explicit = _model(spec, options) if spec else None
            reason = "--model" if options.model else "the session's model"
            agent, choice = _from_config(replace(options, model=spec), explicit, reason, extra)
            if explicit is None and (options.base_url or options.api_key_env):
                agent = agent.with_model(_model(choice.spec, options))
        else:
            choice = choose_model(options.model, remembered)
            limits = Limits(**_changes(options))
            agent = Agent(_model(choice.spec, options), system=options.system, tools=extra, limits=limits)
        if settings:
            agent = agent.with_settings(**settings)
        if not options.stream:
            agent = agent.with_settings(stream=False)
        if options.schema:
            agent = agent.with_output_type(options.schema)
        agent = agent.with_session(session_id, store)
        agent.model  # noqa: B018  # create the model now: a bad model string or a missing key stops here
    except ConfigurationError as exc:
        raise ConfigurationError(_cli_wording(str(exc))) from exc
    return agent, choice


@dataclass(frozen=True, slots=True)
class SessionStart:
    """The session a command works on and the agent set up for it."""

    session_id: str
    agent: Agent
    choice: ModelChoice
    setup: SessionSetup
    """What the session remembers after this command (the model is filled in once known)."""
    new: bool


async def open_session(store: BaseStore, session: str | None, continue_last: bool, term: Terminal) -> tuple[str, bool]:
    """The session id ``--session`` / ``-c`` name (a unique prefix and ``last`` work), and whether
    it is a new one. ``--session`` with an id no session has starts it, and says so."""
    if session and continue_last:
        fail("--session and --continue name two sessions: give one")
    if continue_last:
        return await last_session_id(store), False
    if not session:
        return new_session_id(), True
    found = await find_session(store, session)
    if found is None:
        term.note(f"no stored session {session!r}: starting a new session under this id")
        return session, True
    return found, False


async def start_session(store: BaseStore, options: AgentOptions, session_id: str, term: Terminal) -> SessionStart:
    """The agent for ``session_id``: the options given, the rest restored from the session's setup
    (named on stderr)."""
    remembered = await load_setup(store, session_id)
    setup, restored = restore(options.setup, remembered or SessionSetup())
    if restored:
        term.note("restored from the session: " + "; ".join(restored))
    _say_schema_change(options.schema, remembered, term)
    _use_config(setup)
    remembered_model = remembered.model if remembered is not None else None
    agent, choice = build_agent(options.with_setup(setup), remembered_model, store, session_id)
    # An agent's own model is not remembered: only one the command line chose instead of it.
    model = choice.spec if setup.agent is None else (options.model or remembered_model)
    return SessionStart(
        session_id, agent, choice, replace(setup, model=model, config=_config_used(setup)), remembered is None
    )


def _say_schema_change(given: dict[str, Any] | None, remembered: SessionSetup | None, term: Terminal) -> None:
    """A ``--schema`` or ``--no-schema`` that replaces the session's schema says so: it is
    remembered in its place."""
    if given is None or remembered is None or remembered.schema is None or given == remembered.schema:
        return
    if given:
        term.note("--schema replaces the session's output schema (and is remembered in its place)")
    else:
        term.note("--no-schema: answers in plain text; the session's output schema is forgotten")


def _use_config(setup: SessionSetup) -> None:
    """Names of ``tooloop.toml`` (an agent, MCP servers) mean the same file as when they were
    given, unless ``TOOLOOP_CONFIG`` says otherwise."""
    if setup.config and not os.environ.get("TOOLOOP_CONFIG") and Path(setup.config).is_file():
        os.environ["TOOLOOP_CONFIG"] = setup.config


def _config_used(setup: SessionSetup) -> str | None:
    if not (setup.agent or setup.mcp):
        return None
    from ..config import find_config_file

    found = find_config_file()
    return str(found.resolve()) if found is not None else None


def check_positive(name: str, value: float | None) -> None:
    """Usage error unless ``value`` is None or above zero."""
    if value is not None and value <= 0:
        fail(f"{name} must be above zero, not {value}", ExitCode.USAGE)
