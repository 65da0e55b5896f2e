"""``output_type`` given as a JSON Schema dict, and the schema in the instructions of models
without native structured output (so the first answer can match it without a retry)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.openai_wire import completion, plain, usage
from tests.support.wire import WireServer
from tooloop import Agent, ArgumentTypeError, SystemMessage, UserMessage
from tooloop.models import get_model
from tooloop.testing import ScriptedModel

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


async def test_a_json_schema_dict_gives_the_validated_json_value() -> None:
    model = ScriptedModel(['{"name": "Ada", "age": 36}'])
    result = await Agent(model, output_type=PERSON).run("Who?")
    assert result.output == {"name": "Ada", "age": 36}
    assert model.requests[0].output is not None
    assert dict(model.requests[0].output.schema) == PERSON


async def test_an_answer_breaking_the_json_schema_is_explained_and_asked_again() -> None:
    model = ScriptedModel(['{"name": "Ada", "age": -1}', '{"name": "Ada", "age": 36}'])
    result = await Agent(model, output_type=PERSON).run("Who?")
    assert result.output == {"name": "Ada", "age": 36}
    correction = model.requests[1].messages[-1]
    assert isinstance(correction, UserMessage)
    assert "age: -1 is less than the minimum of 0" in correction.text
    assert result.usage.requests == 2


async def test_a_non_object_json_schema_is_asked_for_as_a_result_field() -> None:
    model = ScriptedModel(['{"result": ["a", "b"]}'])
    result = await Agent(model, output_type={"type": "array", "items": {"type": "string"}}).run("List")
    assert result.output == ["a", "b"]


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({}, "empty JSON Schema"),
        ({"type": "strin"}, "not a valid JSON Schema"),
        ({"type": "object", "properties": {"age": {"type": "integer", "minimum": "x"}}}, "properties/age/minimum"),
        ({"type": "object", "default": object()}, "not JSON"),
    ],
)
def test_a_bad_json_schema_is_an_argument_type_error_where_the_agent_is_built(schema: Any, says: str) -> None:
    with pytest.raises(ArgumentTypeError, match="output_type") as caught:
        Agent("test:echo", output_type=schema)
    assert says in str(caught.value)


async def test_the_schema_dict_is_copied_so_later_changes_do_not_reach_the_agent() -> None:
    schema = json.loads(json.dumps(PERSON))
    model = ScriptedModel(['{"name": "Ada", "age": 36}'])
    agent = Agent(model, output_type=schema)
    schema["required"].append("email")
    result = await agent.run("Who?")
    assert result.output == {"name": "Ada", "age": 36}
    assert "email" not in json.dumps(dict(model.requests[0].output.schema))  # type: ignore[union-attr]


async def test_a_model_without_native_output_gets_the_schema_in_its_first_instructions() -> None:
    model = ScriptedModel(['{"name": "Ada", "age": 36}'])
    await Agent(model, system="Be brief.", output_type=PERSON).run("Who?")
    system = model.requests[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("Be brief.\n\n")
    assert json.dumps(PERSON) in system.text


async def test_anthropic_without_native_output_answers_right_the_first_time(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": '{"name": "Ada", "age": 36}'}], "end_turn", aw.usage(30, 9)))
    model = get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key="sk-test", max_retries=0)
    try:
        result = await Agent(model, output_type=PERSON).run("Who?")
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert result.output == {"name": "Ada", "age": 36}
    assert len(wire.requests) == 1
    sent = aw.uncached(wire.requests[0].json)
    assert json.dumps(PERSON) in sent["system"]
    assert "tools" not in sent  # no forced output tool without native_output


async def test_openai_sends_the_schema_natively_and_not_in_the_instructions(wire: WireServer) -> None:
    answer = plain(completion({"content": '{"name": "Ada", "age": 36}', "refusal": None}, "stop", usage(20, 9)))
    wire.queue(answer, answer)
    native = get_model("openai:gpt-4.1-mini", base_url=wire.url + "/v1", api_key="sk-test", max_retries=0)
    off = get_model(
        "openai-compatible:local", base_url=wire.url + "/v1", api_key="sk-test", max_retries=0, native_output=False
    )
    try:
        for model in (native, off):
            result = await Agent(model, system="Be brief.", output_type=PERSON).run("Who?")
            assert result.output == {"name": "Ada", "age": 36}
    finally:
        await native.aclose()  # type: ignore[attr-defined]
        await off.aclose()  # type: ignore[attr-defined]
    first, second = wire.requests[0].json, wire.requests[1].json
    assert first["response_format"]["json_schema"]["schema"]["properties"] == PERSON["properties"]
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert "response_format" not in second
    assert json.dumps(PERSON) in second["messages"][0]["content"]
