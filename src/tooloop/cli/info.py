"""``tooloop models`` and ``tooloop tools``: what is configured, and what a model would see."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.table import Table

from ..models.registry import registered_model_configs
from ..tools.tool import Tool, as_tool
from .exits import ExitCode, fail
from .setup import PROVIDER_KEYS, AgentOptions, choose_model, load_tools, mcp_servers, named_agent
from .terminal import Terminal

__all__ = ["agents_command", "model_options_command", "models_command", "tools_command"]

_BASE_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_HOST",
}


def _provider_rows() -> list[dict[str, Any]]:
    rows = []
    for name, variables in PROVIDER_KEYS.items():
        if name == "test":
            continue
        base = _BASE_URL_VARIABLES.get(name)
        rows.append(
            {
                "provider": name,
                "key_variables": list(variables),
                "key_set": any(os.environ.get(v) for v in variables) if variables else None,
                "base_url_variable": base,
                "base_url": os.environ.get(base) if base else None,
            }
        )
    return rows


def _config_rows() -> list[dict[str, Any]]:
    return [
        {"name": f"@{c.id}", "model": c.spec, "key_set": _key_set(c.provider), "base_url": c.base_url}
        for c in registered_model_configs()
    ]


def _key_set(provider: str) -> bool | None:
    variables = PROVIDER_KEYS.get(provider, ())
    return any(os.environ.get(v) for v in variables) if variables else None


def _default() -> dict[str, str] | None:
    try:
        choice = choose_model(None)
    except Exception:  # no model configured: say so in the listing
        return None
    return {"model": choice.spec, "reason": choice.reason}


def _mark(value: bool | None) -> str:
    return "not needed" if value is None else ("set" if value else "NOT SET")


async def models_command(term: Terminal, *, as_json: bool) -> ExitCode:
    """List providers (key variables and whether set), configured models, and the default."""
    providers, configs, default = _provider_rows(), _config_rows(), _default()
    if as_json:
        data = {"default": default, "models": configs, "providers": providers}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return ExitCode.OK
    table = Table("provider", "key variable", "key", "base URL", box=None, pad_edge=False)
    for row in providers:
        base = row["base_url"] or (f"${row['base_url_variable']} not set" if row["base_url_variable"] else "")
        table.add_row(row["provider"], ", ".join(row["key_variables"]) or "-", _mark(row["key_set"]), base)
    term.out.print(table)
    for row in configs:
        term.out.print(f"{row['name']:<16} {row['model']}  key {_mark(row['key_set'])}")
    if default is None:
        term.out.print("default: none (pass --model, set TOOLOOP_MODEL or a provider's key)")
    else:
        term.out.print(f"default: {default['model']} ({default['reason']})")
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
