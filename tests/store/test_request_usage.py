"""Each request's usage, response id and stop sequence, stored with the messages it produced."""

from __future__ import annotations

from decimal import Decimal

from tests.store.conftest import execute_raw
from tooloop import Agent, AssistantMessage, ModelResponse, ToolCall, ToolCallMessage, Usage, UserMessage, tool
from tooloop.store import open_store
from tooloop.testing import ScriptedModel


@tool
def look(path: str) -> str:
    """Look at a file."""
    return f"saw {path}"


async def test_each_requests_usage_is_stored_with_its_messages(store_url: str) -> None:
    model = ScriptedModel(
        [
            ModelResponse(
                "",
                [ToolCall("c1", "look", {"path": "a"})],
                usage=Usage(100, 5, cost=Decimal("0.001")),
                response_id="r1",
            ),
            ModelResponse("seen", usage=Usage(150, 9, cost=Decimal("0.0025")), response_id="r2", stop_sequence="STOP"),
        ]
    )
    await Agent(model, tools=[look], store=store_url).run("look at a", session_id="s")
    async with open_store(store_url) as store:
        _, call, answer = await store.load("s")
        info = await store.get_session("s")
        exported = await store.export("s")
    assert isinstance(call, ToolCallMessage) and isinstance(answer, AssistantMessage)
    assert (call.response_id, call.usage) == ("r1", Usage(100, 5, requests=1, cost=Decimal("0.001")))
    assert (answer.response_id, answer.stop_sequence) == ("r2", "STOP")
    assert answer.usage == Usage(150, 9, requests=1, cost=Decimal("0.0025"))
    assert call.usage.cost + answer.usage.cost == info.usage.cost  # type: ignore[union-attr, operator]
    assert exported["messages"][2]["usage"]["cost"] == "0.0025"


async def test_messages_stored_before_per_request_usage_still_load(store_url: str) -> None:
    async with open_store(store_url) as store:
        await store.append("s", [UserMessage("hi")])
    old_answer = '{"kind":"assistant","text":"hello","model":"m"}'  # as tooloop wrote answers before
    execute_raw(
        store_url,
        "INSERT INTO tooloop_messages (session_id, seq, pos, tool_call_id, status, format, data) "
        "VALUES ('s', 1, 1, NULL, NULL, 1, ?)",
        (old_answer,),
    )
    async with open_store(store_url) as store:
        _, answer = await store.load("s")
    assert answer == AssistantMessage("hello", model="m")
    assert isinstance(answer, AssistantMessage) and answer.usage is None and answer.response_id is None
