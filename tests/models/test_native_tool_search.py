"""The providers' own tool search, on their wire formats served from 127.0.0.1: Anthropic's tool
search tool (``defer_loading``, ``server_tool_use``, ``tool_search_tool_result``) and the
Responses API's hosted ``tool_search`` (``tool_search_call``, ``tool_search_output``), through
the adapters on both of Anthropic's transports (its official SDK on ``transport="sdk"``) and the
official ``openai`` SDK, over a multi-turn run and a transcript saved and read back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.billing import served_model
from tests.models.test_openai_responses import Stream, call, message, response
from tests.support.wire import WireServer, json_reply
from tooloop import Agent, RunResult, ToolSearch
from tooloop.errors import ConfigurationError
from tooloop.messages import ToolCallMessage, ToolCallStatus
from tooloop.models import ModelSettings
from tooloop.models.adapter import has_tool_search
from tooloop.tools.search import SEARCH_TOOL
from tooloop.tools.tool import Tool
from tooloop.transcript import Transcript

pytestmark = pytest.mark.usefixtures("served_models")
ran: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    ran.clear()


def _tool(name: str, description: str, parameter: str) -> Tool:
    async def run(**arguments: Any) -> str:
        ran.append((name, arguments))
        return f"{name}: {json.dumps(arguments, sort_keys=True)}"

    schema = {"type": "object", "properties": {parameter: {"type": "string"}}, "required": [parameter]}
    return Tool(name=name, description=description, parameters=schema, function=run)


def _tools() -> list[Tool]:
    """40 tools, past the default threshold of 30."""
    tools = [
        _tool("get_weather", "Current weather for a city", "city"),
        _tool("convert_currency", "Convert an amount between currencies", "amount"),
    ]
    return tools + [_tool(f"inventory_{i}", f"Inventory record {i}", "sku") for i in range(38)]


# ---------------------------------------------------------------- Anthropic

SEARCH_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "tool_search_tool_bm25",
    "input": {"query": "weather"},
}
SEARCH_RESULT = {
    "type": "tool_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": {
        "type": "tool_search_tool_search_result",
        "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
    },
}
WEATHER_CALL = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}


@pytest.mark.parametrize(("transport", "streamed"), [("lean", True), ("lean", False), ("sdk", True), ("sdk", False)])
async def test_anthropic_tool_search_defers_tools_and_round_trips_the_search(
    wire: WireServer, transport: str, streamed: bool
) -> None:
    reply = aw.streamed if streamed else aw.plain
    content = [SEARCH_USE, SEARCH_RESULT, {"type": "text", "text": "Found it."}, WEATHER_CALL]
    wire.queue(
        reply(content, "tool_use", aw.usage()), reply([{"type": "text", "text": "Sunny."}], "end_turn", aw.usage())
    )
    model = served_model("anthropic:claude-opus-4-6", wire.url, transport=transport)
    assert model.native_tool_search
    settings = ModelSettings(stream=streamed)
    agent = Agent(model, system="You help.", tools=_tools(), tool_search=True, settings=settings)
    result = await agent.run("Weather in Paris?")

    assert result.text == "Sunny."
    assert ran == [("get_weather", {"city": "Paris"})]
    first, second = (r.json for r in wire.requests)
    # the search tool first, then every tool deferred; the tools breakpoint on the one not deferred
    assert first["tools"][0] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
        "cache_control": {"type": "ephemeral"},
    }
    assert [t["name"] for t in first["tools"][1:]] == [t.name for t in _tools()]
    assert all(t["defer_loading"] is True and "cache_control" not in t for t in first["tools"][1:])
    assert second["tools"] == first["tools"]  # the prefix is whole after the search
    # the answer goes back block by block, in its order
    assistant = aw.uncached(second["messages"][1])
    assert assistant == {"role": "assistant", "content": content}
    results = second["messages"][2]["content"]
    assert [b["type"] for b in results] == ["tool_result"] and results[0]["tool_use_id"] == "toolu_01"
    assert results[0]["is_error"] is False


async def test_anthropic_search_kept_in_a_saved_transcript_goes_back_the_same(wire: WireServer) -> None:
    content = [SEARCH_USE, SEARCH_RESULT, WEATHER_CALL]
    wire.queue(aw.streamed(content, "tool_use"), aw.streamed([{"type": "text", "text": "Sunny."}]))
    agent = Agent(served_model("anthropic:claude-opus-4-6", wire.url), tools=_tools(), tool_search=True)
    result = await agent.run("Weather in Paris?")
    saved = Transcript.from_json(result.transcript.to_json())
    # a later run from the saved transcript: get_weather is loaded, the search goes back as it came
    wire.queue(
        aw.streamed(
            [{"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Oslo"}}], "tool_use"
        )
    )
    wire.queue(aw.streamed([{"type": "text", "text": "Cold."}]))
    again = await agent.run("And Oslo?", history=saved)
    assert again.text == "Cold."
    assert ran == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    later = wire.requests[2].json
    assert aw.uncached(later["messages"][1]["content"]) == content
    assert later["tools"] == wire.requests[0].json["tools"]


async def test_anthropic_call_to_a_tool_no_search_loaded_is_a_recoverable_error(wire: WireServer) -> None:
    early = {"type": "tool_use", "id": "toolu_01", "name": "convert_currency", "input": {"amount": "5 EUR"}}
    again = {"type": "tool_use", "id": "toolu_02", "name": "convert_currency", "input": {"amount": "5 EUR"}}
    wire.queue(
        aw.streamed([early], "tool_use"),
        aw.streamed([again], "tool_use"),
        aw.streamed([{"type": "text", "text": "5.4 USD."}]),
    )
    agent = Agent(served_model("anthropic:claude-opus-4-6", wire.url), tools=_tools(), tool_search=True)
    result = await agent.run("5 EUR in USD?")

    assert result.text == "5.4 USD."
    calls = [m for m in result.transcript if isinstance(m, ToolCallMessage)]
    assert [c.status for c in calls] == [ToolCallStatus.ERROR, ToolCallStatus.OK]
    assert "not loaded yet" in calls[0].content
    assert ran == [("convert_currency", {"amount": "5 EUR"})]
    first, second, _ = (r.json for r in wire.requests)
    deferred = {t["name"]: t.get("defer_loading", False) for t in first["tools"][1:]}
    assert deferred["convert_currency"] is True
    # from then on it is sent loaded, and it carries the tools breakpoint (the last one not deferred)
    loaded = {t["name"]: t for t in second["tools"][1:]}
    assert "defer_loading" not in loaded["convert_currency"]
    assert loaded["convert_currency"]["cache_control"] == {"type": "ephemeral"}
    assert second["messages"][2]["content"][0]["is_error"] is True


async def test_anthropic_models_without_it_and_mode_local_use_the_local_search(wire: WireServer) -> None:
    for spec, search in [
        ("anthropic:claude-sonnet-4-20250514", ToolSearch()),
        ("anthropic:claude-3-5-haiku-latest", ToolSearch()),
        ("anthropic:claude-opus-4-6", ToolSearch(mode="local")),
    ]:
        wire.queue(aw.streamed([{"type": "text", "text": "Hi."}]))
        agent = Agent(
            served_model(spec, wire.url), tools=_tools(), tool_search=search, settings=ModelSettings(stream=True)
        )
        await agent.run("hello")
        tools = wire.requests[-1].json["tools"]
        assert [t["name"] for t in tools] == [SEARCH_TOOL], spec
        assert "defer_loading" not in tools[0]
    wire.queue(aw.streamed([{"type": "text", "text": "Hi."}]))
    await Agent(served_model("anthropic:claude-opus-4-6", wire.url), tools=_tools(), tool_search="off").run("hello")
    assert len(wire.requests[-1].json["tools"]) == 40


async def test_anthropic_native_tool_search_option_forces_either_way(wire: WireServer) -> None:
    assert served_model("anthropic:my-gateway-alias", wire.url, native_tool_search=True).native_tool_search
    assert not served_model("anthropic:claude-opus-4-6", wire.url, native_tool_search=False).native_tool_search
    with pytest.raises(ConfigurationError, match="native_tool_search"):
        served_model("anthropic:claude-opus-4-6", wire.url, native_tool_search="yes")


def test_which_models_have_the_providers_tool_search() -> None:
    assert has_tool_search("anthropic", "claude-haiku-4-5-20251001", None)
    assert has_tool_search("anthropic", "claude-opus-5", None)
    assert not has_tool_search("anthropic", "claude-opus-4-1-20250805", None)
    assert not has_tool_search("anthropic", "claude-3-7-sonnet-latest", None)
    assert has_tool_search("openai", "gpt-5.4-mini", None)
    assert has_tool_search("openai", "gpt-6", None)
    assert not has_tool_search("openai", "gpt-5-mini", None)
    assert not has_tool_search("openai", "gpt-4.1", None)


# ---------------------------------------------------------------- OpenAI Responses

RESPONSES_MODEL = "gpt-5.4"
TS_CALL = {
    "type": "tool_search_call",
    "id": "tsc_1",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "arguments": {"query": "weather"},
}
TS_OUTPUT = {
    "type": "tool_search_output",
    "id": "tso_1",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "tools": [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "strict": False,
            "defer_loading": True,
        }
    ],
}


def _responses_model(wire: WireServer, name: str = RESPONSES_MODEL, **options: Any) -> Any:
    return served_model(f"openai-responses:{name}", f"{wire.url}/v1", api_key="sk-test", **options)


@pytest.mark.parametrize(("transport", "streamed"), [("lean", False), ("lean", True), ("sdk", False), ("sdk", True)])
async def test_responses_tool_search_defers_tools_and_round_trips_its_items(
    wire: WireServer, transport: str, streamed: bool
) -> None:
    output = [TS_CALL, TS_OUTPUT, call("call_1", "get_weather", '{"city": "Paris"}')]
    if streamed:
        stream = Stream()
        for index, item in enumerate(output):
            stream.add("response.output_item.added", output_index=index, item=item)
            stream.add("response.output_item.done", output_index=index, item=item)
        wire.queue(stream.end("response.completed", response(output)))
        wire.queue(Stream().text(0, "Sun", "ny.").end("response.completed", response([message("Sunny.")])))
    else:
        wire.queue(json_reply(response(output)), json_reply(response([message("Sunny.")])))
    model = _responses_model(wire, transport=transport)
    assert model.native_tool_search
    agent = Agent(model, tools=_tools(), tool_search=True, settings=ModelSettings(stream=streamed))
    result: RunResult = await agent.run("Weather in Paris?")

    assert result.text == "Sunny."
    assert ran == [("get_weather", {"city": "Paris"})]
    first, second = (r.json for r in wire.requests)
    assert first["tools"][0] == {"type": "tool_search"}
    assert [t["name"] for t in first["tools"][1:]] == [t.name for t in _tools()]
    assert all(t["defer_loading"] is True for t in first["tools"][1:])
    assert second["tools"] == first["tools"]
    # the search's items go back as they came, before the call they made possible and its output
    items = second["input"]
    assert items[0] == {"type": "message", "role": "user", "content": "Weather in Paris?"}
    assert items[1] == {k: v for k, v in TS_CALL.items() if v is not None}
    assert items[2] == {k: v for k, v in TS_OUTPUT.items() if v is not None}
    assert [i["type"] for i in items[3:]] == ["function_call", "function_call_output"]
    assert items[3]["name"] == "get_weather" and items[4]["call_id"] == items[3]["call_id"]


async def test_responses_older_models_use_the_local_search(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("Hi.")])))
    model = _responses_model(wire, "gpt-5-mini")
    assert not model.native_tool_search
    await Agent(model, tools=_tools(), tool_search=True).run("hello")
    tools = wire.requests[-1].json["tools"]
    assert [t["name"] for t in tools] == [SEARCH_TOOL]
