"""Steering: user messages sent into a running run, delivered at safe boundaries, from tasks and threads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooloop import (
    Agent,
    ArgumentTypeError,
    ArgumentValueError,
    MessageAdded,
    ModelRequest,
    ModelResponse,
    RunFinished,
    StopReason,
    ToolCall,
    ToolCallMessage,
    UserMessage,
    tool,
)
from tooloop.store import open_store
from tooloop.testing import FunctionModel

from ._support import assert_valid


def batches_seen(request: ModelRequest) -> int:
    return len({m.batch_id for m in request.messages if isinstance(m, ToolCallMessage)})


def user_texts(messages: object) -> list[str]:
    return [m.text for m in messages if isinstance(m, UserMessage)]  # type: ignore[attr-defined]


def planner(sizes: list[int]) -> FunctionModel:
    """Asks for ``sizes[k]`` parallel calls in turn k, then answers with the user messages it saw."""

    def respond(request: ModelRequest) -> ModelResponse | str:
        done = batches_seen(request)
        if done < len(sizes):
            calls = tuple(ToolCall(f"t{done}c{i}", "work", {"n": i}) for i in range(sizes[done]))
            return ModelResponse(tool_calls=calls)
        return "saw: " + " | ".join(user_texts(request.messages))

    return FunctionModel(respond)


async def test_a_message_sent_during_a_parallel_batch_waits_for_every_result() -> None:
    holder: dict[str, object] = {}
    started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def work(n: int) -> int:
        """Work on n."""
        if n == 1:
            started.set()
            await release.wait()
        return n * 10

    model = planner([3])
    stream = Agent(model, tools=[work]).stream("do the work")
    holder["stream"] = stream
    events = []

    async def user() -> None:
        await started.wait()
        assert stream.steer("also check the logs")
        release.set()

    async with stream:
        typing = asyncio.create_task(user())
        async for event in stream:
            events.append(event)
        await typing
    result = stream.result
    assert result is not None and result.stop_reason is StopReason.END_TURN
    transcript = list(result.transcript)
    assert_valid(transcript)
    kinds = [type(m).__name__ for m in transcript]
    assert kinds == ["UserMessage", *["ToolCallMessage"] * 3, "UserMessage", "AssistantMessage"]
    assert transcript[4] == UserMessage("also check the logs")
    # the model saw it right after the batch's results, and answered it
    assert model.requests[1].messages[-1] == UserMessage("also check the logs")
    assert result.transcript.final_text == "saw: do the work | also check the logs"
    # visible on the stream, after every call of the batch finished
    added = [e.message for e in events if isinstance(e, MessageAdded)]
    assert added.index(UserMessage("also check the logs")) == 4


async def test_a_steered_message_is_journaled_where_the_model_saw_it(tmp_path: Path) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def work(n: int) -> int:
        """Work on n."""
        if n == 0:
            started.set()
            await release.wait()
        return n

    url = f"sqlite:///{tmp_path / 's.db'}"
    stream = Agent(planner([2]), tools=[work], store=url, session_id="steered").stream("do the work")

    async def user() -> None:
        await started.wait()
        assert stream.steer("and be quick")
        release.set()

    async with stream:
        typing = asyncio.create_task(user())
        async for _ in stream:
            pass
        await typing
    assert stream.result is not None
    async with open_store(url) as store:
        stored = list(await store.load("steered"))
    assert stored == list(stream.result.transcript)
    assert [type(m).__name__ for m in stored] == [
        "UserMessage",
        "ToolCallMessage",
        "ToolCallMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert stored[3] == UserMessage("and be quick")
    assert_valid(stored)


async def test_a_message_sent_while_the_final_answer_streams_starts_the_next_turn() -> None:
    box: dict[str, object] = {}

    def respond(request: ModelRequest) -> str:
        texts = user_texts(request.messages)
        if len(texts) == 1:
            conversation = box["conversation"]
            assert conversation.steer("and in French?")  # type: ignore[attr-defined]
            return "Hello"
        return "Bonjour"

    conversation = Agent(FunctionModel(respond)).conversation("Say hello")
    box["conversation"] = conversation
    seen = [message async for message in conversation]
    assert [getattr(m, "text", None) for m in seen] == ["Say hello", "Hello", "and in French?", "Bonjour"]
    assert conversation.result is not None and conversation.result.usage.requests == 2
    assert conversation.steer("too late") is False
    assert conversation.undelivered == ()


async def test_a_run_never_steered_refuses_messages_once_it_ended() -> None:
    # a run's inbox is made by the first message: without one, the end of the run still closes it
    conversation = Agent(FunctionModel(lambda r: "ok")).conversation("go")
    assert [getattr(m, "text", None) async for m in conversation] == ["go", "ok"]
    assert conversation.steer("too late") is False
    assert conversation.undelivered == ()


async def test_a_message_sent_before_the_run_starts_is_seen_by_its_first_request() -> None:
    seen: list[list[str]] = []

    def respond(request: ModelRequest) -> str:
        seen.append(user_texts(request.messages))
        return "ok"

    conversation = Agent(FunctionModel(respond)).conversation("go")
    assert conversation.steer("and quickly")
    assert [getattr(m, "text", None) async for m in conversation] == ["go", "and quickly", "ok"]
    assert seen == [["go", "and quickly"]]


async def test_from_another_thread_with_the_sync_stream() -> None:
    gate = threading.Event()

    def slow(n: int) -> int:
        """A sync tool running in a worker thread."""
        gate.wait(5)
        return n

    agent = Agent(planner([2]), tools=[tool(slow, name="work")])

    def drive() -> list[str]:
        with agent.stream_sync("go") as stream:
            sender = threading.Thread(target=lambda: (stream.steer("from a thread"), gate.set()))
            sender.start()
            for event in stream:
                if isinstance(event, RunFinished):
                    sender.join()
                    return user_texts(event.result.transcript)
        raise AssertionError("no RunFinished")

    assert await asyncio.to_thread(drive) == ["go", "from a thread"]


async def test_messages_a_stopped_run_never_delivered_are_handed_back() -> None:
    @tool(requires_approval=True)
    def work(n: int) -> int:
        """Needs a person's approval."""
        return n

    box: dict[str, object] = {}

    def respond(request: ModelRequest) -> ModelResponse:
        assert box["stream"].steer("are you done?")  # type: ignore[attr-defined]
        return ModelResponse(tool_calls=(ToolCall("c1", "work", {"n": 1}),))

    stream = Agent(FunctionModel(respond), tools=[work]).stream("go")
    box["stream"] = stream
    async with stream:
        async for _ in stream:
            pass
    assert stream.result is not None and stream.result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert stream.undelivered == ("are you done?",)
    assert "are you done?" not in user_texts(stream.result.transcript)


