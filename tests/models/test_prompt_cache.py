"""Prompt caching kept by construction, on the providers' wire formats served from 127.0.0.1:
Anthropic breakpoints, OpenAI's prompt_cache_key, stable tool order, and CacheMiss with its reason."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.billing import add, served_model
from tests.support.wire import Reply, WireServer
from tooloop import Agent, CacheMiss, RunFinished, RunResult, Tool, tool
from tooloop.errors import ArgumentValueError
from tooloop.loop.caching import OpeningKey, cache_key
from tooloop.messages import ModelResponse, SystemMessage, ToolCall, UserMessage
from tooloop.models.base import ModelRequest, ModelSettings, _raw_key
from tooloop.testing import FunctionModel

pytestmark = pytest.mark.usefixtures("served_models")


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _anthropic_turns(use: Sequence[dict[str, Any]]) -> list[Reply]:
    """A call to add, then an answer; each response with the given usage block."""
    call = [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}]
    return [
        aw.streamed(call, "tool_use", dict(use[0])),
        aw.streamed([{"type": "text", "text": "5."}], "end_turn", dict(use[1])),
    ]


def _markers(body: Any) -> list[str]:
    """Where the body carries cache_control markers, as readable paths."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append(path)
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    walk(body, "")
    return found


async def _streamed(agent: Agent, prompt: str, **options: Any) -> tuple[RunResult, list[Any]]:
    events: list[Any] = []
    async with agent.stream(prompt, **options) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, RunFinished):
                return event.result, events
    raise AssertionError("no RunFinished")


