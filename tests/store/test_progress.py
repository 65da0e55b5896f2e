"""A running tool call's progress kept in the store for the session's viewers, on both backends."""

from __future__ import annotations

import asyncio
import time

from tooloop import Agent, ModelResponse, ToolCall, ToolContext, tool
from tooloop.messages import ToolCallMessage, ToolCallStatus, UserMessage
from tooloop.store import BaseStore, open_store
from tooloop.store.journal import PROGRESS_INTERVAL
from tooloop.testing import ScriptedModel


def call(status: ToolCallStatus, content: str = "") -> ToolCallMessage:
    return ToolCallMessage(tool_name="crunch", tool_call_id="c1", batch_id="b1", status=status, content=content)


async def test_a_running_calls_latest_progress_is_kept_and_its_outcome_clears_it(store: BaseStore) -> None:
    await store.append("s", [UserMessage("go"), call(ToolCallStatus.STARTED)])
    version, progressed = await store.activity("s")
    assert progressed is None

    await store.report_progress("s", "c1", 1, 4, "part 1")
    await store.report_progress("s", "c1", 3, 4, "part 3")
    [latest] = await store.progress("s")
    assert (latest.tool_call_id, latest.progress, latest.total, latest.message) == ("c1", 3.0, 4.0, "part 3")
    assert latest.reported_at is not None
    same_version, progressed = await store.activity("s")
    assert same_version == version and progressed is not None  # progress is not a write of the session

    await store.append("s", [call(ToolCallStatus.OK, "crunched")])
    assert await store.progress("s") == []
    await store.report_progress("s", "c1", 4, 4, "late")  # a report arriving after the outcome
    assert await store.progress("s") == []


async def test_progress_for_a_session_that_does_not_exist_is_ignored_and_delete_clears_it(store: BaseStore) -> None:
    await store.report_progress("ghost", "c1", 1, None, None)
    await store.append("s", [UserMessage("go"), call(ToolCallStatus.STARTED)])
    await store.report_progress("s", "c1", 0.5, None, None)
    [latest] = await store.progress("s")
    assert (latest.progress, latest.total, latest.message) == (0.5, None, None)
    await store.delete("s")
    await store.append("s", [UserMessage("again")])
    assert await store.progress("s") == [] and await store.progress("ghost") == []


async def test_a_run_writes_its_tools_progress_coalesced_and_leaves_none_behind(store_url: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    @tool
    async def crunch(context: ToolContext, parts: int) -> str:
        """Crunch some parts."""
        for part in range(1, parts + 1):
            context.report_progress(part, parts, f"part {part}")  # a burst: far more than a viewer needs
        async with open_store(store_url) as viewer:  # another connection, as a viewer would read it
            deadline = time.monotonic() + 20  # the first write that lands is what is checked, however late
            while not seen and time.monotonic() < deadline:
                await asyncio.sleep(PROGRESS_INTERVAL / 5)
                seen.extend((p.progress, p.total, p.message) for p in await viewer.progress("s"))
        return "crunched"

    model = ScriptedModel([ModelResponse("", [ToolCall("c1", "crunch", {"parts": 200})]), ModelResponse("done")])
    result = await Agent(model, tools=[crunch], store=store_url).run("crunch", session_id="s")
    assert result.text == "done"
    assert seen == [(200.0, 200.0, "part 200")]  # the latest report reached the store
    async with open_store(store_url) as store:
        assert await store.progress("s") == []  # the outcome cleared it
