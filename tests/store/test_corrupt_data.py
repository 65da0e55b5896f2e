"""Damaged stored data is a ``CorruptDataError`` naming the session and position, and never hides
the healthy data around it."""

from __future__ import annotations

import pytest

from tooloop.errors import ArgumentValueError, CorruptDataError
from tooloop.messages import AssistantMessage, Usage, UserMessage
from tooloop.store import BaseStore
from tooloop.transcript import Transcript

from .conftest import execute_raw

CHAT = [UserMessage("hi"), AssistantMessage("hello"), UserMessage("bye"), AssistantMessage("see you")]


async def test_one_corrupt_usage_row_does_not_stop_listing_the_other_sessions(store: BaseStore, store_url: str) -> None:
    for session in ("a", "b", "c"):
        await store.append(session, CHAT)
        await store.set_metadata(session, usage=Usage(input_tokens=10, requests=1))
    execute_raw(store_url, "UPDATE tooloop_sessions SET usage = ? WHERE id = ?", ('{"input_tokens": "many"}', "b"))
    listed = {info.id: info for info in await store.list_sessions()}
    assert set(listed) == {"a", "b", "c"}
    assert listed["a"].usage == Usage(input_tokens=10, requests=1) and listed["a"].problem is None
    assert listed["b"].usage == Usage()
    assert listed["b"].problem is not None and "session 'b': usage cannot be read" in listed["b"].problem
    with pytest.raises(CorruptDataError, match="session 'b': usage cannot be read"):
        await store.get_session("b")


async def test_a_corrupt_message_names_its_position_and_keeps_the_messages_before_it(
    store: BaseStore, store_url: str
) -> None:
    await store.append("s", CHAT)
    execute_raw(
        store_url,
        "UPDATE tooloop_messages SET data = ? WHERE session_id = ? AND pos = ?",
        ('{"kind": "assistant", "text": "x", "refusal": 5}', "s", 3),
    )
    with pytest.raises(CorruptDataError, match=r"session 's': message 3 \(seq=3\) cannot be read.*refusal") as caught:
        await store.load("s")
    assert caught.value.transcript == Transcript(CHAT[:3])


@pytest.mark.parametrize("at", [5, -1, "2", True])
async def test_forking_outside_the_session_is_an_error_naming_the_position(store: BaseStore, at: object) -> None:
    await store.append("s", CHAT)
    with pytest.raises(ArgumentValueError, match=rf"fork\(at={at!r}\) is outside session 's', which has 4 messages"):
        await store.fork("s", at)  # type: ignore[arg-type]
    assert [info.id for info in await store.list_sessions()] == ["s"]
