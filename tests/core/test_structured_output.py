"""Structured output: the final answer is validated against ``output_type`` and retried if wrong."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from tooloop import (
    Agent,
    AssistantMessage,
    Limits,
    ModelResponse,
    OutputValidationError,
    StopReason,
    SystemMessage,
    ToolCall,
    UserMessage,
    tool,
)
from tooloop.testing import ScriptedModel


class City(BaseModel):
    """A city and its population."""

    name: str
    population: int


async def test_output_is_validated_and_the_schema_is_sent() -> None:
    model = ScriptedModel(['{"name": "Paris", "population": 2100000}'])
    result = await Agent(model, output_type=City).run("biggest French city?")
    assert result.output == City(name="Paris", population=2100000)
    assert result.stop_reason is StopReason.END_TURN
    schema = model.requests[0].output
    assert schema is not None
    assert schema.name == "City"
    assert schema.description == "A city and its population."
    assert schema.schema["properties"]["population"]["type"] == "integer"
    assert schema.schema["required"] == ["name", "population"]


async def test_code_fenced_json_is_accepted() -> None:
    model = ScriptedModel(['```json\n{"name": "Rome", "population": 1}\n```'])
    result = await Agent(model, output_type=City).run("?")
    assert result.output == City(name="Rome", population=1)


async def test_output_after_tool_calls() -> None:
    @tool
    def lookup(name: str) -> int:
        return 42

    model = ScriptedModel(
        [ModelResponse(tool_calls=[ToolCall("l", "lookup", {"name": "X"})]), '{"name": "X", "population": 42}']
    )
    result = await Agent(model, tools=[lookup], output_type=City).run("?")
    assert result.output == City(name="X", population=42)
    assert model.requests[1].output is not None


async def test_invalid_answer_is_explained_and_asked_again() -> None:
    model = ScriptedModel(['{"name": "Paris", "population": "lots"}', '{"name": "Paris", "population": 2}'])
    result = await Agent(model, output_type=City).run("?")
    assert result.output == City(name="Paris", population=2)
    second = list(model.requests[1].messages)
    # a scripted model has no native structured output: the schema is in the instructions
    assert isinstance(second[0], SystemMessage) and "JSON Schema" in second[0].text
    assert second[2] == AssistantMessage('{"name": "Paris", "population": "lots"}')
    correction = second[3]
    assert isinstance(correction, UserMessage)
    assert "population" in correction.text
    assert "valid integer" in correction.text
    assert json.dumps(model.requests[0].output.schema) in correction.text  # type: ignore[union-attr]
    assert result.usage.requests == 2


async def test_not_json_is_explained() -> None:
    model = ScriptedModel(["Paris, obviously", '{"name": "Paris", "population": 2}'])
    await Agent(model, output_type=City).run("?")
    correction = model.requests[1].messages[-1]
    assert isinstance(correction, UserMessage)
    assert "not valid JSON" in correction.text


async def test_output_retries_exhausted_raises_with_the_transcript() -> None:
    model = ScriptedModel(["nope", "still no", "never"])
    agent = Agent(model, output_type=City, limits=Limits(output_retries=1))
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("?")
    assert len(model.requests) == 2
    transcript = caught.value.transcript
    assert transcript is not None
    assert [m.kind for m in transcript] == ["user", "assistant", "user", "assistant"]
    assert transcript[-1] == AssistantMessage("still no")
    assert "2 attempts" in str(caught.value)


async def test_non_object_output_types() -> None:
    model = ScriptedModel(['{"result": 7}'])
    result = await Agent(model, output_type=int).run("?")
    assert result.output == 7
    schema = model.requests[0].output
    assert schema is not None
    assert schema.schema == {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}

    model = ScriptedModel(['["a", 1]', '{"result": ["a", "b"]}'])
    result = await Agent(model, output_type=list[str]).run("?")
    assert result.output == ["a", "b"]
    correction = model.requests[1].messages[-1]
    assert isinstance(correction, UserMessage) and '"result"' in correction.text
