"""Building models, MCP servers and agents from a validated configuration."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
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
    options: dict[str, Any] = {
        "name": name,
        "prefix": table.prefix,
        "include": table.include,
        "exclude": table.exclude,
        "timeout": table.timeout,
        "trust_annotations": table.trust_annotations,
        "approve": table.approve or overrides.pop("approve", None) or "never",
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
    """``[agents.NAME]`` as an :class:`Agent`."""
    from ..agent import Agent
    from ..loop.limits import Limits
    from ..models.base import ModelSettings

    table = config.agent_table(name)
    where = f"{config.path}: [agents.{name}]"
    model, system, settings = _model(config, table, where)
    limits = Limits(**table.limits.model_dump(exclude_none=True))
    tools: list[Any] = [_import(path, where, "tools") for path in table.tools]
    for server in table.mcp_servers:
        if server not in config.data.mcp_servers:
            known = ", ".join(config.data.mcp_servers) or "none"
            raise ConfigurationError(f"{where} key 'mcp_servers': no [mcp_servers.{server}] table (defined: {known})")
        tools.append(mcp_server(config, server, approve=table.approve))
    return Agent(
        model,
        system=table.system if table.system is not None else system,
        tools=tools,
        limits=limits,
        denied_tools=table.exclude_tools,
        settings=settings.merged(ModelSettings(temperature=table.temperature, max_tokens=table.max_tokens)),
        output_type=_import(table.output_type, where, "output_type") if table.output_type else None,
        approve=_import(table.approver, where, "approver") if table.approver else None,
        store=table.store,
    )


def _model(config: Config, table: AgentTable, where: str) -> tuple[Model | str, str | None, ModelSettings]:
    from ..models.base import ModelSettings

    if table.model in config.data.models:
        named = model_config(config, table.model)
        try:
            return named.create(), named.system, named.settings
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where} key 'model' ([models.{table.model}]): {exc}") from exc
    if table.model.startswith("@") or ":" in table.model:
        return table.model, None, ModelSettings()
    known = ", ".join(config.data.models) or "none"
    raise ConfigurationError(
        f"{where} key 'model': {table.model!r} is neither a name from [models] (defined: {known}) "
        "nor a model string like 'openai:gpt-4.1'"
    )


def _import(path: str, where: str, key: str) -> Any:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"{where} key {key!r}: cannot import {module_name!r} ({exc})") from exc
    try:
        value = module
        for part in attribute.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise ConfigurationError(f"{where} key {key!r}: module {module_name!r} has no {attribute!r}") from None
    return value
