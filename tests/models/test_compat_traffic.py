"""Real-world Chat Completions traffic that compatible servers send, through the ``openai`` SDK.

Each case is the wire shape a server was seen sending (OpenRouter relaying an upstream provider,
DeepSeek in thinking mode, Ollama, vLLM, early llama.cpp servers), served from 127.0.0.1, streamed
and not, and run through ``tooloop.Agent`` where the next request shows what was sent back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.models.openai_wire import call_start, chunk, completion, plain, stream, tool_call, usage, usage_chunk
from tests.support.wire import Reply, WireServer
from tooloop import Agent, RunFinished, RunResult, StopReason
from tooloop.errors import ProviderConnectionError
from tooloop.messages import ToolCall, UserMessage
from tooloop.models import ModelRequest
from tooloop.models.openai_chat import OpenAIChatModel

Make = Callable[..., OpenAIChatModel]
MODES = ["stream", "plain"]
LONG_ID = "chatcmpl-tool-" + "7f3c9a1e5b2d4c8f" * 4  # vLLM and OpenRouter ids run past 40 characters


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C in {city}"


async def run(agent: Agent, mode: str, prompt: str = "Weather in Paris?") -> RunResult:
    if mode == "plain":
        return await agent.run(prompt)
    async with agent.stream(prompt) as events:
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("the stream ended without RunFinished")


def call_turn(mode: str, call_id: str, reasoning: dict[str, str] | None = None) -> Reply:
    extra = reasoning or {}
    if mode == "stream":
        pieces = [chunk({"role": "assistant", **{k: v[:5] for k, v in extra.items()}})]
        pieces += [chunk({k: v[5:]}) for k, v in extra.items()]
        pieces += [chunk({"tool_calls": [call_start(0, call_id, "get_weather", '{"city": "Paris"}')]})]
        return stream(*pieces, chunk({}, "tool_calls"), usage_chunk(usage(30, 9)))
    message = {"content": None, **extra, "tool_calls": [tool_call(call_id, "get_weather", '{"city": "Paris"}')]}
    return plain(completion(message, "tool_calls"))


def answer_turn(mode: str, text: str = "It is 18C.") -> Reply:
    if mode == "stream":
        return stream(chunk({"content": text}), chunk({}, "stop"), usage_chunk(usage(50, 5)))
    return plain(completion({"content": text}))


# -- a stream that reaches [DONE] without a finish reason ---------------------------------------


async def test_done_without_finish_reason_is_a_complete_answer(wire: WireServer, make_model: Make) -> None:
    # OpenRouter relaying some upstream providers: text, a usage chunk and [DONE], no finish_reason.
    wire.queue(
        stream(chunk({"role": "assistant", "content": "Hello"}), chunk({"content": " there"}), usage_chunk(usage(9, 2)))
    )
    response = await make_model("openrouter:meta-llama/llama-3.3-70b").respond(
        ModelRequest([UserMessage("hi")]), lambda event: None
    )
    assert response.text == "Hello there"
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage.input_tokens == 9


@pytest.mark.parametrize("mode", MODES)
async def test_done_without_finish_reason_after_tool_calls_is_tool_use(
    wire: WireServer, make_model: Make, mode: str
) -> None:
    first: Reply
    if mode == "stream":
        first = stream(
            chunk({"tool_calls": [call_start(0, "call_a", "get_weather", '{"city": "Paris"}')]}), usage_chunk(usage())
        )
    else:
        body = completion({"content": None, "tool_calls": [tool_call("call_a", "get_weather", '{"city": "Paris"}')]})
        body["choices"][0]["finish_reason"] = None
        first = plain(body)
    wire.queue(first, answer_turn(mode))
    result = await run(Agent(make_model("openrouter:some/model"), tools=[get_weather]), mode)
    assert result.text == "It is 18C." and result.stop_reason is StopReason.END_TURN
    assert wire.requests[1].json["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "18C in Paris",
    }


async def test_a_stream_cut_before_done_and_finish_reason_is_still_an_error(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Hel"}), done=False))
    with pytest.raises(ProviderConnectionError, match="before the response was complete"):
        await make_model("openrouter:x/y").respond(ModelRequest([UserMessage("hi")]), lambda event: None)


# -- reasoning that must go back ----------------------------------------------------------------

PASS_BACK = [
    ("deepseek:deepseek-v4-flash", "reasoning_content"),
    ("vllm:Qwen/Qwen3-8B", "reasoning"),
    ("ollama:qwen3", "reasoning"),
    ("groq:openai/gpt-oss-120b", "reasoning"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("spec", "field"), PASS_BACK)
async def test_reasoning_goes_back_in_the_field_the_server_reads(
    wire: WireServer, make_model: Make, mode: str, spec: str, field: str
) -> None:
    thought = "The user wants Paris weather; call the tool."
    wire.queue(call_turn(mode, "call_r1", {field: thought}), answer_turn(mode))
    result = await run(Agent(make_model(spec), tools=[get_weather]), mode)
    assert result.text == "It is 18C."
    assistant = wire.requests[1].json["messages"][-2]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == "call_r1"
    assert assistant[field] == thought
    assert {"reasoning", "reasoning_content"} - {field} & assistant.keys() == set()


@pytest.mark.parametrize("mode", MODES)
async def test_openai_and_unknown_servers_never_get_reasoning_back(
    wire: WireServer, make_model: Make, mode: str
) -> None:
    wire.queue(call_turn(mode, "call_r1", {"reasoning_content": "thinking"}), answer_turn(mode))
    await run(Agent(make_model("openai:gpt-4.1-mini"), tools=[get_weather]), mode)
    assert {"reasoning", "reasoning_content"} & wire.requests[1].json["messages"][-2].keys() == set()


async def test_reasoning_of_another_server_is_not_sent(wire: WireServer, make_model: Make) -> None:
    wire.queue(call_turn("plain", "call_r1", {"reasoning": "vllm thoughts"}), answer_turn("plain"))
    first = await Agent(make_model("vllm:Qwen/Qwen3-8B"), tools=[get_weather]).run("Weather in Paris?")
    wire.queue(answer_turn("plain", "Same."))
    await Agent(make_model("deepseek:deepseek-v4-flash"), tools=[get_weather]).run("And now?", history=first.transcript)
    sent = wire.requests[-1].json["messages"]
    assert all({"reasoning", "reasoning_content"} & m.keys() == set() for m in sent)


def test_a_third_party_server_sets_its_quirks_as_provider_defaults(
    wire: WireServer, make_model: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooloop.models import registry

    monkeypatch.setattr(registry, "_PROVIDERS", dict(registry._PROVIDERS))
    registry.register_provider(
        "my-gateway",
        "tooloop.models.openai_chat:create",
        base_url="http://127.0.0.1:9/v1",
        api_key_optional=True,
        reasoning_field="reasoning_content",
        tool_id_max_length=16,
        max_tokens_field="max_completion_tokens",
    )
    model = make_model("my-gateway:m1")
    assert (model._request._reasoning_field, model._request._id_limit, model._request._max_tokens_field) == (
        "reasoning_content",
        16,
        "max_completion_tokens",
    )


# -- tool-call deltas without index and id ------------------------------------------------------


def no_index(name: str | None, arguments: str) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {"type": "function", "function": function}


async def test_calls_without_index_or_id_open_in_order_and_get_consistent_ids(
    wire: WireServer, make_model: Make
) -> None:
    # Early llama.cpp / older Ollama: no index, no id; a fragment with a name opens a call.
    wire.queue(
        stream(
            chunk({"tool_calls": [no_index("get_weather", '{"city": ')]}),
            chunk({"tool_calls": [no_index(None, '"Paris"}')]}),
            chunk({"tool_calls": [no_index("get_weather", '{"city": "Rome"}')]}),
            chunk({}, "tool_calls"),
        ),
        answer_turn("stream"),
    )
    result = await run(Agent(make_model("llamacpp:any"), tools=[get_weather]), "stream")
    assert result.text == "It is 18C."
    messages = wire.requests[1].json["messages"]
    calls = messages[-3]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ['{"city": "Paris"}', '{"city": "Rome"}']
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == 2 and all(re.fullmatch(r"call_[0-9a-f]{32}", i) for i in ids)
    assert [(m["tool_call_id"], m["content"]) for m in messages[-2:]] == [
        (ids[0], "18C in Paris"),
        (ids[1], "18C in Rome"),
    ]


async def test_a_fragment_with_neither_index_nor_name_continues_the_last_call(
    wire: WireServer, make_model: Make
) -> None:
    wire.queue(
        stream(
            chunk(
                {
                    "tool_calls": [
                        {"id": "call_x", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
                    ]
                }
            ),
            chunk({"tool_calls": [no_index(None, '{"city"')]}),
            chunk({"tool_calls": [no_index(None, ': "Oslo"}')]}),
            chunk({}, "tool_calls"),
        )
    )
    response = await make_model("ollama:qwen3").respond(ModelRequest([UserMessage("hi")]), lambda event: None)
    assert response.tool_calls == (ToolCall("call_x", "get_weather", '{"city": "Oslo"}'),)


# -- provider-issued ids go back unchanged -------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", ["vllm:Qwen/Qwen3-8B", "openrouter:x/y"])
async def test_a_long_id_goes_back_unchanged_to_the_server_that_made_it(
    wire: WireServer, make_model: Make, mode: str, spec: str
) -> None:
    wire.queue(call_turn(mode, LONG_ID), answer_turn(mode))
    await run(Agent(make_model(spec), tools=[get_weather]), mode)
    messages = wire.requests[1].json["messages"]
    assert messages[-2]["tool_calls"][0]["id"] == LONG_ID
    assert messages[-1]["tool_call_id"] == LONG_ID


async def test_a_long_id_is_rewritten_for_openai_consistently(wire: WireServer, make_model: Make) -> None:
    wire.queue(call_turn("plain", LONG_ID), answer_turn("plain"))
    first = await Agent(make_model("vllm:Qwen/Qwen3-8B"), tools=[get_weather]).run("Weather in Paris?")
    wire.queue(answer_turn("plain", "Same."))
    await Agent(make_model("openai:gpt-4.1-mini"), tools=[get_weather]).run("Again?", history=first.transcript)
    messages = wire.requests[-1].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    call_id = messages[1]["tool_calls"][0]["id"]
    assert call_id != LONG_ID and len(call_id) <= 40 and re.fullmatch(r"[a-zA-Z0-9_-]+", call_id)
    assert messages[2]["tool_call_id"] == call_id
