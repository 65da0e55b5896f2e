"""What tooloop knows about a model's limits: context window and longest answer.

:func:`profile_for` matches a model name (or a ``"provider:model"`` string) against a table of
common models by longest prefix, so dated or sized variants such as ``claude-sonnet-4-5-20250929``
or ``qwen3:8b`` find their family. Unknown models get :data:`DEFAULT_PROFILE`; add or correct
entries with :func:`register_profile`.

The numbers are the providers' published limits (OpenAI, Anthropic and Google model pages; the
open models' model cards) at the time of writing. For open models the output limit is the
serving stack's choice, so a conservative value is used.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PROFILE", "ModelProfile", "lookup_profile", "profile_for", "register_profile"]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model's limits in tokens: the whole context window and the longest answer it can give."""

    context_window: int
    max_output_tokens: int

    def __post_init__(self) -> None:
        if self.context_window <= 0 or self.max_output_tokens <= 0:
            raise ValueError("context_window and max_output_tokens must be positive")


DEFAULT_PROFILE = ModelProfile(context_window=32_768, max_output_tokens=4_096)
"""Assumed for models the table does not know: small enough to be safe on most models."""

_K = 1_000
_M_TOKENS = 1_048_576

_PROFILES: dict[str, ModelProfile] = {
    # OpenAI
    "gpt-4.1": ModelProfile(1_047_576, 32_768),
    "gpt-4o": ModelProfile(128 * _K, 16_384),
    "gpt-5": ModelProfile(400 * _K, 128 * _K),
    "gpt-5-chat": ModelProfile(128 * _K, 16_384),
    "o1": ModelProfile(200 * _K, 100 * _K),
    "o1-mini": ModelProfile(128 * _K, 65_536),
    "o3": ModelProfile(200 * _K, 100 * _K),
    "o4-mini": ModelProfile(200 * _K, 100 * _K),
    # Anthropic
    "claude-opus-4-6": ModelProfile(200 * _K, 128 * _K),
    "claude-sonnet-4-6": ModelProfile(200 * _K, 128 * _K),
    "claude-opus-4-5": ModelProfile(200 * _K, 64 * _K),
    "claude-opus-4-1": ModelProfile(200 * _K, 32 * _K),
    "claude-opus-4": ModelProfile(200 * _K, 32 * _K),
    "claude-sonnet-4": ModelProfile(200 * _K, 64 * _K),
    "claude-haiku-4": ModelProfile(200 * _K, 64 * _K),
    "claude-3-7-sonnet": ModelProfile(200 * _K, 64 * _K),
    "claude-3-5-sonnet": ModelProfile(200 * _K, 8_192),
    "claude-3-5-haiku": ModelProfile(200 * _K, 8_192),
    "claude-3-opus": ModelProfile(200 * _K, 4_096),
    "claude-3-haiku": ModelProfile(200 * _K, 4_096),
    # Google
    "gemini-2.5-pro": ModelProfile(_M_TOKENS, 65_536),
    "gemini-2.5-flash": ModelProfile(_M_TOKENS, 65_536),
    "gemini-2.0-flash": ModelProfile(_M_TOKENS, 8_192),
    # Open models (Ollama, vLLM and Hugging Face spellings)
    "qwen3": ModelProfile(32_768, 8_192),
    "llama3": ModelProfile(8_192, 4_096),
    "llama-3": ModelProfile(8_192, 4_096),
    "llama3.1": ModelProfile(131_072, 8_192),
    "llama-3.1": ModelProfile(131_072, 8_192),
    "llama3.2": ModelProfile(131_072, 8_192),
    "llama-3.2": ModelProfile(131_072, 8_192),
    "llama3.3": ModelProfile(131_072, 8_192),
    "llama-3.3": ModelProfile(131_072, 8_192),
    "mistral": ModelProfile(32_768, 8_192),
    "mistral-large": ModelProfile(131_072, 8_192),
    "mistral-nemo": ModelProfile(131_072, 8_192),
}


def register_profile(prefix: str, profile: ModelProfile) -> None:
    """Use ``profile`` for every model whose name starts with ``prefix`` (longest prefix wins)."""
    if not prefix:
        raise ValueError("prefix must not be empty")
    _PROFILES[prefix.lower()] = profile


def lookup_profile(spec_or_name: str) -> ModelProfile | None:
    """The profile of the longest table prefix matching the model name, or None when none does.

    Accepts ``"gpt-4.1"``, ``"openai:gpt-4.1"``, ``"ollama:qwen3:8b"`` and
    ``"openrouter:anthropic/claude-sonnet-4"``.
    """
    name = spec_or_name.strip().lower()
    candidates = [name]
    if ":" in name:
        candidates.append(name.partition(":")[2])
    candidates.extend(c.rpartition("/")[2] for c in list(candidates) if "/" in c)
    for candidate in candidates:
        profile = _longest_prefix(candidate)
        if profile is not None:
            return profile
    return None


def profile_for(spec_or_name: str, default: ModelProfile = DEFAULT_PROFILE) -> ModelProfile:
    """The model's profile, or ``default`` (:data:`DEFAULT_PROFILE`) for models the table does not know."""
    profile = lookup_profile(spec_or_name)
    return default if profile is None else profile


def _longest_prefix(name: str) -> ModelProfile | None:
    best = ""
    for prefix in _PROFILES:
        if len(prefix) > len(best) and name.startswith(prefix):
            best = prefix
    return _PROFILES[best] if best else None
