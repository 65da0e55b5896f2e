"""A run cancelled and resumed at once, in one process: the call the cancel cut never runs twice."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import pytest

from tooloop import Agent, CancelToken, ModelRequest, ModelResponse, ToolCall, ToolCallMessage, ToolCallStatus, tool
from tooloop.store import SessionInfo, Store, open_store
from tooloop.testing import FunctionModel
from tooloop.transcript import Transcript


def _note(effects: Path, order: str) -> int:
    """Log one execution of ``order``; how many times it has run."""
    with effects.open("a") as log:
        log.write(order + "\n")
    return effects.read_text().splitlines().count(order)


async def _tidy_up() -> None:
    await asyncio.sleep(0.05)  # a tool that tidies up when it is cut, as real ones do


def _agent(store: Store | str, effects: Path, tidy_up: Callable[[], Awaitable[None]] = _tidy_up) -> Agent:
    @tool
    async def pay(order: str) -> str:
        """Pay an order (a side effect counted outside the run).

        Args:
            order: The order.
        """
        if _note(effects, order) > 1:
            return "paid again"  # the bug: it ran a second time (do not wait for a cancel then)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await tidy_up()
            raise
        return "paid"

    def script(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolCallMessage) for m in request.messages):
            return ModelResponse("done")
        order = request.messages[-1].text.split()[-1]  # type: ignore[union-attr]
        return ModelResponse(tool_calls=[ToolCall("c1", "pay", {"order": order})])

    return Agent(FunctionModel(script), tools=[pay], store=store)


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_run_resumed_right_after_its_cancel_never_runs_the_cut_call_again(
    store_url: str, tmp_path: Path, how: Literal["token", "task"]
) -> None:
    effects = tmp_path / "effects"
    agent = _agent(store_url, effects)
    for attempt in range(3):
        session = f"s{attempt}"
        token = CancelToken()
        first = asyncio.create_task(agent.run(f"pay order o-{attempt}", session_id=session, cancel=token))
        while not effects.exists() or f"o-{attempt}" not in effects.read_text().split():
            await asyncio.sleep(0.005)
        if how == "token":
            token.cancel()
        else:
            first.cancel()
        resumed = await asyncio.wait_for(agent.resume(session), 20)  # at once: the cancelled run still writes
        assert resumed.text == "done"
        await asyncio.gather(first, return_exceptions=True)
        assert effects.read_text().splitlines() == [f"o-{i}" for i in range(attempt + 1)]  # each call ran once
        async with open_store(store_url) as store:
            calls = (await store.load(session)).tool_invocations
        assert [c.status for c in calls] == [ToolCallStatus.CANCELLED]


async def test_a_resume_whose_read_spans_the_cancelled_runs_last_write_continues_without_a_conflict(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resumed run reads the session's version, then the cancelled run records the cut call and
    closes, then the resumed run reads the messages: what it continues from is one version."""
    effects = tmp_path / "effects"
    version_read, first_closed = asyncio.Event(), asyncio.Event()
    async with open_store(store_url) as store:
        read_version, read_messages = store.get_session, store.load
        resuming = False

        async def get_session(session_id: str) -> SessionInfo:
            info = await read_version(session_id)
            if resuming:
                version_read.set()
            return info

        async def load(session_id: str) -> Transcript:
            if resuming:
                await asyncio.wait_for(first_closed.wait(), 20)  # the cancelled run writes and closes meanwhile
            return await read_messages(session_id)

        monkeypatch.setattr(store, "get_session", get_session)
        monkeypatch.setattr(store, "load", load)
        agent = _agent(store, effects, tidy_up=version_read.wait)  # the cut is recorded after that read
        token = CancelToken()
        first = asyncio.create_task(agent.run("pay order o-1", session_id="s", cancel=token))
        first.add_done_callback(lambda _: first_closed.set())
        while not effects.exists():
            await asyncio.sleep(0.005)
        token.cancel()
        resuming = True
        resumed = await asyncio.wait_for(agent.resume("s"), 20)
        assert resumed.text == "done"
        assert (await first).stop_reason.value == "cancelled"
        assert effects.read_text().splitlines() == ["o-1"]
        calls = (await read_messages("s")).tool_invocations
        assert [c.status for c in calls] == [ToolCallStatus.CANCELLED]
