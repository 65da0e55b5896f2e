"""Model strings (``"provider:model"``), named model configurations, and the provider registry.

Built-in providers register here through the same :func:`register_provider` third parties use.
A provider's module is imported only when a model of that provider is created, so
``import tooloop`` never loads a provider SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentValueError, ConfigurationError
from .base import Model, ModelSettings

__all__ = [
    "ModelConfig",
    "ProviderFactory",
    "check_model_string",
    "get_model",
    "model_config",
    "register_model_config",
    "register_provider",
    "registered_model_configs",
]

ProviderFactory = Callable[..., Model]
"""``factory(model_name, *, provider, base_url, api_key, settings, **options) -> Model``."""


@dataclass(frozen=True, slots=True)
class _Provider:
    target: str | ProviderFactory
    defaults: dict[str, Any] = field(default_factory=dict)

    def factory(self) -> ProviderFactory:
        if callable(self.target):
            return self.target
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:  # the SDK extra is missing
            raise ConfigurationError(
                f'{exc}. Install the provider\'s extra, e.g. pip install "tooloop[{_extra_for(module_name)}]"'
            ) from exc
        factory: ProviderFactory = getattr(module, attr)
        return factory


def _extra_for(module_name: str) -> str:
    for key, extra in (("anthropic", "anthropic"), ("gemini", "google"), ("openai", "openai")):
        if key in module_name:
            return extra
    return "all"


_OPENAI_CHAT = "tooloop.models.openai_chat:create"
_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider(_OPENAI_CHAT),
    "openai-responses": _Provider("tooloop.models.openai_responses:create"),
    "anthropic": _Provider("tooloop.models.anthropic:create"),
    "google": _Provider("tooloop.models.gemini:create"),
    "gemini": _Provider("tooloop.models.gemini:create"),
    "openai-compatible": _Provider(_OPENAI_CHAT, {"requires_base_url": True, "api_key_optional": True}),
    "ollama": _Provider(
        _OPENAI_CHAT,
        {"base_url": "http://localhost:11434/v1", "api_key_optional": True, "api_key_env": "OLLAMA_API_KEY"},
    ),
    "vllm": _Provider(
        _OPENAI_CHAT, {"base_url": "http://localhost:8000/v1", "api_key_optional": True, "api_key_env": "VLLM_API_KEY"}
    ),
    "llamacpp": _Provider(
        _OPENAI_CHAT,
        {"base_url": "http://localhost:8080/v1", "api_key_optional": True, "api_key_env": "LLAMACPP_API_KEY"},
    ),
    "openrouter": _Provider(
        _OPENAI_CHAT, {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}
    ),
    "groq": _Provider(_OPENAI_CHAT, {"base_url": "https://api.groq.com/openai/v1", "api_key_env": "GROQ_API_KEY"}),
    "test": _Provider("tooloop.testing:create_test_model"),
}


def register_provider(name: str, factory: str | ProviderFactory, **defaults: Any) -> None:
    """Make ``"name:model"`` strings create models with ``factory``.

    ``factory`` is a callable or an import path ``"package.module:function"`` imported on first use.
    """
    _PROVIDERS[name] = _Provider(factory, dict(defaults))


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
            api_key=api_key,
            settings=self.settings,
            **{**self.options, **options},
        )


_CONFIGS: dict[str, ModelConfig] = {}


def register_model_config(config: ModelConfig) -> ModelConfig:
    """Register ``config`` under its id (replacing an earlier one with the same id)."""
    _CONFIGS[config.id] = config
    return config


def registered_model_configs() -> tuple[ModelConfig, ...]:
    """Every registered configuration, sorted by id."""
    return tuple(_CONFIGS[key] for key in sorted(_CONFIGS))


def model_config(config_id: str) -> ModelConfig:
    """The registered configuration with this id."""
    try:
        return _CONFIGS[config_id]
    except KeyError:
        known = ", ".join(sorted(_CONFIGS)) or "none registered"
        raise ArgumentValueError(
            f"no model configuration named {config_id!r} (registered: {known}); "
            "register it first with register_model_config(ModelConfig(id=...))"
        ) from None


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
            api_key=api_key,
            settings=merged,
            **{**config.options, **options},
        )
    provider_name, provider, model_name = _parse(spec)
    settings, options = _split_settings(settings, options)
    defaults = dict(provider.defaults)
    if defaults.pop("requires_base_url", False) and base_url is None:
        raise ConfigurationError(f"{provider_name!r} models need an explicit base_url")
    default_base_url = defaults.pop("base_url", None)
    return provider.factory()(
        model_name,
        provider=provider_name,
        base_url=base_url if base_url is not None else default_base_url,
        api_key=api_key,
        settings=settings,
        **{**defaults, **options},
    )


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
        raise ArgumentValueError(
            f"unknown provider {provider_name!r} in {spec!r}{_did_you_mean(provider_name)}; known providers: {known}"
        )
    return provider_name, provider, model_name


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
