"""What the Chat Completions adapter sends: messages, tool batches, tools, settings, keys and URLs."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from tests.models.openai_wire import completion, plain
from tests.support.wire import WireServer
from tooloop.errors import ConfigurationError
from tooloop.messages import (
    AssistantMessage,
    SystemMessage,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
    frozen_mapping,
)
from tooloop.models import ModelRequest, ModelSettings, OutputSchema, ToolDefinition, get_model
from tooloop.models.openai_chat import OpenAIChatModel
from tooloop.models.portable import encode_arguments

Make = Callable[..., OpenAIChatModel]
WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
    strict=True,
)
LONG_ID = "toolu_01A09q90qw90lq917835lq9-with.dots/and-more-than-forty-characters"


async def sent_body(wire: WireServer, model: OpenAIChatModel, request: ModelRequest) -> dict[str, Any]:
    wire.queue(plain(completion({"content": "ok"})))
    await model.respond(request)
    body: dict[str, Any] = wire.requests[-1].json
    return body


async def test_transcript_with_a_tool_batch(wire: WireServer, make_model: Make) -> None:
    foreign = (ThinkingPart("secret reasoning", signature="sig", provider="anthropic"),)
    messages = [
        SystemMessage("Be brief."),
        UserMessage("Weather in Paris and Rome?"),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id=LONG_ID,
            arguments={"city": "Paris"},
            message="Checking both.",
            content="18°C, cloudy",
            batch_id="b1",
            thinking=foreign,
        ),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="call_rome",
            arguments={},
            raw_arguments='{"city": "Rome"',
            status=ToolCallStatus.ERROR,
            content="arguments are not valid JSON",
            batch_id="b1",
        ),
        AssistantMessage("Paris is 18°C.", thinking=foreign),
        UserMessage("And Oslo?"),
        AssistantMessage("", refusal="I can't check Oslo."),
    ]
    body = await sent_body(wire, make_model(), ModelRequest(messages, (WEATHER,)))
    sent = body["messages"]
    mapped_id = sent[2]["tool_calls"][0]["id"]
    assert mapped_id != LONG_ID and len(mapped_id) <= 40
    assert all(c.isalnum() or c in "_-" for c in mapped_id)
    assert sent == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": mapped_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_rome",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": mapped_id, "content": "18°C, cloudy"},
        {"role": "tool", "tool_call_id": "call_rome", "content": "Error: arguments are not valid JSON"},
        {"role": "assistant", "content": "Paris is 18°C."},
        {"role": "user", "content": "And Oslo?"},
        {"role": "assistant", "content": "I can't check Oslo."},
    ]
    assert "secret reasoning" not in wire.requests[-1].body.decode()


async def test_batch_without_text_sends_null_content(wire: WireServer, make_model: Make) -> None:
    messages = [
        UserMessage("time?"),
        ToolCallMessage(tool_name="now", tool_call_id="call_1", content="12:00", status=ToolCallStatus.OK),
        ToolCallMessage(
            tool_name="now", tool_call_id="call_2", content="Error: denied by policy", status=ToolCallStatus.DENIED
        ),
    ]
    body = await sent_body(wire, make_model(), ModelRequest(messages))
    # two batches (each call is its own batch_id by default): two assistant turns
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "12:00"}
    assert body["messages"][4] == {"role": "tool", "tool_call_id": "call_2", "content": "Error: denied by policy"}


async def test_tools_choice_and_strict(wire: WireServer, make_model: Make) -> None:
    request = ModelRequest([UserMessage("go")], (WEATHER,), tool_choice="required")
    body = await sent_body(wire, make_model(), request)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": dict(WEATHER.parameters),
                "strict": True,
            },
        }
    ]
    assert body["tool_choice"] == "required"


async def test_no_tools_means_no_tool_fields(wire: WireServer, make_model: Make) -> None:
    settings = ModelSettings(parallel_tool_calls=False)
    body = await sent_body(wire, make_model(), ModelRequest([UserMessage("hi")], tool_choice="none", settings=settings))
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & body.keys()


async def test_tool_parameters_given_as_read_only_mappings(wire: WireServer, make_model: Make) -> None:
    tool = ToolDefinition("t", "d", MappingProxyType({"type": "object", "properties": MappingProxyType({})}))
    body = await sent_body(wire, make_model(), ModelRequest([UserMessage("hi")], (tool,)))
    assert body["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}


async def test_settings_on_openai(wire: WireServer, make_model: Make) -> None:
    settings = ModelSettings(
        temperature=0.2,
        max_tokens=256,
        top_p=0.9,
        stop=("END",),
        seed=7,
        parallel_tool_calls=False,
        extra={"reasoning_effort": "low", "user": "u1"},
    )
    body = await sent_body(wire, make_model(), ModelRequest([UserMessage("hi")], (WEATHER,), settings=settings))
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 256 and "max_tokens" not in body
    assert body["top_p"] == 0.9
    assert body["stop"] == ["END"]
    assert body["seed"] == 7
    assert body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "low" and body["user"] == "u1"


async def test_compatible_servers_get_max_tokens(wire: WireServer, make_model: Make) -> None:
    body = await sent_body(wire, make_model("ollama:qwen3", max_tokens=99), ModelRequest([UserMessage("hi")]))
    assert body["max_tokens"] == 99 and "max_completion_tokens" not in body


async def test_request_settings_override_model_settings(wire: WireServer, make_model: Make) -> None:
    model = make_model(temperature=0.5, max_tokens=10)
    body = await sent_body(wire, model, ModelRequest([UserMessage("hi")], settings=ModelSettings(temperature=0.0)))
    assert body["temperature"] == 0.0
    assert body["max_completion_tokens"] == 10


async def test_structured_output(wire: WireServer, make_model: Make) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    output = OutputSchema("final answer", schema, description="The answer.", strict=True)
    body = await sent_body(wire, make_model(), ModelRequest([UserMessage("hi")], output=output))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "final_answer",
            "schema": {**schema, "additionalProperties": False},  # strict mode's required form
            "strict": True,
            "description": "The answer.",
        },
    }


async def test_native_output_off(wire: WireServer, make_model: Make) -> None:
    output = OutputSchema("answer", {"type": "object"})
    body = await sent_body(wire, make_model(native_output=False), ModelRequest([UserMessage("hi")], output=output))
    assert "response_format" not in body


async def test_developer_role(wire: WireServer, make_model: Make) -> None:
    body = await sent_body(
        wire, make_model(system_role="developer"), ModelRequest([SystemMessage("x"), UserMessage("y")])
    )
    assert body["messages"][0] == {"role": "developer", "content": "x"}


# -- keys, URLs and options -------------------------------------------------------------------


async def test_key_from_openai_api_key(
    wire: WireServer, models: list[OpenAIChatModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url + "/v1")
    model = get_model("openai:gpt-4.1", max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    models.append(model)
    await sent_body(wire, model, ModelRequest([UserMessage("hi")]))
    assert wire.requests[-1].headers["authorization"] == "Bearer sk-from-env"
    assert wire.requests[-1].path == "/v1/chat/completions"
    assert "sk-from-env" not in repr(model)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        get_model("openai:gpt-4.1")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="GROQ_API_KEY"):
        get_model("groq:llama-3.3-70b-versatile")


async def test_local_server_without_key(
    wire: WireServer, models: list[OpenAIChatModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    model = get_model("ollama:qwen3", base_url=wire.url + "/v1", max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    models.append(model)
    await sent_body(wire, model, ModelRequest([UserMessage("hi")]))
    assert "sk-must-not-leak" not in wire.requests[-1].headers.get("authorization", "")


async def test_provider_key_variable(
    wire: WireServer, models: list[OpenAIChatModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "vllm-secret")
    model = get_model("vllm:meta-llama/Llama-3.1-8B-Instruct", base_url=wire.url + "/v1", max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    models.append(model)
    await sent_body(wire, model, ModelRequest([UserMessage("hi")]))
    assert wire.requests[-1].headers["authorization"] == "Bearer vllm-secret"
    assert wire.requests[-1].json["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "vllm-secret" not in repr(model)


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="temprature"):
        get_model("ollama:qwen3", temprature=0.1)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_retries"):
        get_model("ollama:qwen3", max_retries=-1)
    with pytest.raises(ConfigurationError, match="system_role"):
        get_model("ollama:qwen3", system_role="boss")


def test_model_attributes() -> None:
    model = get_model("llamacpp:gemma-3", api_key="k")
    assert (model.name, getattr(model, "provider", None)) == ("gemma-3", "llamacpp")
    assert "http://localhost:8080/v1" in repr(model)


@pytest.mark.parametrize(("spec", "expected"), [("openai:gpt-4.1", '{"city": "Ro'), ("vllm:qwen3", "{}")])
async def test_broken_arguments_go_back_verbatim_only_to_openai(
    wire: WireServer, make_model: Make, spec: str, expected: str
) -> None:
    broken = ToolCallMessage(
        tool_name="get_weather",
        tool_call_id="call_1",
        raw_arguments='{"city": "Ro',
        status=ToolCallStatus.ERROR,
        content="ToolArgumentsError: arguments are not valid JSON",
    )
    body = await sent_body(wire, make_model(spec), ModelRequest([UserMessage("Rome?"), broken]))
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == expected


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"city": "Paris"},
        {"text": 'quote " backslash \\ newline \n é \u2028 😀', "none": None, "yes": True, "no": False},
        {"int": 3, "neg": -7, "huge": 10**30, "float": 1.5, "tiny": 5e-324, "negzero": -0.0, "big": 1e300},
        {"nan": float("nan"), "inf": float("inf")},
        {"nested": {"list": [1, "two", {"three": 3.0}]}, "after": 1},
        {"é": "accented key"},
    ],
)
def test_arguments_go_back_exactly_as_json_dumps_writes_them(arguments: dict[str, Any]) -> None:
    frozen = frozen_mapping(arguments)
    assert encode_arguments(frozen) == json.dumps(arguments, ensure_ascii=False)


def test_a_mutable_mapping_is_encoded_as_it_stands_each_time() -> None:
    arguments: dict[str, Any] = {"city": "Paris"}
    assert encode_arguments(arguments) == '{"city": "Paris"}'
    arguments["city"] = "Rome"
    assert encode_arguments(arguments) == '{"city": "Rome"}'
