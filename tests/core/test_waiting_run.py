"""What a run keeps while it waits for the model: at thousands of concurrent runs each coroutine
it sits under is an object the garbage collector scans, and a frame every wakeup passes through."""

from __future__ import annotations

import asyncio
from typing import Any

from tooloop import Agent, Limits, ModelRequest, ModelResponse, ToolCall, tool
from tooloop.events import EventHandler


@tool
def add(a: int, b: int) -> int:
    return a + b


class _Held:
    """A model that answers each request only when the test lets it (a call first, then text)."""

    name = "held"

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()
        self.requests = 0

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        self.requests += 1
        self.asked.set()
        await self.answer.wait()
        self.answer.clear()
        if self.requests == 1:
            return ModelResponse(tool_calls=(ToolCall("c1", "add", {"a": 1, "b": 2}),))
        return ModelResponse("3")


def _loop_coroutines(task: asyncio.Task[Any]) -> list[str]:
    """The tooloop coroutines ``task`` waits under, outermost first (the model's own excluded)."""
    names = []
    coroutine: Any = task.get_coro()
    while coroutine is not None and hasattr(coroutine, "cr_code"):
        if coroutine.cr_frame.f_globals.get("__name__", "").startswith("tooloop."):
            names.append(coroutine.__qualname__)
        coroutine = coroutine.cr_await
    return names


async def _waits(agent: Agent, model: _Held) -> tuple[list[str], list[str]]:
    task = asyncio.ensure_future(agent.run("add"))
    seen = []
    for _ in range(2):  # the first request, then the second one after the tool call
        await asyncio.wait_for(model.asked.wait(), 10)
        model.asked.clear()
        seen.append(_loop_coroutines(task))
        model.answer.set()
    result = await asyncio.wait_for(task, 10)
    assert result.text == "3"
    return seen[0], seen[1]


async def test_a_waiting_run_sits_under_three_loop_coroutines_at_every_request() -> None:
    model = _Held()
    first, second = await _waits(Agent(model, tools=[add]), model)
    assert first == second == ["Agent.run", "Run.finish", "Run._step"]


async def test_a_run_with_a_time_limit_waits_under_its_deadline_scope_only_as_well() -> None:
    model = _Held()
    first, second = await _waits(Agent(model, tools=[add], limits=Limits(timeout=30)), model)
    assert first == second == ["Agent.run", "Run.finish", "Run._step"]
