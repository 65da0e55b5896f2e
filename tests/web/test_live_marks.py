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


async def _a_second_page_on_a_watched_session(url: str) -> tuple[str, str]:
    async with open_store(url) as store:
        await store.append("s", [UserMessage("hello")])
        watchers = Watchers(store, interval=0.01)
        first = watchers.changes("s")
        try:
            seen_first = await asyncio.wait_for(anext(first), 5)
            second = watchers.changes("s")  # joins the watch the first page keeps going
            try:
                seen_second = await asyncio.wait_for(anext(second), 5)
            finally:
                await second.aclose()
        finally:
            await first.aclose()
            await watchers.close()
    return seen_first, seen_second


def test_a_page_joining_a_watched_session_gets_its_mark_at_once(tmp_path: Path) -> None:
    """A page that replaces another (a form's redirect) may connect before the old one is gone: it
    must learn the mark now, not at the next change, which may never come."""
    first, second = asyncio.run(_a_second_page_on_a_watched_session(f"sqlite:///{tmp_path}/s.db"))
    assert first == second == "1"
