"""A session remembers the setup the command line gave it, so ``-c`` and ``--session`` go on with it.

The setup (model, model options, base URL, key variable, system prompt, tools by import path, MCP
servers, agent name, output schema) is kept in the session's metadata under ``"tooloop.cli"``. An
option given again replaces the remembered one for that turn and is remembered in its place; whatever is
restored is named on stderr, so nothing is imported that the user cannot see.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import SessionNotFoundError
from ..store import BaseStore

__all__ = ["LAST_RUN_KEY", "METADATA_KEY", "SessionSetup", "last_run", "load_setup", "restore", "save_setup"]

METADATA_KEY = "tooloop.cli"
LAST_RUN_KEY = "tooloop.cli.last_run"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSetup:
    """What the command line said about the agent of a session (``None``/empty: not given)."""

    model: str | None = None
    system: str | None = None
    tools: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    mcp_urls: tuple[str, ...] = ()
    agent: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    """``-o KEY VALUE`` pairs, in the order given (a later key wins)."""
    base_url: str | None = None
    api_key_env: str | None = None
    config: str | None = None
    """The ``tooloop.toml`` an agent or a named MCP server came from."""
    schema: dict[str, Any] | None = None
    """``--schema``: the JSON Schema answers must match. ``{}`` is ``--no-schema``: plain answers,
    and a remembered schema is dropped."""

    @classmethod
    def from_metadata(cls, value: object) -> SessionSetup:
        """The setup stored in a session's metadata (unknown or malformed entries are ignored)."""
        if not isinstance(value, dict):
            return cls()

        def text(key: str) -> str | None:
            item = value.get(key)
            return item if isinstance(item, str) else None

        def texts(key: str) -> tuple[str, ...]:
            items = value.get(key)
            return tuple(i for i in items if isinstance(i, str)) if isinstance(items, list) else ()

        options, schema = value.get("options"), value.get("schema")
        pairs = tuple((k, v) for k, v in options.items()) if isinstance(options, dict) else ()
        return cls(
            model=text("model"),
            system=text("system"),
            tools=texts("tools"),
            mcp=texts("mcp"),
            mcp_urls=texts("mcp_urls"),
            agent=text("agent"),
            options=pairs,
            base_url=text("base_url"),
            api_key_env=text("api_key_env"),
            config=text("config"),
            schema=schema if isinstance(schema, dict) and schema else None,
        )

    def to_metadata(self) -> dict[str, Any]:
        """The JSON form kept in the session's metadata (empty entries left out)."""
        data: dict[str, Any] = {}
        for name in ("model", "system", "agent", "base_url", "api_key_env", "config"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        for name in ("tools", "mcp", "mcp_urls"):
            if getattr(self, name):
                data[name] = list(getattr(self, name))
        if self.options:
            data["options"] = dict(self.options)
        if self.schema:
            data["schema"] = self.schema
        return data

    def lines(self) -> list[str]:
        """``name: value`` lines describing the setup (for ``sessions show``)."""
        out: list[str] = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None or value == () or value == {}:
                continue
            if field.name == "options":
                shown = " ".join(f"{k}={v}" for k, v in value)
            elif isinstance(value, dict):
                shown = json.dumps(value, ensure_ascii=False)
            elif isinstance(value, tuple):
                shown = ", ".join(value)
            else:
                shown = value
            out.append(f"{field.name.replace('_', ' ')}: {shown}")
        return out


def absolute_tool(spec: str) -> str:
    """A tool spec whose file path (``path/file.py:name``) is made absolute, so the session
    finds it again from another folder; ``package.module:name`` is kept as given."""
    module_path, sep, name = spec.rpartition(":")
    if sep and module_path.endswith(".py"):
        return f"{Path(module_path).resolve()}:{name}"
    return spec


def restore(given: SessionSetup, remembered: SessionSetup) -> tuple[SessionSetup, list[str]]:
    """The setup of this turn: what is given wins, the rest comes from the session; and the names
    of what was restored (for the line that says so)."""
    restored: list[str] = []
    changes: dict[str, Any] = {}
    labels = {
        "system": "system prompt",
        "tools": "tools",
        "mcp": "MCP servers",
        "mcp_urls": "MCP URLs",
        "agent": "agent",
        "base_url": "base URL",
        "api_key_env": "key variable",
        "config": "config file",
        "schema": "output schema",
    }
    for name, label in labels.items():
        mine, theirs = getattr(given, name), getattr(remembered, name)
        if (mine is None or mine == ()) and theirs not in (None, ()):
            changes[name] = theirs
            shown = ", ".join(theirs) if isinstance(theirs, tuple) else theirs
            restored.append(label if name in ("system", "schema") else f"{label} {shown}")
    if remembered.options:
        merged = {**dict(remembered.options), **dict(given.options)}
        kept = [k for k in dict(remembered.options) if k not in dict(given.options)]
        if kept:
            restored.append("options " + " ".join(f"{k}={merged[k]}" for k in kept))
        changes["options"] = tuple(merged.items())
    return replace(given, **changes), restored


async def load_setup(store: BaseStore, session_id: str) -> SessionSetup | None:
    """The setup remembered by a session; None for a session that does not exist yet."""
    try:
        info = await store.get_session(session_id)
    except SessionNotFoundError:
        return None
    return SessionSetup.from_metadata(info.metadata.get(METADATA_KEY))


async def save_setup(
    store: BaseStore, session_id: str, setup: SessionSetup, last_run: dict[str, Any] | None = None
) -> None:
    """Remember ``setup`` in the session, and how its last run ended (``{"stop_reason": ...,
    "error": ...}``: a run that failed before the model answered leaves no message saying so).
    Nothing to do when the run wrote no message."""
    try:
        info = await store.get_session(session_id)
    except SessionNotFoundError:
        return
    tools = tuple(absolute_tool(spec) for spec in setup.tools)
    metadata = {**info.metadata, METADATA_KEY: replace(setup, tools=tools).to_metadata()}
    if last_run is not None:
        metadata[LAST_RUN_KEY] = last_run
    await store.set_metadata(session_id, metadata=metadata)


def last_run(stop_reason: str, error: BaseException | None) -> dict[str, Any]:
    """What :func:`save_setup` records about a run's end."""
    return {"stop_reason": stop_reason, "error": None if error is None else f"{type(error).__name__}: {error}"}