async def test_anthropic_breakpoints_on_tools_system_and_the_two_latest_messages(wire: WireServer) -> None:
    wire.queue(*_anthropic_turns([aw.usage(), aw.usage()]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add numbers.", tools=[weather, add])
    await agent.run("What is 2 + 3?")
    first, second = (r.json for r in wire.requests)
    assert sorted(_markers(first)) == [".messages[0].content[0]", ".system[0]", ".tools[1]"]
    assert first["system"][0] == {"type": "text", "text": "You add numbers.", "cache_control": {"type": "ephemeral"}}
    # the second request: the tail moved to the tool result, the one before it still marks the call
    assert sorted(_markers(second)) == [
        ".messages[1].content[0]",
        ".messages[2].content[0]",
        ".system[0]",
        ".tools[1]",
    ]  # four: Anthropic's limit
    assert second["messages"][2]["content"][0]["type"] == "tool_result"


async def test_anthropic_one_hour_ttl_and_cache_off_and_explicit(wire: WireServer) -> None:
    settings = {
        "1h": ModelSettings(cache_ttl="1h"),
        "off": ModelSettings(cache="off"),
        "explicit": ModelSettings(cache="explicit", extra={"cache_control": {"type": "ephemeral"}}),
    }
    for name, setting in settings.items():
        wire.queue(aw.streamed([{"type": "text", "text": "Hi."}]))
        agent = Agent(
            served_model(f"anthropic:{aw.MODEL}", wire.url), system="Be brief.", tools=[add], settings=setting
        )
        await agent.run("hello")
        body = wire.requests[-1].json
        if name == "1h":
            assert {json.dumps(m) for m in [body["tools"][0]["cache_control"], body["system"][0]["cache_control"]]} == {
                json.dumps({"type": "ephemeral", "ttl": "1h"})
            }
        elif name == "off":
            assert _markers(body) == [] and body["system"] == "Be brief."
        else:  # only the caller's own top-level marker (Anthropic's automatic caching)
            assert _markers(body) == [""] and body["cache_control"] == {"type": "ephemeral"}


def test_bad_cache_settings_are_refused_where_given() -> None:
    with pytest.raises(ArgumentValueError, match="cache="):
        ModelSettings(cache="on")  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match="cache_ttl"):
        ModelSettings(cache_ttl="10m")  # type: ignore[arg-type]


async def test_every_request_extends_the_previous_one_byte_for_byte(wire: WireServer) -> None:
    wire.queue(*_anthropic_turns([aw.usage(), aw.usage()]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add numbers.", tools=[weather, add])
    await agent.run("What is 2 + 3?")
    first, second = (aw.uncached(r.json) for r in wire.requests)
    for part in ("system", "tools"):
        assert json.dumps(first[part]) == json.dumps(second[part])
    old = json.dumps(first["messages"])[:-1]
    assert json.dumps(second["messages"]).startswith(old)


class _Shuffling:
    """A tool source that lists its tools in another order each time, and adds one later."""

    name = "shuffling"

    def __init__(self) -> None:
        self.listed = 0

    async def start(self) -> None:
        return None

    async def list_tools(self) -> Sequence[Tool]:
        self.listed += 1
        tools: list[Tool] = [add, weather] if self.listed % 2 else [weather, add]
        if self.listed >= 3:
            tools.insert(0, tool(lambda text: text.upper(), name="shout", description="Shout."))
        return tools

    async def aclose(self) -> None:
        return None


async def test_tools_keep_their_order_when_a_source_lists_them_differently(wire: WireServer) -> None:
    calls = [ow.tool_call(f"call_{i}", "add", '{"a": 1, "b": 2}') for i in range(2)]
    wire.queue(
        *[ow.plain(ow.completion({"content": None, "tool_calls": [c]}, "tool_calls")) for c in calls],
        ow.plain(ow.completion({"content": "3"})),
    )
    await Agent(served_model("openai:gpt-4.1", wire.url + "/v1"), tools=[_Shuffling()]).run("go")
    names = [[t["function"]["name"] for t in r.json["tools"]] for r in wire.requests]
    assert names == [["add", "weather"], ["add", "weather", "shout"], ["add", "weather", "shout"]]


async def test_openai_requests_carry_one_prompt_cache_key_per_conversation(wire: WireServer) -> None:
    call = ow.tool_call("call_1", "add", '{"a": 2, "b": 3}')
    wire.queue(
        ow.plain(ow.completion({"content": None, "tool_calls": [call]}, "tool_calls")),
        ow.plain(ow.completion({"content": "5"})),
        ow.plain(ow.completion({"content": "5 again"})),
    )
    agent = Agent(served_model("openai:gpt-4.1", wire.url + "/v1"), system="You add.", tools=[add])
    first = await agent.run("What is 2 + 3?")
    await agent.run("Again?", history=first.transcript)
    keys = [r.json["prompt_cache_key"] for r in wire.requests]
    assert len(set(keys)) == 1 and keys[0].startswith("tooloop-")
    opening = [SystemMessage("You add."), UserMessage("What is 2 + 3?")]
    assert keys[0] == cache_key(None, opening)  # a function of the conversation: the same in any process
    assert cache_key("s1", [UserMessage("x")]) == cache_key("s1", [UserMessage("y")]) != cache_key("s2", [])


async def test_the_key_is_worked_out_once_when_a_model_reads_it_and_reads_as_text() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return (
            ModelResponse(tool_calls=[ToolCall("c1", "add", {"a": 1, "b": 2})])
            if len(seen) == 1
            else ModelResponse("3")
        )

    await Agent(FunctionModel(answer), system="You add.", tools=[add]).run("1 + 2?")
    held = [_raw_key(r) for r in seen]  # what each request holds, unread
    assert isinstance(held[0], OpeningKey) and held[1] is held[0]  # one per run, not hashed yet
    expected = cache_key(None, [SystemMessage("You add."), UserMessage("1 + 2?")])
    assert [r.cache_key for r in seen] == [expected, expected]  # a read settles it: a str from then on
    assert held[0].settle() is seen[0].cache_key and type(seen[1].cache_key) is str
    assert seen[0] == replace(seen[0]) and replace(seen[1], cache_key="other").cache_key == "other"


async def test_a_key_of_the_callers_own_wins_and_other_servers_get_none(wire: WireServer) -> None:
    wire.queue(ow.plain(ow.completion({"content": "ok"})), ow.plain(ow.completion({"content": "ok"})))
    own = ModelSettings(extra={"prompt_cache_key": "mine"})
    await Agent(served_model("openai:gpt-4.1", wire.url + "/v1"), settings=own).run("hi")
    await Agent(served_model("openai-compatible:local", wire.url + "/v1")).run("hi")
    assert wire.requests[0].json["prompt_cache_key"] == "mine"
    assert "prompt_cache_key" not in wire.requests[1].json


async def test_openai_responses_requests_carry_the_key(wire: WireServer) -> None:
    from tests.models.test_openai_responses import message, response
    from tests.support.wire import json_reply

    wire.queue(json_reply(response([message("Hi.")])))
    await Agent(served_model("openai-responses:gpt-5", wire.url + "/v1")).run("hello")
    assert wire.requests[0].json["prompt_cache_key"].startswith("tooloop-")


async def test_a_turn_that_should_have_read_the_cache_reports_what_changed(
    wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    source = _Shuffling()
    # listed before the run and before each request: the third listing adds "shout"
    written = aw.usage(40, 7, cache_creation_input_tokens=5_000, cache_read_input_tokens=0)
    nothing = aw.usage(5_100, 3, cache_creation_input_tokens=0, cache_read_input_tokens=0)
    wire.queue(*_anthropic_turns([written, nothing]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add numbers.", tools=[source])
    with caplog.at_level(logging.INFO, logger="tooloop.loop"):
        result, events = await _streamed(agent, "What is 2 + 3?")
    (miss,) = [e for e in events if isinstance(e, CacheMiss)]
    assert (miss.iteration, miss.lost_tokens, miss.reason) == (2, 5_000, "the tools changed: added shout")
    assert any("prompt cache miss on request 2: the tools changed: added shout" in r.message for r in caplog.records)
    assert result.text == "5."


async def test_an_unchanged_prefix_that_reads_nothing_says_the_provider_dropped_it(wire: WireServer) -> None:
    written = aw.usage(40, 7, cache_creation_input_tokens=5_000)
    nothing = aw.usage(5_100, 3)
    wire.queue(*_anthropic_turns([written, nothing]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add numbers.", tools=[add])
    _, events = await _streamed(agent, "What is 2 + 3?")
    (miss,) = [e for e in events if isinstance(e, CacheMiss)]
    assert miss.reason.startswith("the prefix was unchanged")


async def test_a_turn_that_reads_the_cache_is_no_miss(wire: WireServer) -> None:
    written = aw.usage(40, 7, cache_creation_input_tokens=5_000)
    read = aw.usage(100, 3, cache_read_input_tokens=5_000)
    wire.queue(*_anthropic_turns([written, read]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add numbers.", tools=[add])
    result, events = await _streamed(agent, "What is 2 + 3?")
    assert not [e for e in events if isinstance(e, CacheMiss)]
    assert result.usage.cache_read_tokens == 5_000


async def test_a_context_policy_that_rewrites_the_history_says_the_cache_will_break(
    wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    from tooloop import CacheBreak, ContextPolicy

    calls = [{"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": {"a": i, "b": 1}} for i in range(3)]
    written = aw.usage(40, 7, cache_creation_input_tokens=5_000)
    read = aw.usage(60, 7, cache_read_input_tokens=5_000)
    nothing = aw.usage(5_100, 3)
    wire.queue(
        aw.streamed([calls[0]], "tool_use", written),
        aw.streamed([calls[1]], "tool_use", read),
        aw.streamed([calls[2]], "tool_use", read),
        aw.streamed([{"type": "text", "text": "Done."}], "end_turn", nothing),
    )
    policy = ContextPolicy(max_messages=4, min_recent_turns=0)
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), system="You add.", tools=[add], context=policy)
    with caplog.at_level(logging.INFO, logger="tooloop.loop"):
        result, events = await _streamed(agent, "Add some numbers.")
    assert result.text == "Done."
    # four messages at most: the fourth request drops the oldest call (system, user, three calls)
    assert [len(r.json["messages"]) for r in wire.requests] == [1, 3, 5, 5]
    (brk,) = [e for e in events if isinstance(e, CacheBreak)]
    assert brk.iteration == 4 and brk.from_message == 3
    assert brk.reason == (
        "the context policy sent 4 of 5 messages and changed message 3: the prompt cache will miss "
        "from there (the previous request had 5000 tokens cached)"
    )
    # it comes before the request it is about, and the miss that follows names it
    order = [type(e).__name__ for e in events if type(e).__name__ in ("CacheBreak", "ModelRequestStarted")]
    assert order == ["ModelRequestStarted"] * 3 + ["CacheBreak", "ModelRequestStarted"]
    (miss,) = [e for e in events if isinstance(e, CacheMiss)]
    assert miss.iteration == 4 and miss.reason.endswith(f"; announced before the request: {brk.reason}")
    assert any(r.message == f"prompt cache break on request 4: {brk.reason}" for r in caplog.records)


async def test_no_break_is_announced_while_the_policy_keeps_every_message(wire: WireServer) -> None:
    from tooloop import CacheBreak, ContextPolicy

    wire.queue(*_anthropic_turns([aw.usage(), aw.usage()]))
    agent = Agent(served_model(f"anthropic:{aw.MODEL}", wire.url), tools=[add], context=ContextPolicy(max_messages=50))
    _, events = await _streamed(agent, "What is 2 + 3?")
    assert not [e for e in events if isinstance(e, CacheBreak)]
