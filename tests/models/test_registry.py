"""Model strings, named model configurations and the provider registry."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop import (
    Agent,
    ConfigurationError,
    ModelConfig,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    SystemMessage,
    get_model,
    register_model_config,
    register_provider,
)
from tooloop.testing import FunctionModel

SEEN: list[ModelRequest] = []
CREATED: list[dict[str, Any]] = []


def _capture(
    model_name: str,
    *,
    provider: str,
    base_url: str | None,
    api_key: str | None,
    settings: ModelSettings,
    **options: Any,
) -> FunctionModel:
    CREATED.append({"model": model_name, "base_url": base_url, "settings": settings, **options})

    def answer(request: ModelRequest) -> ModelResponse:
        SEEN.append(request)
        return ModelResponse(f"{provider}:{model_name}")

    return FunctionModel(answer, name=model_name)


register_provider("capture", _capture)


def test_a_third_party_provider_registers_like_the_built_in_ones() -> None:
    model = get_model("capture:my-model", base_url="http://127.0.0.1:9/v1", temperature=0.3, stream=False)
    assert model.name == "my-model"
    assert CREATED[-1]["base_url"] == "http://127.0.0.1:9/v1"
    assert CREATED[-1]["settings"] == ModelSettings(temperature=0.3, stream=False)


def test_a_named_configuration_supplies_model_settings_and_system_prompt_and_the_agent_overrides_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooloop.models import registry

    monkeypatch.setattr(registry, "_CONFIGS", dict(registry._CONFIGS))  # gone when the test ends
    register_model_config(
        ModelConfig(id="fast", provider="capture", model="m1", temperature=0.2, max_tokens=100, system="Be fast.")
    )
    result = Agent("@fast", settings=ModelSettings(max_tokens=50)).run_sync("hi")
    request = SEEN[-1]
    assert result.text == "capture:m1"
    assert (request.settings.temperature, request.settings.max_tokens) == (0.2, 50)
    assert request.messages[0] == SystemMessage("Be fast.")
    assert Agent("@fast", system="Be thorough.").system == "Be thorough."


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4.1", "must look like 'provider:model'"),
        ("nope:gpt-4.1", "unknown provider 'nope'"),
        ("openai-compatible:local", "need an explicit base_url"),
        ("@missing", "no model configuration named 'missing'"),
    ],
)
def test_bad_model_strings_are_clear_configuration_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        get_model(spec)


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4.1", "OPENAI_API_KEY"),
        ("openai-responses:gpt-4.1", "OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("google:gemini-2.5-flash", "GEMINI_API_KEY"),
        ("openrouter:qwen/qwen3-coder", "OPENROUTER_API_KEY"),
        ("groq:llama-3.3-70b", "GROQ_API_KEY"),
    ],
)
def test_a_missing_key_names_the_variable_to_set(spec: str, variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match=variable):
        get_model(spec)


def test_local_servers_need_no_key_and_default_to_their_usual_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    for spec, url in (
        ("ollama:qwen3", "http://localhost:11434/v1"),
        ("vllm:qwen3", "http://localhost:8000/v1"),
        ("llamacpp:qwen3", "http://localhost:8080/v1"),
    ):
        assert url in repr(get_model(spec))
    assert "127.0.0.1:8123" in repr(get_model("vllm:qwen3", base_url="http://127.0.0.1:8123/v1"))