async def test_bad_steering_is_refused_where_given() -> None:
    stream = Agent(FunctionModel(lambda r: "ok")).stream("go")
    with pytest.raises(ArgumentTypeError, match="str"):
        stream.steer(42)  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match="empty"):
        stream.steer("  ")
    async with stream:
        async for _ in stream:
            pass


# ---------------------------------------------------------------- property: races with parallel batches

Steer = tuple[float, bool]  # (delay in ms, sent from a thread)


async def race(sizes: list[int], delays: list[float], steers: list[Steer]) -> None:
    @tool
    async def work(n: int) -> int:
        """Work that takes a little while."""
        await asyncio.sleep(delays[n % len(delays)] / 1000)
        return n

    model = planner(sizes)
    stream = Agent(model, tools=[work]).stream("start")
    accepted: list[str] = []
    lock = threading.Lock()

    def send(text: str) -> None:
        with lock:  # the order the user sent them in is the order they were accepted
            if stream.steer(text):
                accepted.append(text)

    async def user() -> None:
        for index, (delay, from_thread) in enumerate(steers):
            await asyncio.sleep(delay / 1000)
            if from_thread:
                thread = threading.Thread(target=send, args=(f"s{index}",))
                thread.start()
                thread.join()
            else:
                send(f"s{index}")

    async with stream:
        sender = asyncio.create_task(user())
        async for _ in stream:
            pass
        await sender
    result = stream.result
    assert result is not None
    transcript = list(result.transcript)
    assert_valid(transcript)  # every call has its result, batches are whole and adjacent
    delivered = user_texts(transcript)[1:]
    assert delivered + list(stream.undelivered) == accepted  # nothing lost, nothing twice, in order
    assert not stream.undelivered  # the run only ends on an answer with nothing waiting
    for position, message in enumerate(transcript):
        if isinstance(message, UserMessage) and position:
            before = transcript[position - 1]
            assert not isinstance(before, ToolCallMessage) or all(
                getattr(m, "batch_id", None) != before.batch_id for m in transcript[position + 1 :]
            )
    # the model saw every delivered message, in the transcript's order
    assert user_texts(model.requests[-1].messages) == ["start", *delivered]
    assert result.stop_reason is StopReason.END_TURN


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    delays=st.lists(st.floats(0, 3), min_size=1, max_size=4),
    steers=st.lists(st.tuples(st.floats(0, 4), st.booleans()), max_size=5),
)
def test_steering_racing_parallel_batches_never_leaves_a_call_without_its_result(
    sizes: list[int], delays: list[float], steers: list[Steer]
) -> None:
    asyncio.run(race(sizes, delays, steers))
