"""``tooloop.toml``: named models, MCP servers and agents described in a file.

The file is looked up in the project folder (the working directory, then each parent), then in
the user's configuration folder (``platformdirs.user_config_dir("tooloop")``); ``path=`` or the
``TOOLOOP_CONFIG`` environment variable name it explicitly. Every mistake is reported with the
file, the table, the key and what was expected; secrets are refused unless they are references
to environment variables (``"${NAME}"``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..agent import Agent
    from ..mcp import MCPServer
    from ..models.registry import ModelConfig
    from ._schema import AgentTable, ConfigFile

__all__ = ["FILE_NAME", "Config", "find_config_file", "load_agent", "load_config", "model_config_from_file"]

FILE_NAME = "tooloop.toml"


def find_config_file(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The file to use: ``$TOOLOOP_CONFIG``, else the nearest ``tooloop.toml`` from ``start`` (the
    working directory) upwards, else the one in the user's configuration folder; None if none."""
    explicit = os.environ.get("TOOLOOP_CONFIG")
    if explicit:
        return Path(explicit)
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / FILE_NAME
        if candidate.is_file():
            return candidate
    import platformdirs

    user = Path(platformdirs.user_config_dir("tooloop")) / FILE_NAME
    return user if user.is_file() else None


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded, validated configuration file."""

    path: Path
    data: ConfigFile

    @property
    def agent_names(self) -> tuple[str, ...]:
        """The names of ``[agents]``."""
        return tuple(self.data.agents)

    def model_config(self, name: str) -> ModelConfig:
        """``[models.NAME]`` as a :class:`~tooloop.ModelConfig`."""
        from ._build import model_config

        return model_config(self, name)

    def mcp_server(self, name: str, **overrides: Any) -> MCPServer:
        """``[mcp_servers.NAME]`` as an :class:`~tooloop.mcp.MCPServer` (not started)."""
        from ._build import mcp_server

        return mcp_server(self, name, **overrides)

    def agent(self, name: str) -> Agent:
        """``[agents.NAME]`` as an :class:`~tooloop.Agent`."""
        from ._build import build_agent

        return build_agent(self, name)

    def agent_table(self, name: str) -> AgentTable:
        """The validated ``[agents.NAME]`` table."""
        table = self.data.agents.get(name)
        if table is None:
            known = ", ".join(self.data.agents) or "none"
            raise ConfigurationError(f"{self.path}: no [agents.{name}] table (agents defined: {known})")
        return table


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read and validate a configuration file (``path``, or the one :func:`find_config_file` finds)."""
    found = Path(path) if path is not None else find_config_file()
    if found is None:
        raise ConfigurationError(
            f"no {FILE_NAME} found in this folder, its parents, or the user configuration folder; "
            "pass path= or set TOOLOOP_CONFIG"
        )
    try:
        raw = tomllib.loads(found.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{found}: cannot read the configuration file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigurationError(
            f"{found}: not UTF-8 text (byte {exc.object[exc.start]:#04x} on line {line}); "
            "TOML files are UTF-8: save it with that encoding"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{found}: not valid TOML: {exc}") from exc
    return Config(found, _validate(found, raw))


def _validate(path: Path, raw: Mapping[str, Any]) -> ConfigFile:
    from pydantic import ValidationError

    from ._schema import ConfigFile

    try:
        return ConfigFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigurationError(_describe(path, exc)) from None


def _describe(path: Path, exc: Any) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        location = [str(p) for p in error.get("loc", ())]
        problems.append(f"{path}: {_where(location)}: {_expected(error)}")
    return "\n".join(problems)


def _where(location: list[str]) -> str:
    if len(location) >= 2 and location[0] in ("models", "mcp_servers", "agents"):
        table = f"[{location[0]}.{location[1]}]"
        key = ".".join(location[2:])
        return f"{table} key {key!r}" if key else table
    if location:
        return f"key {'.'.join(location)!r}"
    return "the file"


def _expected(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    message = str(error.get("msg", ""))
    if kind == "extra_forbidden":
        return "unknown key (check its spelling against the documentation)"
    if kind == "missing":
        return "required key is missing"
    message = message.removeprefix("Value error, ")
    value = error.get("input")
    shown = "" if kind.startswith("value_error") or isinstance(value, dict) else f" (got {value!r})"
    return f"{message}{shown}"


def load_agent(name: str, *, path: str | os.PathLike[str] | None = None) -> Agent:
    """The agent ``[agents.NAME]`` of the configuration file (``path``, or the one found)."""
    return load_config(path).agent(name)


def model_config_from_file(name: str) -> ModelConfig | None:
    """``[models.NAME]`` of the configuration file found, or None (no file, or no such table)."""
    path = find_config_file()
    if path is None:
        return None
    config = load_config(path)
    if name not in config.data.models:
        return None
    return config.model_config(name)
