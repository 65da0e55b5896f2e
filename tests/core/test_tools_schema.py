"""Tools: ``@tool`` (bare or with options), plain functions, and the JSON schema built from hints."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from tooloop import Agent, ConfigurationError, ModelResponse, Tool, ToolCall, ToolContext, tool
from tooloop.testing import ScriptedModel


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int


def test_bare_decorator_takes_name_and_description_from_the_function() -> None:
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city.

        More detail here.
        """
        return city

    assert isinstance(get_weather, Tool)
    assert get_weather.name == "get_weather"
    assert get_weather.description.startswith("Current weather for a city.")
    assert "More detail here." in get_weather.description
    assert get_weather.parameters["properties"] == {"city": {"type": "string"}}
    assert get_weather.parameters["required"] == ["city"]
    assert get_weather("Paris") == "Paris"  # still callable directly


def test_decorator_with_options() -> None:
    @tool(name="rm", description="Remove a file", requires_approval=True, sequential=True, timeout=3, max_concurrency=2)
    async def remove(path: str) -> None:
        """Ignored docstring."""

    assert remove.name == "rm"
    assert remove.description == "Remove a file"
    assert remove.requires_approval and remove.sequential
    assert remove.timeout == 3 and remove.max_concurrency == 2
    assert remove.is_async


def test_plain_functions_become_tools() -> None:
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    agent = Agent(ScriptedModel([]), tools=[add])
    (made,) = agent.tools
    assert made.name == "add"
    assert made.description == "Add two numbers."
    assert made.parameters["properties"]["b"] == {"type": "integer", "default": 2}
    assert made.parameters["required"] == ["a"]
    assert made.is_async is False


def test_schema_from_hints() -> None:
    @tool
    def paint(
        where: Point,
        color: Color,
        note: str | None = None,
        times: Annotated[int, Field(description="How many coats", ge=1)] = 1,
        label: Annotated[str, "Text written on it"] = "",
    ) -> str:
        """Paint a point."""
        return ""

    params = paint.parameters
    props = params["properties"]
    assert params["type"] == "object"
    assert params["required"] == ["where", "color"]
    assert props["where"] == {"$ref": "#/$defs/Point"}
    assert params["$defs"]["Point"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert props["color"] == {"$ref": "#/$defs/Color"}
    assert params["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["note"]["default"] is None
    assert props["times"] == {"type": "integer", "description": "How many coats", "minimum": 1, "default": 1}
    assert props["label"] == {"type": "string", "description": "Text written on it", "default": ""}
    assert "title" not in params

    # validation converts to the annotated types
    kwargs = paint.validate({"where": {"x": 1, "y": 2}, "color": "red"})
    assert kwargs["where"] == Point(x=1, y=2) and kwargs["color"] is Color.RED and kwargs["times"] == 1


def _google(city: str, days: int) -> str:
    """Forecast.

    Args:
        city: The city name.
        days: How many days ahead.
    """
    return ""


def _numpy(city: str, days: int) -> str:
    """Forecast.

    Parameters
    ----------
    city : str
        The city name.
    days : int
        How many days ahead.
    """
    return ""


def _rest(city: str, days: int) -> str:
    """Forecast.

    :param city: The city name.
    :param days: How many days ahead.
    """
    return ""


@pytest.mark.parametrize("fn", [_google, _numpy, _rest], ids=["google", "numpy", "rest"])
def test_docstring_parameter_descriptions(fn: object) -> None:
    made = tool(fn)  # type: ignore[call-overload]
    assert made.description == "Forecast."
    props = made.parameters["properties"]
    assert props["city"]["description"] == "The city name."
    assert props["days"]["description"] == "How many days ahead."


async def test_tool_context_is_injected_and_not_in_the_schema() -> None:
    seen: list[ToolContext] = []

    @tool
    async def remember(fact: str, ctx: ToolContext) -> str:
        seen.append(ctx)
        return "ok"

    assert list(remember.parameters["properties"]) == ["fact"]
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c7", "remember", {"fact": "sky"})]), "done"])
    agent = Agent(model, tools=[remember])
    await agent.run("go")
    (ctx,) = seen
    assert ctx.tool_call_id == "c7" and ctx.tool_name == "remember"
    assert ctx.arguments == {"fact": "sky"}
    assert ctx.idempotency_key == f"run-{ctx.run_id}:c7" and len(ctx.run_id) == 16
    assert ctx.iteration == 1

    # Providers reuse call ids across conversations: outside a session the key is per run.
    await Agent(
        ScriptedModel([ModelResponse(tool_calls=[ToolCall("c7", "remember", {"fact": "sea"})]), "done"]),
        tools=[remember],
    ).run("again")
    assert seen[1].tool_call_id == "c7" and seen[1].idempotency_key != ctx.idempotency_key


async def test_sync_tools_run_in_threads_async_on_the_loop() -> None:
    where: dict[str, object] = {}

    @tool
    def blocking() -> str:
        where["sync"] = threading.current_thread()
        return "s"

    @tool
    async def awaiting() -> str:
        where["async"] = threading.current_thread()
        where["loop"] = asyncio.get_running_loop()
        return "a"

    model = ScriptedModel(
        [ModelResponse(tool_calls=[ToolCall("1", "blocking", {}), ToolCall("2", "awaiting", {})]), "done"]
    )
    await Agent(model, tools=[blocking, awaiting]).run("go")
    assert where["sync"] is not threading.main_thread()
    assert where["async"] is threading.main_thread()
    assert where["loop"] is asyncio.get_running_loop()


def test_duplicate_tool_names_are_refused() -> None:
    def lookup() -> str:
        return ""

    other = tool(name="lookup")(lambda: "")
    with pytest.raises(ConfigurationError, match="lookup"):
        Agent(ScriptedModel([]), tools=[lookup, other])
    agent = Agent(ScriptedModel([]), tools=[lookup])
    with pytest.raises(ConfigurationError, match="lookup"):
        agent.with_tools(other)


def test_lambda_without_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="name"):
        tool(lambda: 1)
