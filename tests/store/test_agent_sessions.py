"""Agents on stored sessions: run(session_id=...), continuation, approvals across processes, forks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tooloop import (
    Agent,
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolCallStatus,
    UserMessage,
    tool,
)
from tooloop.context.policy import ContextPolicy
from tooloop.store import open_store
from tooloop.testing import FunctionModel, ScriptedModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_session_is_loaded_and_saved_by_id(store_url: str) -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c1", "add", {"a": 1, "b": 2})]), "It is 3.", "Still 3."])
    agent = Agent(model, tools=[add], store=store_url)

    first = await agent.run("add 1 and 2", session_id="s1")
    second = await agent.run("again?", session_id="s1")

    assert second.text == "Still 3."
    assert second.transcript[: len(first.transcript)] == first.transcript
    assert [m.text for m in model.requests[2].messages if isinstance(m, UserMessage)] == ["add 1 and 2", "again?"]
    async with open_store(store_url) as store:
        assert await store.load("s1") == second.transcript
        info = await store.get_session("s1")
        assert info.message_count == len(second.transcript)


async def test_a_pending_approval_survives_the_process_and_resumes_with_the_decision(store_url: str) -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    script = [ModelResponse(tool_calls=[ToolCall("d1", "delete", {"path": "a.txt"})]), "Done."]
    paused = await Agent(ScriptedModel(script[:1]), tools=[delete], store=store_url).run("clean", session_id="s")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED and ran == []
    request = paused.pending_approvals[0]

    # A new agent (as in a new process) knows nothing but the session id and the stored decision.
    decision = request.approve()
    resumed = await Agent(ScriptedModel(script[1:]), tools=[delete], store=store_url).resume("s", approvals=[decision])

    assert ran == ["a.txt"]
    assert resumed.text == "Done."
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [c.status for c in stored.tool_invocations] == [ToolCallStatus.OK]


async def test_a_session_can_be_forked_and_each_branch_continues_alone(store_url: str) -> None:
    agent = Agent(ScriptedModel(["one", "two", "three"]), store=store_url)
    await agent.run("first", session_id="trunk")
    await agent.run("second", session_id="trunk")
    async with open_store(store_url) as store:
        branch = await store.fork("trunk", at=2, new_session_id="branch")
    result = await agent.run("other second", session_id=branch)
    assert [m.text for m in result.transcript if isinstance(m, UserMessage)] == ["first", "other second"]
    async with open_store(store_url) as store:
        assert len(await store.load("trunk")) == 4


async def test_a_session_id_without_a_store_uses_the_default_sqlite_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'default.db'}"
    monkeypatch.setenv("TOOLOOP_STORE", url)
    await Agent(ScriptedModel(["hello"])).run("hi", session_id="x")
    async with open_store(url) as store:
        assert (await store.load("x")).final_text == "hello"


async def test_a_stored_session_sends_a_pruned_history_but_keeps_everything(tmp_path: Path) -> None:
    sent: list[int] = []

    def model(request: ModelRequest) -> ModelResponse:
        sent.append(len(request.messages))
        return ModelResponse("x" * 400)

    url = f"sqlite:///{tmp_path / 's.db'}"
    agent = Agent(FunctionModel(model), store=url, context=ContextPolicy(max_tokens=400))
    for i in range(8):
        await agent.run(f"question {i}", session_id="long")
    async with open_store(url) as store:
        assert len(await store.load("long")) == 16  # the store keeps everything
    assert max(sent) < 15  # what was sent was pruned


async def test_a_store_without_a_session_id_is_a_configuration_error(tmp_path: Path) -> None:
    from tooloop import ConfigurationError

    with pytest.raises(ConfigurationError, match="session id"):
        await Agent(ScriptedModel(["x"]), store=f"sqlite:///{tmp_path / 'x.db'}").run("hi")


async def test_context_length_exceeded_prunes_with_the_policy_and_retries_once() -> None:
    from tooloop import ContextLengthError
    from tooloop.messages import Message

    history: list[Message] = []
    for i in range(10):
        history += [UserMessage(f"old question {i} " * 20), AssistantMessage(f"old answer {i} " * 20)]
    sizes: list[int] = []

    def model(request: ModelRequest) -> ModelResponse:
        sizes.append(len(request.messages))
        if len(request.messages) > 10:
            raise ContextLengthError("prompt is too long", status_code=400)
        return ModelResponse("short enough now")

    agent = Agent(FunctionModel(model), context=ContextPolicy(max_tokens=1_000_000))
    result = await agent.run("new question", history=history)

    assert result.text == "short enough now"
    assert sizes[0] == 21 and sizes[1] <= 10  # the first request overflowed; the retry was pruned
    assert len(result.transcript) == 22  # the transcript itself keeps everything
    assert result.transcript[-2] == UserMessage("new question")


async def test_a_second_context_length_error_is_raised_with_the_transcript() -> None:
    from tooloop import ContextLengthError

    def model(request: ModelRequest) -> ModelResponse:
        raise ContextLengthError("prompt is too long", status_code=400)

    agent = Agent(FunctionModel(model), context=ContextPolicy(max_tokens=1_000_000))
    with pytest.raises(ContextLengthError) as caught:
        await agent.run("hello")
    assert list(caught.value.transcript or ()) == [UserMessage("hello")]


async def test_a_session_keeps_its_title_model_and_usage_totals(store_url: str) -> None:
    from tooloop import Usage

    replies = [ModelResponse("first", usage=Usage(input_tokens=10, output_tokens=2)), ModelResponse("second")]
    agent = Agent(ScriptedModel(replies, name="claude-haiku-4-5"), store=store_url)
    await agent.run("Plan a trip   to\nLisbon in May", session_id="meta")
    await agent.run("and back?", session_id="meta")
    async with open_store(store_url) as store:
        info = await store.get_session("meta")
    assert info.title == "Plan a trip to Lisbon in May"
    assert info.model == "claude-haiku-4-5"
    assert (info.usage.input_tokens, info.usage.output_tokens, info.usage.requests) == (10, 2, 2)


async def test_resuming_claims_the_interrupted_batch_so_a_second_resumer_of_the_same_state_loses(
    store_url: str,
) -> None:
    """Two workers that loaded the same interrupted session: the first to re-record the batch
    (a conditional write that always moves the version) wins; the other gets ConflictError
    before it runs anything."""
    from tooloop import ConflictError, ToolCallMessage

    started = ToolCallMessage(
        tool_name="pay", tool_call_id="c1", arguments={"amount": 5}, status=ToolCallStatus.STARTED, batch_id="b"
    )
    async with open_store(store_url) as store:
        version = await store.append("s", [UserMessage("pay 5"), started])
        claimed = await store.append("s", [started], expected_version=version)  # worker A re-records it
        assert claimed > version
        with pytest.raises(ConflictError):
            await store.append("s", [started], expected_version=version)  # worker B, same loaded state
        assert [m.status for m in (await store.load("s")).tool_invocations] == [ToolCallStatus.STARTED]


async def test_a_hook_that_stops_the_run_in_a_resumed_batch_stops_it_before_the_model_is_asked(
    store_url: str,
) -> None:
    from tooloop import Hooks, LoopControl, StepContext, ToolCallMessage

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    def stop_after_paying(context: StepContext) -> LoopControl:
        return LoopControl.stop()

    async with open_store(store_url) as store:
        started = ToolCallMessage(
            tool_name="pay", tool_call_id="c1", arguments={"amount": 5}, status=ToolCallStatus.STARTED, batch_id="b"
        )
        await store.append("s", [UserMessage("pay 5"), started])
    model = ScriptedModel(["must not be asked"])
    agent = Agent(model, tools=[pay], store=store_url, hooks=Hooks(after_tool_call=stop_after_paying))
    result = await agent.resume("s")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert model.requests == []
    assert [c.status for c in result.transcript.tool_invocations] == [ToolCallStatus.OK]


async def test_a_new_prompt_never_runs_interrupted_calls_again_and_closes_them_as_interrupted(store_url: str) -> None:
    from tooloop import Hooks, StepContext, ToolCallFinished, ToolCallMessage

    paid: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    started = ToolCallMessage(
        tool_name="pay", tool_call_id="c1", arguments={"amount": 5}, status=ToolCallStatus.STARTED, batch_id="b"
    )
    async with open_store(store_url) as store:
        await store.append("s", [UserMessage("pay 5"), started])
    after: list[str] = []

    def watch(context: StepContext) -> None:
        assert context.result is not None
        after.append(context.result.tool_call_id)

    model = ScriptedModel(["It is sunny."])
    agent = Agent(model, tools=[pay], store=store_url, hooks=Hooks(after_tool_call=watch))
    finished = []
    async with agent.stream("what is the weather?", session_id="s") as events:
        async for event in events:
            if isinstance(event, ToolCallFinished):
                finished.append(event.message)

    assert paid == []  # the side effect is never repeated without being asked
    (closed,) = finished
    assert closed.status is ToolCallStatus.ERROR and "not run again" in closed.content
    assert after == ["c1"]
    sent = model.requests[0].messages
    assert [m.kind for m in sent] == ["user", "tool_call", "user"]
    assert "interrupted" in sent[1].content and "not run again" in sent[1].content
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert [m.kind for m in stored] == ["user", "tool_call", "user", "assistant"]
    assert stored.tool_invocations[0].status is ToolCallStatus.ERROR
    assert "not run again" in stored.tool_invocations[0].content

    # an explicit continuation is the only way to run it again: resume() on a fresh interruption
    async with open_store(store_url) as store:
        await store.append("s2", [UserMessage("pay 7"), replace(started, arguments={"amount": 7})])
    await Agent(ScriptedModel(["Paid."]), tools=[pay], store=store_url).resume("s2")
    assert paid == [7]


async def test_a_new_prompt_on_a_history_whose_last_batch_was_interrupted_does_not_run_it_again() -> None:
    from tooloop import ToolCallMessage

    paid: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    history = [
        UserMessage("pay 5"),
        ToolCallMessage(tool_name="pay", tool_call_id="c1", arguments={"amount": 5}, status=ToolCallStatus.STARTED),
    ]
    agent = Agent(ScriptedModel(["ok", "Paid."]), tools=[pay])
    result = await agent.run("something else", history=history)
    assert paid == []
    assert "not run again" in result.transcript[1].content
    assert result.tool_calls[0].status is ToolCallStatus.ERROR
    continued = await agent.run(None, history=history)  # the explicit continuation runs it
    assert paid == [5] and continued.tool_calls[0].status is ToolCallStatus.OK


async def test_a_run_that_loses_a_conflict_leaves_its_prompt_the_winner_built_on(store_url: str) -> None:
    """Run A writes its prompt, run B starts on the session meanwhile and finishes first: A's next
    write loses. B's model was sent A's prompt, so it stays: the session is what B answered."""
    import asyncio

    from tooloop import ConflictError, Usage

    async with open_store(store_url) as store:
        await store.append("s", [UserMessage("hello"), AssistantMessage("hi")])
    asked, answer = asyncio.Event(), asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        asked.set()
        await answer.wait()
        return ModelResponse("answer A", usage=Usage(input_tokens=5))

    loser = asyncio.ensure_future(Agent(FunctionModel(slow), store=store_url).run("question A", session_id="s"))
    await asyncio.wait_for(asked.wait(), 30)
    b_model = ScriptedModel(["answer B"])
    winner = await Agent(b_model, store=store_url).run("question B", session_id="s")
    assert winner.text == "answer B"
    answer.set()
    with pytest.raises(ConflictError) as lost:
        await loser
    assert lost.value.usage is not None and lost.value.usage.input_tokens == 5  # what A paid is on the error

    async with open_store(store_url) as store:
        stored = await store.load("s")
        info = await store.get_session("s")
    seen_by_b = [(m.kind, m.text) for m in b_model.requests[0].messages]  # type: ignore[union-attr]
    assert [(m.kind, m.text) for m in stored] == [*seen_by_b, ("assistant", "answer B")]  # type: ignore[union-attr]
    assert ("user", "question A") in seen_by_b
    assert info.message_count == 5 and info.usage.input_tokens == 0  # A's answer never came in, nor its usage
    assert winner.transcript == stored
