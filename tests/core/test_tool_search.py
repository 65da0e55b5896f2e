"""Tool search: past the threshold the model sees a search tool and what it loaded, not every tool."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop import Agent, ArgumentTypeError, ModelRequest, ModelResponse, StopReason, ToolCall, ToolSearch
from tooloop.messages import ToolCallStatus
from tooloop.testing import FunctionModel
from tooloop.tools.search import SEARCH_TOOL, ToolIndex, words
from tooloop.tools.tool import Tool

from ._support import assert_valid

TOPICS = [
    ("get_weather", "Current weather and forecast for a city", "city"),
    ("send_email", "Send an email message to a recipient", "recipient"),
    ("createCalendarEvent", "Create an event in the user's calendar", "title"),
    ("search_flights", "Find flights between two airports on a date", "origin"),
    ("convert_currency", "Convert an amount between currencies at today's rate", "amount"),
]
ran: list[str] = []


def _tool(name: str, description: str, parameter: str) -> Tool:
    async def run(**arguments: Any) -> str:
        ran.append(name)
        return f"{name} done"

    schema = {"type": "object", "properties": {parameter: {"type": "string", "description": f"The {parameter}"}}}
    return Tool(name=name, description=description, parameters=schema, function=run)


def _many(n: int = 50) -> list[Tool]:
    tools = [_tool(*topic) for topic in TOPICS]
    tools += [
        _tool(f"inventory_tool_{i}", f"Inventory record number {i} of the warehouse", "sku") for i in range(n - 5)
    ]
    return tools


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def _names(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools]


async def test_the_model_searches_loads_and_calls_and_loaded_tools_stay() -> None:
    def model(request: ModelRequest) -> ModelResponse | str:
        step = len(seen)
        seen.append(_names(request))
        if step == 0:
            return ModelResponse(tool_calls=[ToolCall("s1", SEARCH_TOOL, {"query": "weather forecast"})])
        if step == 1:
            return ModelResponse(tool_calls=[ToolCall("w1", "get_weather", {"city": "Paris"})])
        return "Sunny."

    seen: list[list[str]] = []
    result = await Agent(FunctionModel(model), tools=_many(), tool_search=True).run("Weather in Paris?")
    assert result.text == "Sunny." and ran == ["get_weather"]
    assert seen[0] == [SEARCH_TOOL]
    assert seen[1][:2] == [SEARCH_TOOL, "get_weather"] and len(seen[1]) <= 1 + ToolSearch().max_results
    assert seen[2] == seen[1]  # loaded tools stay loaded, in the same order: the prefix is unchanged
    search = result.tool_calls[0]
    assert search.status is ToolCallStatus.OK and search.result["loaded"][0] == "get_weather"
    assert_valid(result.transcript)


async def test_a_call_to_a_tool_not_loaded_is_a_recoverable_error() -> None:
    def model(request: ModelRequest) -> ModelResponse | str:
        seen.append(_names(request))
        if len(seen) <= 2:
            return ModelResponse(tool_calls=[ToolCall(f"e{len(seen)}", "send_email", {"recipient": "a@b.c"})])
        return "Sent."

    seen: list[list[str]] = []
    result = await Agent(FunctionModel(model), tools=_many(), tool_search=ToolSearch(threshold=10)).run("mail")
    first, second = result.tool_calls
    assert first.status is ToolCallStatus.ERROR and "was not loaded yet" in first.content
    assert second.status is ToolCallStatus.OK and ran == ["send_email"]
    assert seen[1] == [SEARCH_TOOL, "send_email"]
    assert result.stop_reason is StopReason.END_TURN


async def test_below_the_threshold_every_tool_is_sent() -> None:
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> str:
        seen.append(_names(request))
        return "ok"

    await Agent(FunctionModel(model), tools=_many(20), tool_search=ToolSearch(threshold=20)).run("hi")
    assert len(seen[0]) == 20 and SEARCH_TOOL not in seen[0]


async def test_a_later_run_of_the_conversation_keeps_what_was_loaded() -> None:
    def first_model(request: ModelRequest) -> ModelResponse | str:
        if not any(m.kind == "tool_call" for m in request.messages):
            return ModelResponse(tool_calls=[ToolCall("s1", SEARCH_TOOL, {"query": "convert currency amount"})])
        return "Loaded."

    seen: list[list[str]] = []

    def later_model(request: ModelRequest) -> str:
        seen.append(_names(request))
        return "ok"

    tools = _many()
    first = await Agent(FunctionModel(first_model), tools=tools, tool_search=True).run("x")
    await Agent(FunctionModel(later_model), tools=tools, tool_search=True).run("again", history=first.transcript)
    assert seen[0][:2] == [SEARCH_TOOL, "convert_currency"]


async def test_always_loaded_tools_come_from_the_first_request() -> None:
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> str:
        seen.append(_names(request))
        return "ok"

    search = ToolSearch(always=frozenset({"send_email", "get_weather"}))
    await Agent(FunctionModel(model), tools=_many(), tool_search=search).run("hi")
    assert seen[0] == [SEARCH_TOOL, "get_weather", "send_email"]


def test_the_index_ranks_by_name_description_and_parameters() -> None:
    index = ToolIndex(t.definition for t in _many())
    assert index.search("send an email", 3)[0] == "send_email"
    assert index.search("calendar event", 1) == ["createCalendarEvent"]
    assert index.search("flights from an airport", 1) == ["search_flights"]
    assert index.search("zebra", 5) == []
    assert words("createCalendarEvent get_weather HTTPServer") == [
        "create",
        "calendar",
        "event",
        "get",
        "weather",
        "http",
        "server",
    ]


def test_bad_tool_search_options_are_refused_where_given() -> None:
    with pytest.raises(ArgumentTypeError, match="tool_search"):
        Agent(FunctionModel(lambda r: "x"), tool_search="yes")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="max_results"):
        ToolSearch(max_results="5")  # type: ignore[arg-type]
