"""Another process writing a session while a page watches it: a slow tool call, then the answer."""

from __future__ import annotations

import asyncio
import sys

from tooloop.messages import AssistantMessage, ToolCallMessage, ToolCallStatus
from tooloop.store import open_store


async def main(url: str, session_id: str, pause: float) -> None:
    call = {"tool_name": "slow_tool", "tool_call_id": "w1", "arguments": {"n": 3}, "batch_id": "live-1"}
    async with open_store(url) as store:
        await asyncio.sleep(pause)
        await store.append(session_id, [ToolCallMessage(**call, status=ToolCallStatus.STARTED)])  # type: ignore[arg-type]
        await asyncio.sleep(pause)
        await store.append(session_id, [ToolCallMessage(**call, content="slow result")])  # type: ignore[arg-type]
        await asyncio.sleep(pause / 2)
        await store.append(session_id, [AssistantMessage("All done: the slow tool said slow result.")])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
