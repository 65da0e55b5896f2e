"""Model strings (``"provider:model"``), named model configurations, and the provider registry.

Built-in providers register here through the same :func:`register_provider` third parties use.
A provider's module is imported only when a model of that provider is created, so
``import tooloop`` never loads a provider SDK. Subsystems above the models (the scripted test
models, ``tooloop.toml``'s ``[models]``) plug in through the same hooks: :func:`register_provider`
and :func:`register_model_config_source`, called (by ``tooloop._register_subsystems``) when this
module is first imported.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentValueError, ConfigurationError
from .base import Model, ModelSettings

__all__ = [
    "ModelConfig",
    "ProviderFactory",
    "ProviderInfo",
    "check_model_string",
    "get_model",
    "model_config",
    "register_model_config",
    "register_model_config_source",
    "register_provider",
    "register_provider_source",
    "registered_model_configs",
    "registered_providers",
]

ProviderFactory = Callable[..., Model]
"""``factory(model_name, *, provider, base_url, api_key, settings, **options) -> Model``."""


@dataclass(frozen=True, slots=True)
class _Provider:
    target: str | ProviderFactory
    defaults: dict[str, Any] = field(default_factory=dict)
    extra: str | None = "all"
    """The ``tooloop[...]`` extra that installs what the factory's module needs (None: not ours)."""
    key_variables: tuple[str, ...] = ()
    """The variables the factory reads the key from, when ``api_key_env`` does not say it."""
    models: tuple[str, ...] = ()
    """Model names worth listing (a provider with a fixed set, such as the offline ``test``)."""

    def factory(self) -> ProviderFactory:
        if callable(self.target):
            return self.target
        hint = (
            f'Install the provider\'s extra: pip install "tooloop[{self.extra}]"'
            if self.extra is not None
            else f"The provider's factory {self.target!r} (registered or a plugin's) could not be imported"
        )
        factory: ProviderFactory = _load(self.target, hint)
        return factory


