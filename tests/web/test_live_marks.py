"""The live mark of a session moves when a run this server started changes state, even when the
store does not: a run that ends after its last message was written still reaches the page."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tooloop.messages import UserMessage
from tooloop.store import open_store
from tooloop.web._live import Watchers


async def _marks_while_the_store_stands_still(url: str) -> list[str]:
    runs = {"s": "running"}
    async with open_store(url) as store:
        await store.append("s", [UserMessage("hello")])
        watchers = Watchers(store, interval=0.01, local=lambda sid: runs.get(sid, ""))
        changes = watchers.changes("s")
        try:
            first = await asyncio.wait_for(anext(changes), 5)
            runs["s"] = "finished"  # nothing is written: only the server's own run state moved
            second = await asyncio.wait_for(anext(changes), 5)
            runs.pop("s")
            third = await asyncio.wait_for(anext(changes), 5)
        finally:
            await changes.aclose()
            await watchers.close()
    return [first, second, third]


def test_a_run_ending_without_a_new_message_moves_the_live_mark(tmp_path: Path) -> None:
    first, second, third = asyncio.run(_marks_while_the_store_stands_still(f"sqlite:///{tmp_path}/s.db"))
    assert first == "1-running"
    assert second == "1-finished"
    assert third == "1"  # a session this server never ran keeps the store's mark alone
