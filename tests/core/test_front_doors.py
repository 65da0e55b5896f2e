"""Three front doors onto one loop: run(), conversation() and stream() agree with each other."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import pickle
import threading

import pytest

from tooloop import (
    Agent,
    AssistantMessage,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelResponse,
    RunFinished,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallMessage,
    ToolCallStarted,
    Usage,
    UserMessage,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import normalised

LONG = "The answer is forty-two, and here is a long explanation of why that is so."


@tool
async def square(n: int) -> int:
    return n * n


def _agent() -> Agent:
    script = [
        ModelResponse(
            "Squaring.", [ToolCall("a", "square", {"n": 3}), ToolCall("b", "square", {"n": 4})], usage=Usage(10, 4)
        ),
        ModelResponse(LONG, usage=Usage(20, 15)),
    ]
    return Agent(ScriptedModel(script), tools=[square])


def test_run_sync() -> None:
    result = _agent().run_sync("go")
    assert result.text == LONG
    assert [c.result for c in result.tool_calls] == [9, 16]


async def test_run_sync_inside_a_running_loop_runs_on_a_worker_thread() -> None:
    # what a notebook cell does: its thread already runs an event loop
    caller = threading.get_ident()
    seen: list[int] = []

    def where(x: int) -> int:
        seen.append(threading.get_ident())
        return x + 1

    result = Agent(ScriptedModel([ModelResponse(tool_calls=[ToolCall("a", "where", {"x": 1})]), "done"]),
                   tools=[where]).run_sync("go")  # fmt: skip
    assert result.text == "done" and result.tool_calls[0].result == 2
    assert seen and seen[0] != caller
    again = _agent().run_sync("go", history=result.transcript)
    assert again.text == LONG


async def test_conversation_yields_each_message_and_ends_with_the_result() -> None:
    expected = await _agent().run("go")
    conversation = _agent().conversation("go")
    assert conversation.result is None
    first = await conversation.__anext__()
    assert first == UserMessage("go")
    second = await conversation.__anext__()
    assert isinstance(second, ToolCallMessage) and second.tool_call_id == "a" and second.result == 9
    rest = [m async for m in conversation]
    assert isinstance(rest[0], ToolCallMessage) and rest[0].tool_call_id == "b"
    assert rest[-1] == AssistantMessage(LONG)
    with pytest.raises(StopAsyncIteration):
        await conversation.__anext__()
    result = conversation.result
    assert result is not None
    assert [first, second, *rest] == list(result.new_messages)
    assert normalised(result.transcript) == normalised(expected.transcript)
    assert result.usage == expected.usage
    assert result.stop_reason is expected.stop_reason


async def test_conversation_runs_only_while_iterated() -> None:
    model = ScriptedModel(["one"])
    conversation = Agent(model).conversation("go")
    assert await conversation.__anext__() == UserMessage("go")
    assert model.requests == []
    await conversation.aclose()
    assert model.requests == []


async def test_conversation_yields_a_tool_call_only_after_it_ran() -> None:
    ran = asyncio.Event()

    @tool
    async def mark() -> str:
        ran.set()
        return "ok"

    conversation = Agent(
        ScriptedModel([ModelResponse(tool_calls=[ToolCall("m", "mark", {})]), "done"]), tools=[mark]
    ).conversation("go")
    async for message in conversation:
        if isinstance(message, ToolCallMessage):
            assert ran.is_set() and message.ok


async def test_stream_events() -> None:
    expected = await _agent().run("go")
    events = [e async for e in _agent().stream("go")]
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["message_added", "model_request_started"]
    assert kinds[-1] == "run_finished"

    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "Squaring." + LONG
    second_request = kinds.index("model_request_started", 2)
    answer_deltas = [e.text for e in events[second_request:] if isinstance(e, TextDelta)]
    assert len(answer_deltas) > 3
    assert "".join(answer_deltas) == LONG

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert sorted((e.tool_call_id, dict(e.arguments)["n"]) for e in started) == [("a", 3), ("b", 4)]
    assert sorted(e.message.result for e in finished) == [9, 16]
    for e in finished:
        assert kinds.index("tool_call_finished") > kinds.index("tool_call_started")
        assert e.message.ok

    requests = [e for e in events if isinstance(e, ModelRequestStarted)]
    responses = [e for e in events if isinstance(e, ModelRequestFinished)]
    assert [e.iteration for e in requests] == [1, 2]
    assert [e.usage for e in responses] == [Usage(10, 4, requests=1), Usage(30, 19, requests=2, tool_calls=2)]
    assert responses[1].response.text == LONG

    last = events[-1]
    assert isinstance(last, RunFinished)
    assert normalised(last.result.transcript) == normalised(expected.transcript)
    assert last.result.usage == expected.usage
    assert last.result.text == LONG


async def test_stream_errors_are_raised_to_the_consumer() -> None:
    model = ScriptedModel([RuntimeError("model exploded")])
    with pytest.raises(Exception, match="model exploded") as caught:
        async for _ in Agent(model).stream("go"):
            pass
    assert getattr(caught.value, "transcript", None) is not None


async def test_stream_closed_early_stops_the_run() -> None:
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        started.set()
        await asyncio.Event().wait()
        return ""

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("h", "hang", {})]), "never"])
    async with Agent(model, tools=[hang]).stream("go") as stream:
        async for event in stream:
            if isinstance(event, ToolCallStarted):
                break
    await asyncio.wait_for(started.wait(), 10)
    assert len(model.requests) == 1
    result = stream.result
    assert result is not None and result.stop_reason == "cancelled"
    assert result.tool_calls[0].status == "cancelled"


async def test_a_finished_stream_keeps_saying_it_is_finished() -> None:
    stream = _agent().stream("go")
    events = [e async for e in stream]
    assert isinstance(events[-1], RunFinished)
    for _ in range(2):
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
    assert stream.result is events[-1].result


async def test_a_failed_stream_raises_once_then_ends() -> None:
    stream = Agent(ScriptedModel([RuntimeError("model exploded")])).stream("go")
    with pytest.raises(Exception, match="model exploded"):
        async for _ in stream:
            pass
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()
    assert stream.result is None


async def test_many_concurrent_streams_each_see_their_own_events_in_order() -> None:
    gate = asyncio.Event()
    waiting = 0

    @tool
    async def echo(n: int) -> int:
        nonlocal waiting
        waiting += 1
        if waiting == 200:
            gate.set()
        await gate.wait()  # every stream is mid-run at once before any tool returns
        return n

    def script(n: int) -> ScriptedModel:
        return ScriptedModel([ModelResponse(tool_calls=[ToolCall(f"c{n}", "echo", {"n": n})]), f"answer {n}"])

    async def consume(n: int) -> list[object]:
        return [event async for event in Agent(script(n), tools=[echo]).stream(f"go {n}")]

    runs = await asyncio.wait_for(asyncio.gather(*(consume(n) for n in range(200))), 60)
    shape = [e.kind for e in runs[0]]  # type: ignore[attr-defined]
    assert shape[0] == "message_added" and shape[-1] == "run_finished"
    assert shape.index("tool_call_started") < shape.index("tool_call_finished")
    for n, events in enumerate(runs):
        assert [e.kind for e in events] == shape  # type: ignore[attr-defined]
        finished = [e for e in events if isinstance(e, ToolCallFinished)]
        assert [(e.message.tool_call_id, e.message.result) for e in finished] == [(f"c{n}", n)]
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        last = events[-1]
        assert isinstance(last, RunFinished) and last.result.text == text == f"answer {n}"


async def test_a_consumer_that_lags_or_gives_up_waiting_sees_every_event_once_in_order() -> None:
    @tool
    async def slow_square(n: int) -> int:
        await asyncio.sleep(0.05)
        return n * n

    def agent() -> Agent:
        script = [
            ModelResponse(
                "Squaring.", [ToolCall("a", "slow_square", {"n": 3}), ToolCall("b", "slow_square", {"n": 4})]
            ),
            ModelResponse(LONG),
        ]
        return Agent(ScriptedModel(script), tools=[slow_square])

    eager = [event async for event in agent().stream("go")]
    stream = agent().stream("go")
    lagging: list[object] = []
    gave_up = 0
    while True:
        try:
            event = await asyncio.wait_for(stream.__anext__(), 0.01)
        except TimeoutError:
            gave_up += 1  # the wait was cancelled; the events that come meanwhile still wait for us
            continue
        except StopAsyncIteration:
            break
        lagging.append(event)
        for _ in range(3):
            await asyncio.sleep(0)  # the run goes on meanwhile: events pile up for the next calls
    assert gave_up >= 2
    assert [type(e) for e in lagging] == [type(e) for e in eager]
    assert [_said(e) for e in lagging] == [_said(e) for e in eager]
    assert isinstance(lagging[-1], RunFinished) and stream.result is lagging[-1].result


def _said(event: object) -> object:
    if isinstance(event, TextDelta):
        return event.text
    if isinstance(event, ToolCallFinished):
        return (event.message.tool_call_id, event.message.result)
    return None


async def test_model_request_started_is_one_shared_value_per_iteration_that_copies_never_change() -> None:
    first = [e for e in [e async for e in _agent().stream("go")] if isinstance(e, ModelRequestStarted)]
    second = [e for e in [e async for e in _agent().stream("go")] if isinstance(e, ModelRequestStarted)]
    assert [e.iteration for e in first] == [1, 2]
    assert all(a is b for a, b in zip(first, second, strict=True))  # a waiting consumer keeps no object of its own

    copied, pickled = copy.deepcopy(first[0]), pickle.loads(pickle.dumps(first[1]))
    replaced = dataclasses.replace(first[0], iteration=9)
    assert (copied, pickled, replaced) == (ModelRequestStarted(1), ModelRequestStarted(2), ModelRequestStarted(9))
    assert [e.iteration for e in first] == [1, 2]  # the shared ones are untouched
    assert ModelRequestStarted(10**6) == ModelRequestStarted(10**6)


async def test_a_wait_cancelled_at_any_moment_loses_no_event_and_repeats_none() -> None:
    eager = [event async for event in _agent().stream("go")]
    stream = _agent().stream("go")
    taken: list[object] = []
    cancelled = 0
    for turn in itertools.count():
        # cancelled before it waits, while it waits, or after an event woke it but before it ran
        waiting = asyncio.ensure_future(stream.__anext__())
        for _ in range(turn % 4):
            await asyncio.sleep(0)
        waiting.cancel()
        try:
            taken.append(await waiting)
        except asyncio.CancelledError:
            cancelled += 1
        except StopAsyncIteration:
            break
    assert cancelled > 0
    assert [type(e) for e in taken] == [type(e) for e in eager]
    assert [_said(e) for e in taken] == [_said(e) for e in eager]
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


def _gated(release: asyncio.Event) -> Agent:
    """An agent whose one tool call waits for ``release``, then answers "done"."""

    @tool
    async def gate() -> str:
        await release.wait()
        return "open"

    return Agent(ScriptedModel([ModelResponse(tool_calls=[ToolCall("g", "gate", {})]), "done"]), tools=[gate])


async def test_a_second_task_waiting_for_the_same_stream_is_refused_and_the_first_still_gets_its_event() -> None:
    release = asyncio.Event()
    async with _gated(release).stream("go") as stream:
        async for event in stream:
            if isinstance(event, ToolCallStarted):
                break
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.01)  # the first waits: the run waits for the gate
        with pytest.raises(RuntimeError, match="already waiting"):
            await stream.__anext__()
        release.set()
        assert isinstance(await asyncio.wait_for(first, 5), ToolCallFinished)
        rest = [event async for event in stream]
    assert isinstance(rest[-1], RunFinished) and rest[-1].result.text == "done"


@pytest.mark.parametrize("turns", range(6))
async def test_a_wait_cancelled_just_as_its_event_arrives_keeps_the_event(turns: int) -> None:
    release = asyncio.Event()
    async with _gated(release).stream("go") as stream:
        async for event in stream:
            if isinstance(event, ToolCallStarted):
                break
        waiting = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.01)  # it waits for the gate
        release.set()
        for _ in range(turns):  # the call's events arrive, and wake the waiting task, at one of these
            await asyncio.sleep(0)
        waiting.cancel()
        try:
            got = [await waiting]
        except asyncio.CancelledError:
            got = []
        got += [event async for event in stream]
    assert [type(e) for e in got if isinstance(e, ToolCallFinished | RunFinished)] == [ToolCallFinished, RunFinished]
    assert isinstance(got[-1], RunFinished) and got[-1].result.text == "done"