def _load(target: str, hint: str) -> Any:
    """The object an import path ``"package.module:name"`` names; ``hint`` says what to do when it is missing."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # the SDK extra is missing
        raise ConfigurationError(f"{exc}. {hint}") from exc
    except Exception as exc:  # a third party's module failing at import
        raise ConfigurationError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}. {hint}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigurationError(f"{module_name!r} has no {attr!r}. {hint}") from None


_OPENAI_CHAT = "tooloop.models.openai_chat:create"
_LOCAL = {"api_key_optional": True}
_GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # the Gemini adapter reads the first one set
_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider(
        _OPENAI_CHAT,
        {
            "api_key_env": "OPENAI_API_KEY",
            "base_url_env": "OPENAI_BASE_URL",
            "max_tokens_field": "max_completion_tokens",
            "raw_invalid_arguments": True,
            "tool_id_max_length": 40,
        },
        "openai",
    ),
    "openai-responses": _Provider(
        "tooloop.models.openai_responses:create",
        {"base_url_env": "OPENAI_BASE_URL", "api_key_env": "OPENAI_API_KEY"},
        "openai",
    ),
    "anthropic": _Provider(
        "tooloop.models.anthropic:create",
        {"base_url_env": "ANTHROPIC_BASE_URL", "api_key_env": "ANTHROPIC_API_KEY"},
        "anthropic",
    ),
    "google": _Provider("tooloop.models.gemini:create", extra="google", key_variables=_GEMINI_KEYS),
    "gemini": _Provider("tooloop.models.gemini:create", extra="google", key_variables=_GEMINI_KEYS),
    "openai-compatible": _Provider(_OPENAI_CHAT, {"requires_base_url": True, **_LOCAL}),
    "ollama": _Provider(
        _OPENAI_CHAT,
        {
            "base_url": "http://localhost:11434/v1",
            "host_env": "OLLAMA_HOST",
            "api_key_env": "OLLAMA_API_KEY",
            "reasoning_field": "reasoning",
            **_LOCAL,
        },
    ),
    "vllm": _Provider(
        _OPENAI_CHAT,
        {
            "base_url": "http://localhost:8000/v1",
            "api_key_env": "VLLM_API_KEY",
            "reasoning_field": "reasoning",
            **_LOCAL,
        },
    ),
    "llamacpp": _Provider(
        _OPENAI_CHAT, {"base_url": "http://localhost:8080/v1", "api_key_env": "LLAMACPP_API_KEY", **_LOCAL}
    ),
    "openrouter": _Provider(
        _OPENAI_CHAT, {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}
    ),
    "groq": _Provider(
        _OPENAI_CHAT,
        {"base_url": "https://api.groq.com/openai/v1", "api_key_env": "GROQ_API_KEY", "reasoning_field": "reasoning"},
    ),
    "deepseek": _Provider(
        _OPENAI_CHAT,
        {
            "base_url": "https://api.deepseek.com",
            "api_key_env": "DEEPSEEK_API_KEY",
            "reasoning_field": "reasoning_content",
            "input_kinds": (),
        },
    ),
    "mistral": _Provider(
        _OPENAI_CHAT,
        {
            "base_url": "https://api.mistral.ai/v1",
            "api_key_env": "MISTRAL_API_KEY",
            "reasoning_field": "content",
            "tool_id_length": 9,
        },
    ),
    "snowflake": _Provider(
        _OPENAI_CHAT,
        {"requires_base_url": True, "api_key_env": "SNOWFLAKE_PAT", "max_tokens_field": "max_completion_tokens"},
    ),
    "azure": _Provider(
        "tooloop.models.openai_chat:create_azure",
        {
            "api_key_env": "AZURE_OPENAI_API_KEY",
            "max_tokens_field": "max_completion_tokens",
            "raw_invalid_arguments": True,
            "tool_id_max_length": 40,
        },
        "openai",
    ),
    "lmstudio": _Provider(
        _OPENAI_CHAT, {"base_url": "http://localhost:1234/v1", "api_key_env": "LMSTUDIO_API_KEY", **_LOCAL}
    ),
}
"""Built-in providers. Defaults are the factory's options; three are the registry's own:
``base_url`` (the provider's default URL), ``base_url_env`` (a variable holding a whole base URL,
e.g. ``OPENAI_BASE_URL``) and ``host_env`` (a variable holding a host, ``host:port`` or URL,
e.g. ``OLLAMA_HOST``, completed from ``base_url``), plus ``requires_base_url``."""


def register_provider(
    name: str, factory: str | ProviderFactory, *, models: tuple[str, ...] = (), **defaults: Any
) -> None:
    """Make ``"name:model"`` strings create models with ``factory``.

    ``factory`` is a callable or an import path ``"package.module:function"`` imported on first use.
    ``defaults`` are passed to it for every model of this provider (an explicit option wins):
    the factory's own options, e.g. the Chat Completions quirks ``max_tokens_field``,
    ``raw_invalid_arguments``, ``tool_id_max_length``, ``tool_id_length``, ``reasoning_field``, ``api_key_env``,
    and the registry's ``base_url``, ``base_url_env`` and ``host_env`` (see docs/providers.md).
    ``models`` names models worth listing (``tooloop models`` shows them).
    """
    _PROVIDERS[name] = _Provider(factory, dict(defaults), extra=None, models=tuple(models))


def is_registered_provider(name: str) -> bool:
    """Whether ``"name:..."`` model strings have a provider (plugins not looked for)."""
    return name in _PROVIDERS


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderInfo:
    """What the registry knows of a provider, for listings (``tooloop models``); imports nothing."""

    name: str
    key_variables: tuple[str, ...]
    """The environment variables the key is read from (the first one set wins)."""
    key_required: bool
    """False for local servers and offline models, which work without a key."""
    base_url: str | None
    """The default URL (None: the adapter's own, or none, see ``base_url_required``)."""
    base_url_variable: str | None
    """A variable holding a whole base URL (``OPENAI_BASE_URL``) or a host (``OLLAMA_HOST``)."""
    base_url_required: bool
    models: tuple[str, ...]
    """Model names worth listing; empty for providers whose models are many and change."""


def registered_providers() -> tuple[ProviderInfo, ...]:
    """Every registered provider (built-in, registered in code, or a plugin's), in registration order."""
    _discover_plugins()
    return tuple(_info(name, provider) for name, provider in _PROVIDERS.items())


def _info(name: str, provider: _Provider) -> ProviderInfo:
    defaults = provider.defaults
    env = defaults.get("api_key_env")
    keys = provider.key_variables or ((env,) if isinstance(env, str) else ())
    return ProviderInfo(
        name=name,
        key_variables=keys,
        key_required=bool(keys) and not defaults.get("api_key_optional", False),
        base_url=defaults.get("base_url"),
        base_url_variable=defaults.get("base_url_env") or defaults.get("host_env"),
        base_url_required=bool(defaults.get("requires_base_url", False)),
        models=provider.models,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    """A named model configuration: provider, model and default settings under one id.

    Agents refer to it as ``Agent("@id")`` or ``Agent(model_config("id"))``; an agent's own settings
    override the configuration's. Keys are never stored here: they come from the environment or an
    explicit ``api_key`` argument.
    """

    id: str
    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    system: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key; read when the model is created."""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        """The model string, ``"provider:model"``."""
        return f"{self.provider}:{self.model}"

    @property
    def settings(self) -> ModelSettings:
        """The configuration's sampling settings."""
        return ModelSettings(temperature=self.temperature, max_tokens=self.max_tokens)

    def create(self, *, api_key: str | None = None, **options: Any) -> Model:
        """Create the model this configuration describes."""
        return get_model(
            self.spec,
            base_url=self.base_url,
            api_key=api_key or self.key(),
            settings=self.settings,
            **{**self.options, **options},
        )

    def key(self) -> str | None:
        """The key from ``api_key_env`` (None when the configuration names no variable)."""
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigurationError(
                f"model configuration {self.id!r} reads its key from the environment variable "
                f"{self.api_key_env}, which is not set"
            )
        return value


_CONFIGS: dict[str, ModelConfig] = {}
ModelConfigSource = Callable[[str], "ModelConfig | None"]
"""``source(name)``: the configuration called ``name``, or None when the source has none."""
_SOURCES: list[str | ModelConfigSource] = []
"""Where ``"@name"`` looks when no configuration was registered under the name, in order."""


def register_model_config_source(source: str | ModelConfigSource) -> None:
    """Make ``"@name"`` also look in ``source`` when no configuration is registered under the name.

    ``source`` is a callable or an import path ``"package.module:function"`` imported on first use
    (``tooloop.toml``'s ``[models]`` table is one, registered when the package is imported).
    """
    if source not in _SOURCES:
        _SOURCES.append(source)


def register_model_config(config: ModelConfig) -> ModelConfig:
    """Register ``config`` under its id (replacing an earlier one with the same id)."""
    _CONFIGS[config.id] = config
    return config


def registered_model_configs() -> tuple[ModelConfig, ...]:
    """Every registered configuration, sorted by id."""
    return tuple(_CONFIGS[key] for key in sorted(_CONFIGS))


def model_config(config_id: str) -> ModelConfig:
    """The registered configuration with this id."""
    config = _CONFIGS.get(config_id)
    for source in _SOURCES if config is None else ():
        lookup: ModelConfigSource = source if callable(source) else _load(source, "")
        config = lookup(config_id)
        if config is not None:
            break
    if config is None:
        known = ", ".join(sorted(_CONFIGS)) or "none registered"
        raise ArgumentValueError(
            f"no model configuration named {config_id!r} (registered: {known}; no [models.{config_id}] in "
            "tooloop.toml either); add it there or register it with register_model_config(ModelConfig(id=...))"
        )
    return config


def get_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> Model:
    """The model for a string like ``"openai:gpt-4.1"`` or ``"ollama:qwen3"``.

    ``"@id"`` names a registered :class:`ModelConfig`. ``base_url`` and ``api_key`` override the
    provider's defaults and environment variables; other keyword arguments are the adapter's
    options (``stream=True/False``, ``max_retries``, ``timeout``...), with sampling settings such as
    ``temperature`` and ``max_tokens`` accepted here too.
    """
    if spec.startswith("@"):
        config = model_config(spec[1:])
        merged = config.settings.merged(settings)
        return get_model(
            config.spec,
            base_url=base_url or config.base_url,
            api_key=api_key or config.key(),
            settings=merged,
            **{**config.options, **options},
        )
    provider_name, provider, model_name = _parse(spec)
    settings, options = _split_settings(settings, options)
    defaults = dict(provider.defaults)
    if defaults.pop("requires_base_url", False) and base_url is None:
        raise ConfigurationError(f"{provider_name!r} models need an explicit base_url")
    resolved = _base_url(base_url, defaults)
    return provider.factory()(
        model_name,
        provider=provider_name,
        base_url=resolved,
        api_key=api_key,
        settings=settings,
        **{**defaults, **options},
    )


def _base_url(explicit: str | None, defaults: dict[str, Any]) -> str | None:
    """``base_url=``, else the provider's URL variable, else its host variable, else its default URL."""
    default: str | None = defaults.pop("base_url", None)
    url_env = defaults.pop("base_url_env", None)
    host_env = defaults.pop("host_env", None)
    if explicit is not None:
        return explicit
    if url_env and os.environ.get(url_env):
        return os.environ[url_env]
    if host_env and os.environ.get(host_env):
        return host_url(os.environ[host_env], default)
    return default


def host_url(host: str, default: str | None) -> str:
    """A base URL from a host variable (``box``, ``box:11500``, ``http://box:11500``): the parts it
    leaves out (scheme, port, path) come from ``default``."""
    from urllib.parse import urlsplit, urlunsplit  # only with a host variable: not on the import path

    base = urlsplit(default or "http://localhost")
    given = urlsplit(host if "://" in host else f"{base.scheme}://{host}")
    hostname = given.hostname or base.hostname or "localhost"
    if ":" in hostname:  # an IPv6 address
        hostname = f"[{hostname}]"
    port = given.port or (base.port if not host.startswith(("http://", "https://")) else None)
    netloc = f"{hostname}:{port}" if port else hostname
    path = given.path.rstrip("/") or base.path
    return urlunsplit((given.scheme, netloc, path, "", ""))


def check_model_string(spec: str) -> None:
    """Raise :class:`~tooloop.errors.ArgumentValueError` unless ``spec`` names a registered provider
    (or a registered configuration, for ``"@id"``). Imports no provider SDK."""
    if spec.startswith("@"):
        model_config(spec[1:])
    else:
        _parse(spec)


def _parse(spec: str) -> tuple[str, _Provider, str]:
    provider_name, sep, model_name = spec.partition(":")
    known = ", ".join(sorted(_PROVIDERS))
    if not sep or not provider_name or not model_name:
        raise ArgumentValueError(
            f"model string {spec!r} must look like 'provider:model', e.g. 'openai:gpt-4.1'; known providers: {known}"
        )
    provider = _PROVIDERS.get(provider_name)
    if provider is None:
        _discover_plugins()
        provider = _PROVIDERS.get(provider_name)
    if provider is None:
        raise ArgumentValueError(
            f"unknown provider {provider_name!r} in {spec!r}{_did_you_mean(provider_name)}; known providers: {known}"
        )
    return provider_name, provider, model_name


ProviderSource = Callable[[], None]
"""``source()``: registers more providers (the package's is the installed plugins)."""
_PROVIDER_SOURCES: list[str | ProviderSource] = []
_consulted: set[str | ProviderSource] = set()


def register_provider_source(source: str | ProviderSource) -> None:
    """Call ``source`` (a callable, or an import path imported then) once, the first time a model
    string names a provider nothing registered or a listing asks for every provider; it registers
    more with :func:`register_provider` (the package registers its entry-point plugins this way)."""
    if source not in _PROVIDER_SOURCES:
        _PROVIDER_SOURCES.append(source)


def _discover_plugins() -> None:
    for source in list(_PROVIDER_SOURCES):
        if source in _consulted:
            continue
        _consulted.add(source)
        run: ProviderSource = source if callable(source) else _load(source, "")
        run()


def _did_you_mean(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, _PROVIDERS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_SETTING_NAMES = frozenset({"temperature", "max_tokens", "top_p", "stop", "seed", "parallel_tool_calls", "stream"})


def _split_settings(settings: ModelSettings | None, options: dict[str, Any]) -> tuple[ModelSettings, dict[str, Any]]:
    sampling = {k: options.pop(k) for k in list(options) if k in _SETTING_NAMES}
    if "stop" in sampling and sampling["stop"] is not None:
        sampling["stop"] = tuple(sampling["stop"])
    base = settings or ModelSettings()
    return (base.merged(ModelSettings(**sampling)) if sampling else base), options


# The subsystems above the models (the scripted test models, tooloop.toml's [models], provider
# plugins) register here; the package names them, so this layer does not.
from .. import _register_subsystems  # noqa: E402  (needs the functions above)

_register_subsystems()
