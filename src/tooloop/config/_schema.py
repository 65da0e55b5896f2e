"""The tables of ``tooloop.toml``, validated with pydantic (unknown keys are mistakes)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["AgentTable", "ConfigFile", "LimitsTable", "MCPServerTable", "ModelTable"]

_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|credential|authorization|auth)")
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_SECRET_VALUE = re.compile(r"^(sk-|sk_|xox[abp]-|ghp_|gho_|github_pat_|AIza|Bearer\s+\S{12,}$)")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def refuse_literal_secrets(values: dict[str, str] | None, what: str) -> dict[str, str] | None:
    """Values of secret-looking names must be ``${VARIABLE}`` references, never the secret itself."""
    for key, value in (values or {}).items():
        literal = _REFERENCE.sub("", value).strip()
        referenced = _REFERENCE.search(value) is not None
        if _SECRET_VALUE.match(literal) or (_SECRET_NAME.search(key) and literal and not referenced):
            raise ValueError(
                f"{what} {key!r} holds a literal secret; write a reference to an environment variable "
                f'instead, e.g. {key} = "${{{_suggest(key)}}}"'
            )
    return values


def _suggest(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper() or "SECRET"


class ModelTable(_Table):
    """``[models.NAME]``: a named model configuration."""

    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    base_url: str | None = None
    api_key_env: str | None = None
    """The name of the environment variable holding the key (never the key itself)."""
    system: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Other settings for the provider's adapter (``stream``, ``timeout``, ``max_retries``...)."""

    @model_validator(mode="before")
    @classmethod
    def _no_key(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("api_key", "key", "token", "secret"):
                if key in data:
                    raise ValueError(
                        f'{key!r}: a key is never written in the file; set api_key_env = "VARIABLE_NAME" '
                        "and put the key in that environment variable"
                    )
        return data

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                f"api_key_env must be the NAME of an environment variable (like OPENAI_API_KEY), got {value!r}"
            )
        return value

    @field_validator("options")
    @classmethod
    def _no_key_option(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if _SECRET_NAME.search(key) and key != "api_key_env":
                raise ValueError(f"options.{key}: secrets are never written in the file; use api_key_env")
        return value


class MCPServerTable(_Table):
    """``[mcp_servers.NAME]``: a stdio server (``command``) or an HTTP one (``url``)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    prefix: str | None = None
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    timeout: float | None = Field(default=None, gt=0)
    trust_annotations: bool = False
    approve: Literal["never", "always", "destructive"] | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerTable:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a streamable HTTP server)")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd belong to stdio servers (command), not to url")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to HTTP servers (url), not to command")
        return self

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return refuse_literal_secrets(value, "env")

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return refuse_literal_secrets(value, "header")


_Bound = Annotated[int, Field(ge=1, strict=True)]
_Flag = Annotated[bool, Field(strict=True)]


class LimitsTable(_Table):
    """``limits`` of an agent: the fields of :class:`~tooloop.Limits`."""

    max_turns: int | None = Field(default=None, ge=1)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    tool_timeout: float | None = Field(default=None, gt=0)
    max_tool_result_chars: int | None = Field(default=None, ge=1)
    output_retries: int | None = Field(default=None, ge=0)
    final_answer_on_limit: bool | None = None
    max_cost: Decimal | None = Field(default=None, gt=0)
    max_repeats: _Bound | _Flag | None = None
    """``false`` turns the guard off (``Limits(max_repeats=None)``)."""
    max_repeated_errors: _Bound | _Flag | None = None
    """``false`` turns the guard off."""
    max_empty_responses: Annotated[int, Field(ge=0, strict=True)] | None = None
    retry_cut_calls: _Flag | None = None

    @field_validator("max_repeats", "max_repeated_errors")
    @classmethod
    def _off_is_false(cls, value: int | bool | None) -> int | bool | None:
        if value is True:
            raise ValueError("true is not a count: give a number of times, or false to turn the guard off")
        return value

    def as_limits_fields(self) -> dict[str, Any]:
        """The keyword arguments of :class:`~tooloop.Limits` the file sets (``false`` guards as None)."""
        values = self.model_dump(exclude_none=True)
        return {key: None if value is False and key.startswith("max_") else value for key, value in values.items()}


class AgentTable(_Table):
    """``[agents.NAME]``: everything :class:`~tooloop.Agent` takes, by name or import path."""

    model: str
    """A name from ``[models]``, or a model string (``"openai:gpt-4.1"``, ``"@name"``)."""
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    system: str | None = None
    tools: list[str] = Field(default_factory=list)
    """Import paths of tools: ``"package.module:function"``."""
    mcp_servers: list[str] = Field(default_factory=list)
    """Names from ``[mcp_servers]``."""
    exclude_tools: list[str] = Field(default_factory=list)
    limits: LimitsTable = Field(default_factory=LimitsTable)
    output_type: str | None = None
    """Import path of a pydantic model (or any type) the final answer must match."""
    store: str | None = None
    approve: Literal["never", "always", "destructive"] | None = None
    """The approval policy of this agent's MCP servers that do not set their own."""
    approver: str | None = None
    """Import path of a function deciding approvals (``"package.module:function"``)."""
    tool_search: bool | Literal["native", "local", "off"] | None = None
    """``Agent(tool_search=...)``: ``true`` or ``"native"`` (the provider's own where the model
    has it), ``"local"``, ``"off"``."""
    tool_search_threshold: int | None = Field(default=None, ge=0)
    """More tools than this: tool search starts (``ToolSearch(threshold=...)``, default 30)."""

    @field_validator("tools", "mcp_servers")
    @classmethod
    def _listed_once(cls, value: list[str]) -> list[str]:
        twice = sorted({v for v in value if value.count(v) > 1})
        if twice:
            raise ValueError(f"{', '.join(map(repr, twice))} is listed twice; list each once")
        return value

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        if value is not None:
            from ..errors import ConfigurationError
            from ..store import check_store_url

            try:
                check_store_url(value)
            except ConfigurationError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("tools", "output_type", "approver")
    @classmethod
    def _import_paths(cls, value: Any) -> Any:
        for path in value if isinstance(value, list) else [value] if value is not None else []:
            module, sep, attr = path.partition(":")
            if not sep or not module or not attr:
                raise ValueError(f"{path!r} is not an import path; write 'package.module:name'")
        return value


class ConfigFile(_Table):
    """The whole file."""

    models: dict[str, ModelTable] = Field(default_factory=dict)
    mcp_servers: dict[str, MCPServerTable] = Field(default_factory=dict)
    agents: dict[str, AgentTable] = Field(default_factory=dict)
