"""``tooloop models`` and ``tooloop tools``: what is configured, and what a model would see."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..models.registry import ModelConfig, registered_model_configs, registered_providers
from ..tools.tool import Tool, as_tool
from .exits import CliError, ExitCode, fail
from .setup import AgentOptions, choose_model, load_tools, mcp_servers, named_agent
from .terminal import Terminal

__all__ = ["agents_command", "model_options_command", "models_command", "plugins_command", "tools_command"]


def _provider_rows() -> list[dict[str, Any]]:
    rows = []
    for info in registered_providers():
        variable = info.base_url_variable
        rows.append(
            {
                "provider": info.name,
                "key_variables": list(info.key_variables),
                "key_set": _any_set(info.key_variables) if info.key_required else None,
                "base_url": (os.environ.get(variable) if variable else None) or info.base_url,
                "base_url_variable": variable,
                "base_url_required": info.base_url_required,
                "models": [f"{info.name}:{model}" for model in info.models],
            }
        )
    return rows


def _any_set(variables: tuple[str, ...]) -> bool:
    return any(os.environ.get(v) for v in variables)


def _config_rows() -> list[dict[str, Any]]:
    """Models registered in code, then the ``[models.NAME]`` tables of the ``tooloop.toml`` found."""
    configs = {c.id: (c, "registered") for c in registered_model_configs()}
    for config, where in _file_configs():
        configs.setdefault(config.id, (config, where))
    return [
        {
            "name": f"@{c.id}",
            "model": c.spec,
            "key_set": _config_key_set(c),
            "base_url": c.base_url,
            "from": where,
        }
        for c, where in configs.values()
    ]


def _file_configs() -> list[tuple[ModelConfig, str]]:
    from ..config import find_config_file, load_config

    path = find_config_file()
    if path is None:
        return []
    config = load_config(path)
    return [(config.model_config(name), str(path)) for name in config.data.models]


def _config_key_set(config: ModelConfig) -> bool | None:
    if config.api_key_env is not None:
        return bool(os.environ.get(config.api_key_env))
    info = next((p for p in registered_providers() if p.name == config.provider), None)
    if info is None or not info.key_required:
        return None
    return _any_set(info.key_variables)


def _default() -> dict[str, str] | None:
    try:
        choice = choose_model(None)
    except CliError:  # no model configured: the listing says so
        return None
    return {"model": choice.spec, "reason": choice.reason}


def _mark(value: bool | None) -> str:
    return "not needed" if value is None else ("set" if value else "NOT SET")


def _base_cell(row: dict[str, Any]) -> str:
    if row["base_url"]:
        return str(row["base_url"])
    if row["base_url_required"]:
        return "--base-url needed"
    return f"${row['base_url_variable']} not set" if row["base_url_variable"] else ""


async def models_command(term: Terminal, *, as_json: bool) -> ExitCode:
    """List the registry's providers (key variables, whether set, base URL, listed models), the
    named models (registered and ``tooloop.toml``'s ``[models]``), and the default."""
    providers, configs, default = _provider_rows(), _config_rows(), _default()
    if as_json:
        data = {"default": default, "models": configs, "providers": providers}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return ExitCode.OK
    lines = [f"{'provider':<18} {'key variable':<34} {'key':<11} base URL / models"]
    for row in providers:
        where = " ".join([_base_cell(row), *row["models"]]).strip()
        keys = ", ".join(row["key_variables"]) or "-"
        lines.append(f"{row['provider']:<18} {keys:<34} {_mark(row['key_set']):<11} {where}".rstrip())
    if configs:
        lines.append("")
        lines.append(f"{'named model':<18} {'model':<34} {'key':<11} from")
        lines.extend(
            f"{row['name']:<18} {row['model']:<34} {_mark(row['key_set']):<11} {row['from']}" for row in configs
        )
    lines.append("")
    if default is None:
        lines.append("default: none (pass --model, set TOOLOOP_MODEL or a provider's key)")
    else:
        lines.append(f"default: {default['model']} ({default['reason']})")
    sys.stdout.write("\n".join(lines) + "\n")
    return ExitCode.OK


async def _visible_tools(options: AgentOptions) -> list[Tool]:
    plain = [as_tool(t) for spec in options.tools for t in load_tools(spec)]
    servers: list[Any] = mcp_servers(options.mcp, options.mcp_urls)
    if options.agent is not None:
        agent = named_agent(options.agent)
        plain, servers = [*agent.tools, *plain], [*agent.tool_sources, *servers]
    listed: list[Tool] = []
    try:
        for server in servers:
            listed.extend(await server.list_tools())
    finally:
        for server in servers:
            await server.aclose()
    return [*plain, *listed]


async def tools_command(term: Terminal, options: AgentOptions, *, as_json: bool) -> ExitCode:
    """List the tools the options give, as the model sees them (name, description, JSON schema)."""
    definitions = [
        {
            "name": t.name,
            "description": t.description,
            "parameters": dict(t.parameters),
            "requires_approval": t.requires_approval,
        }
        for t in await _visible_tools(options)
    ]
    if as_json:
        sys.stdout.write(json.dumps(definitions, indent=2, default=str) + "\n")
        return ExitCode.OK
    if not definitions:
        term.note("no tools: name some with --tool package.module:function, --mcp or --agent")
    for item in definitions:
        approval = "  (needs approval)" if item["requires_approval"] else ""
        term.out.print(f"{item['name']}{approval}", style="bold", markup=False)
        if item["description"]:
            term.out.print(f"  {item['description']}", markup=False)
        term.out.print("  " + json.dumps(item["parameters"], default=str), markup=False)
    return ExitCode.OK


async def agents_command(term: Terminal, *, as_json: bool) -> ExitCode:
    """List the ``[agents]`` of ``tooloop.toml``: name, model, system prompt, tools, MCP servers."""
    from ..config import find_config_file, load_config

    path = find_config_file()
    if path is None:
        fail("no tooloop.toml here, in a parent folder or in the user configuration folder (see TOOLOOP_CONFIG)")
    config = load_config(path)
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "model": table.model,
            "system": table.system,
            "tools": list(table.tools),
            "mcp_servers": list(table.mcp_servers),
        }
        for name, table in config.data.agents.items()
    ]
    if as_json:
        sys.stdout.write(json.dumps({"file": str(path), "agents": rows}, indent=2) + "\n")
        return ExitCode.OK
    term.note(f"agents of {path}")
    if not rows:
        term.note("no [agents.NAME] tables in it")
    for row in rows:
        tools = [*row["tools"], *(f"mcp:{server}" for server in row["mcp_servers"])]
        term.out.print(f"{row['name']}  {row['model']}", style="bold", markup=False)
        if row["system"]:
            first = row["system"].strip().splitlines()[0] if row["system"].strip() else ""
            term.out.print(f"  system: {first}", markup=False)
        if tools:
            term.out.print(f"  tools: {', '.join(tools)}", markup=False)
    return ExitCode.OK


