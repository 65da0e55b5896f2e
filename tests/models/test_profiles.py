"""Model profiles: prefix matching, provider prefixes, fallback and registration."""

from __future__ import annotations

import pytest

from tooloop.models.profiles import DEFAULT_PROFILE, ModelProfile, lookup_profile, profile_for, register_profile


@pytest.mark.parametrize(
    ("name", "window", "output"),
    [
        ("gpt-4.1", 1_047_576, 32_768),
        ("gpt-4.1-nano-2025-04-14", 1_047_576, 32_768),
        ("openai:gpt-4o-mini", 128_000, 16_384),
        ("gpt-5-mini", 400_000, 128_000),
        ("o4-mini", 200_000, 100_000),
        ("o1-mini", 128_000, 65_536),
        ("anthropic:claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("claude-opus-4-1", 200_000, 32_000),
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("google:gemini-2.5-flash-lite", 1_048_576, 65_536),
        ("gemini-2.0-flash", 1_048_576, 8_192),
        ("ollama:qwen3:8b", 32_768, 8_192),
        ("ollama:llama3.1:70b", 131_072, 8_192),
        ("llama3:8b", 8_192, 4_096),
        ("vllm:meta-llama/Llama-3.3-70B-Instruct", 131_072, 8_192),
        ("openrouter:anthropic/claude-haiku-4-5", 200_000, 64_000),
    ],
)
def test_known_models_match_by_longest_prefix(name: str, window: int, output: int) -> None:
    assert profile_for(name) == ModelProfile(window, output)


def test_unknown_model_gets_the_default() -> None:
    assert lookup_profile("my-finetune-v2") is None
    assert profile_for("my-finetune-v2") is DEFAULT_PROFILE
    assert DEFAULT_PROFILE == ModelProfile(32_768, 4_096)
    custom = ModelProfile(1000, 100)
    assert profile_for("my-finetune-v2", default=custom) is custom


def test_register_profile_adds_and_overrides() -> None:
    register_profile("Tooloop-Test-Model", ModelProfile(50_000, 5_000))
    assert profile_for("custom:tooloop-test-model-7b") == ModelProfile(50_000, 5_000)
    register_profile("tooloop-test-model-7b", ModelProfile(60_000, 6_000))
    assert profile_for("tooloop-test-model-7b-q4") == ModelProfile(60_000, 6_000)
    assert profile_for("tooloop-test-model-3b") == ModelProfile(50_000, 5_000)


def test_invalid_profiles_are_refused() -> None:
    with pytest.raises(ValueError):
        ModelProfile(0, 10)
    with pytest.raises(ValueError):
        register_profile("", ModelProfile(10, 10))
