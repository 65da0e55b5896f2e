"""Building models, MCP servers and agents from a validated configuration."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..agent import Agent
    from ..mcp import MCPServer
    from ..models.base import Model, ModelSettings
    from ..models.registry import ModelConfig
    from . import Config
    from ._schema import AgentTable

__all__ = ["build_agent", "mcp_server", "model_config"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def model_config(config: Config, name: str) -> ModelConfig:
    """``[models.NAME]`` as a model configuration."""
    from ..models.registry import ModelConfig

    table = config.data.models.get(name)
    if table is None:
        known = ", ".join(config.data.models) or "none"
        raise ConfigurationError(f"{config.path}: no [models.{name}] table (models defined: {known})")
    return ModelConfig(
        id=name,
        provider=table.provider,
        model=table.model,
        temperature=table.temperature,
        max_tokens=table.max_tokens,
        system=table.system,
        base_url=table.base_url,
        api_key_env=table.api_key_env,
        options=dict(table.options),
    )


def mcp_server(config: Config, name: str, **overrides: Any) -> MCPServer:
    """``[mcp_servers.NAME]`` as an :class:`MCPServer`; ``overrides`` fill options the table leaves unset."""
    from ..mcp import MCPServer

    table = config.data.mcp_servers.get(name)
    if table is None:
        known = ", ".join(config.data.mcp_servers) or "none"
        raise ConfigurationError(f"{config.path}: no [mcp_servers.{name}] table (servers defined: {known})")
    where = f"{config.path}: [mcp_servers.{name}]"
    fallback = overrides.pop("approve", None)  # fills the table's policy only when the table has none
    options: dict[str, Any] = {
        "name": name,
        "prefix": table.prefix,
        "include": table.include,
        "exclude": table.exclude,
        "timeout": table.timeout,
        "trust_annotations": table.trust_annotations,
        "approve": table.approve or fallback or "never",
        **overrides,
    }
    if table.command is not None:
        return MCPServer.stdio(
            _expand(table.command, where, "command"),
            [_expand(a, where, "args") for a in table.args],
            env=_expand_all(table.env, where, "env"),
            cwd=str((config.path.parent / table.cwd).resolve()) if table.cwd else None,
            **options,
        )
    assert table.url is not None
    return MCPServer.http(_expand(table.url, where, "url"), _expand_all(table.headers, where, "headers"), **options)


def _expand(value: str, where: str, key: str) -> str:
    def lookup(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = os.environ.get(variable)
        if found is None:
            raise ConfigurationError(f"{where} key {key!r}: the environment variable {variable} is not set")
        return found

    return _REFERENCE.sub(lookup, value)


def _expand_all(values: Mapping[str, str] | None, where: str, key: str) -> dict[str, str] | None:
    if values is None:
        return None
    return {k: _expand(v, where, f"{key}.{k}") for k, v in values.items()}


def build_agent(config: Config, name: str) -> Agent:
    """``[agents.NAME]`` as an :class:`Agent`; every mistake names the file, the table and the key."""
    from ..agent import Agent
    from ..loop.limits import Limits
    from ..models.base import ModelSettings

    table = config.agent_table(name)
    where = f"{config.path}: [agents.{name}]"
    model, system, settings = _model(config, table, where)
    limits = Limits(**table.limits.as_limits_fields())
    _importable_from(config.path.parent)
    tools: list[Any] = _tools(table.tools, where)
    _check_excluded(table, tools, where)
    for server in table.mcp_servers:
        if server not in config.data.mcp_servers:
            known = ", ".join(config.data.mcp_servers) or "none"
            raise ConfigurationError(f"{where} key 'mcp_servers': no [mcp_servers.{server}] table (defined: {known})")
        tools.append(mcp_server(config, server, approve=table.approve))
    output_type = _output_type(table.output_type, where) if table.output_type else None
    try:
        return Agent(
            model,
            system=table.system if table.system is not None else system,
            tools=tools,
            limits=limits,
            denied_tools=table.exclude_tools,
            settings=settings.merged(ModelSettings(temperature=table.temperature, max_tokens=table.max_tokens)),
            output_type=output_type,
            approve=_import(table.approver, where, "approver") if table.approver else None,
            store=table.store,
            name=name,
            tool_search=_tool_search(table),
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _tool_search(table: AgentTable) -> Any:
    """``tool_search`` and ``tool_search_threshold`` as ``Agent(tool_search=...)`` takes them."""
    from ..tools.search import ToolSearch

    mode, threshold = table.tool_search, table.tool_search_threshold
    if mode is False or (mode is None and threshold is None):
        return None
    search = ToolSearch() if mode is None or mode is True else ToolSearch(mode=mode)
    return search if threshold is None else replace(search, threshold=threshold)


def _model(config: Config, table: AgentTable, where: str) -> tuple[Model | str, str | None, ModelSettings]:
    from ..models.base import ModelSettings
    from ..models.registry import check_model_string, registered_model_configs

    name = table.model.removeprefix("@")
    if name in config.data.models:  # "fast" and "@fast" both mean [models.fast] of this very file
        named = model_config(config, name)
        try:
            return named.create(), named.system, named.settings
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where} key 'model' ([models.{name}]): {exc}") from exc
    known = ", ".join(config.data.models) or "none"
    if table.model.startswith("@"):
        if any(c.id == name for c in registered_model_configs()):
            return table.model, None, ModelSettings()
        raise ConfigurationError(
            f"{where} key 'model': {table.model!r} names no [models.{name}] table in this file (defined: {known})"
        )
    if ":" not in table.model:
        raise ConfigurationError(
            f"{where} key 'model': {table.model!r} is neither a name from [models] (defined: {known}) "
            "nor a model string like 'openai:gpt-4.1'"
        )
    try:
        check_model_string(table.model)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where} key 'model': {exc}") from None
    return table.model, None, ModelSettings()


def _importable_from(folder: Path) -> None:
    """Modules beside the configuration file import first, whatever the working directory (as
    they would from a script in that folder): its import paths mean the same from Python and
    from the command line."""
    path = str(folder.resolve())
    if path not in sys.path:
        sys.path.insert(0, path)


def _tools(paths: list[str], where: str) -> list[Any]:
    """The tools of ``tools = [...]``, each checked to be a tool, and no two with one name."""
    from ..agent import _is_source
    from ..tools.tool import as_tool

    tools: list[Any] = []
    named: dict[str, str] = {}
    for path in paths:
        value = _import(path, where, "tools")
        if _is_source(value):
            tools.append(value)
            continue
        try:
            tool = as_tool(value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where} key 'tools': {path!r} is not a tool ({exc})") from None
        if tool.name in named:
            raise ConfigurationError(
                f"{where} key 'tools': {named[tool.name]!r} and {path!r} are both named {tool.name!r}; "
                "tool names must be unique"
            )
        named[tool.name] = path
        tools.append(tool)
    return tools


def _check_excluded(table: AgentTable, tools: list[Any], where: str) -> None:
    """Names in ``exclude_tools`` must be tools of the agent (checked here when no MCP server
    adds tools; the names of servers' tools are checked when the servers list them)."""
    if table.mcp_servers or len(tools) != len(table.tools):
        return
    names = {t.name for t in tools}
    unknown = [n for n in table.exclude_tools if n not in names]
    if unknown:
        raise ConfigurationError(
            f"{where} key 'exclude_tools': {', '.join(map(repr, unknown))} is not a tool of this agent "
            f"(its tools: {', '.join(sorted(names)) or 'none'}); check the spelling"
        )


def _output_type(path: str, where: str) -> Any:
    from ..loop.output import OutputSpec

    value = _import(path, where, "output_type")
    if isinstance(value, str):
        raise ConfigurationError(
            f"{where} key 'output_type': {path!r} is the string {value!r}, not a type; name a pydantic model, "
            "a dataclass or a TypedDict"
        )
    try:
        OutputSpec.for_type(value)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where} key 'output_type': {path!r}: {exc}") from None
    return value


def _import(path: str, where: str, key: str) -> Any:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"{where} key {key!r}: cannot import {module_name!r} ({exc})") from exc
    except Exception as exc:  # the module itself failed: a syntax error, or code that raised on import
        raise ConfigurationError(
            f"{where} key {key!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        value = module
        for part in attribute.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise ConfigurationError(f"{where} key {key!r}: module {module_name!r} has no {attribute!r}") from None
    return value