async def model_options_command(term: Terminal, spec: str, *, as_json: bool) -> ExitCode:
    """The ``-o KEY VALUE`` options a model accepts: the common settings, then provider fields."""
    from ..models.registry import check_model_string
    from .options import SETTINGS

    check_model_string(spec)  # an unknown provider or configuration is a usage error here
    rows = [{"key": key, "type": kind, "description": text} for key, (kind, text) in SETTINGS.items()]
    other = "any other KEY is sent in the request body as it is (e.g. -o reasoning_effort high)"
    if as_json:
        sys.stdout.write(json.dumps({"model": spec, "options": rows, "other": other}, indent=2) + "\n")
        return ExitCode.OK
    lines = [f"{'option':<20} {'value':<13} what it does"]
    lines.extend(f"{row['key']:<20} {row['type']:<13} {row['description']}" for row in rows)
    sys.stdout.write("\n".join(lines) + "\n")
    term.out.print(f"{other}; give them as: tooloop run -m {spec} -o KEY VALUE", markup=False)
    return ExitCode.OK


def _plugin_row(plugin: Any) -> dict[str, Any]:
    from ..plugins import check, plugin_tools, shadowed
    from ..tools.tool import as_tool

    problem = check(plugin)
    if problem is None and shadowed(plugin):
        problem = f"ignored: a provider named {plugin.name!r} exists already"
    row: dict[str, Any] = {
        "kind": plugin.kind,
        "name": plugin.name,
        "target": plugin.target,
        "package": plugin.package,
        "error": problem,
    }
    if plugin.kind == "tools" and problem is None:
        try:
            row["tools"] = [as_tool(t).name for t in plugin_tools(plugin.name)]
        except Exception as exc:  # not tools after all: the listing says so, in one line
            row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return row


async def plugins_command(term: Terminal, *, as_json: bool) -> ExitCode:
    """List the installed plugins (providers, tools) with their package and whether each loads."""
    from ..plugins import plugins

    rows = [_plugin_row(plugin) for plugin in plugins()]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return ExitCode.OK
    if not rows:
        term.note("no plugins installed (packages add them with 'tooloop.providers' or 'tooloop.tools' entry points)")
        return ExitCode.OK
    lines = [f"{'kind':<9} {'name':<16} {'package':<24} what"]
    for row in rows:
        what = f"error: {row['error']}" if row["error"] else row["target"]
        if row.get("tools"):
            what += f" ({', '.join(row['tools'])})"
        lines.append(f"{row['kind']:<9} {row['name']:<16} {row['package'] or '-':<24} {what}")
    sys.stdout.write("\n".join(lines) + "\n")
    return ExitCode.OK
