"""Idempotent turns: a prompt whose turn id is already in the session is never written again."""

from __future__ import annotations

import asyncio

import pytest

from tooloop import (
    Agent,
    ArgumentValueError,
    ConflictError,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolCallMessage,
    UserMessage,
    tool,
)
from tooloop.store import open_store
from tooloop.testing import FunctionModel
from tooloop.transcript import Transcript


def answer_after_one_call(request: ModelRequest) -> ModelResponse:
    if isinstance(request.messages[-1], ToolCallMessage):
        return ModelResponse(f"done: {request.messages[-1].content}")
    prompt = request.messages[-1]
    assert isinstance(prompt, UserMessage)
    return ModelResponse(tool_calls=[ToolCall(f"c-{prompt.text}", "work", {"what": prompt.text})])


async def test_the_same_turn_submitted_twice_writes_its_prompt_once_and_returns_the_same_answer(
    store_url: str,
) -> None:
    ran: list[str] = []

    @tool
    def work(what: str) -> str:
        """Work."""
        ran.append(what)
        return what.upper()

    agent = Agent(FunctionModel(answer_after_one_call), tools=[work], store=store_url)
    first = await agent.run("a", session_id="s", turn_id="t1")
    again = await agent.run("a", session_id="s", turn_id="t1")

    assert again.text == first.text == "done: A"
    assert ran == ["a"]  # the finished turn did not run again, nor ask the model again
    assert again.usage.requests == 0
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [m for m in stored if isinstance(m, UserMessage)] == [UserMessage("a", "t1")]
    assert stored == first.transcript


async def test_an_interrupted_turn_submitted_again_continues_where_it_stands(store_url: str) -> None:
    async with open_store(store_url) as store:  # a worker died after the prompt was written
        await store.append("s", [UserMessage("b", "t2")])
    ran: list[str] = []

    @tool
    def work(what: str) -> str:
        """Work."""
        ran.append(what)
        return what

    agent = Agent(FunctionModel(answer_after_one_call), tools=[work], store=store_url)
    result = await agent.run("b", session_id="s", turn_id="t2")

    assert result.text == "done: b" and ran == ["b"]
    assert [type(m).__name__ for m in result.new_messages] == ["UserMessage", "ToolCallMessage", "AssistantMessage"]
    async with open_store(store_url) as store:
        assert [m for m in await store.load("s") if isinstance(m, UserMessage)] == [UserMessage("b", "t2")]


async def test_an_older_turn_submitted_after_newer_ones_returns_its_own_answer_and_writes_nothing(
    store_url: str,
) -> None:
    @tool
    def work(what: str) -> str:
        """Work."""
        return what

    agent = Agent(FunctionModel(answer_after_one_call), tools=[work], store=store_url)
    await agent.run("x", session_id="s", turn_id="t1")
    await agent.run("y", session_id="s", turn_id="t2")
    async with open_store(store_url) as store:
        before = await store.version("s")

    old = await agent.run("x", session_id="s", turn_id="t1")

    assert old.text == "done: x" and old.usage.requests == 0
    async with open_store(store_url) as store:
        assert await store.version("s") == before


async def test_turn_ids_survive_the_json_form() -> None:
    transcript = Transcript([UserMessage("hi", "turn-7"), UserMessage("plain")])
    assert Transcript.from_json(transcript.to_json()) == transcript
    assert "turn_id" not in transcript.to_dicts()[1]


@pytest.mark.parametrize("bad", ["", 5])
async def test_a_turn_id_must_be_a_non_empty_string(bad: object) -> None:
    agent = Agent(FunctionModel(lambda r: "x"))
    with pytest.raises(ArgumentValueError, match="turn_id"):
        await agent.run("hi", turn_id=bad)  # type: ignore[arg-type]


async def test_concurrent_submits_of_one_turn_write_one_prompt_and_one_answer(store_url: str) -> None:
    gate = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        await gate.wait()
        return "ok"

    agent = Agent(FunctionModel(slow), store=store_url)
    first = asyncio.create_task(agent.run("q", session_id="s", turn_id="t", raise_errors=False))
    await asyncio.sleep(0.2)
    second = asyncio.create_task(agent.run("q", session_id="s", turn_id="t", raise_errors=False))
    await asyncio.sleep(0.2)
    gate.set()
    results = await asyncio.gather(first, second)

    assert any(r.error is None and r.text == "ok" for r in results)
    assert all(r.error is None or isinstance(r.error, ConflictError) for r in results)  # the loser owns nothing
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [type(m).__name__ for m in stored] == ["UserMessage", "AssistantMessage"]
    assert stored[0] == UserMessage("q", "t")
