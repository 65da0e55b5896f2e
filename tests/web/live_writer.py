"""Another process writing a session while a page watches it: a slow tool call, then the answer.

The call's outcome is written only once the file ``go`` appears in the folder given: the page must
have shown the running call by then, however slow the machine (no window of time to catch it in).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tooloop.messages import AssistantMessage, ToolCallMessage, ToolCallStatus
from tooloop.store import open_store


async def main(url: str, session_id: str, pause: float, folder: Path) -> None:
    call = {"tool_name": "slow_tool", "tool_call_id": "w1", "arguments": {"n": 3}, "batch_id": "live-1"}
    async with open_store(url) as store:
        await asyncio.sleep(pause)
        await store.append(session_id, [ToolCallMessage(**call, status=ToolCallStatus.STARTED)])  # type: ignore[arg-type]
        while not (folder / "go").exists():
            await asyncio.sleep(0.02)
        await store.append(session_id, [ToolCallMessage(**call, content="slow result")])  # type: ignore[arg-type]
        await asyncio.sleep(pause / 2)
        await store.append(session_id, [AssistantMessage("All done: the slow tool said slow result.")])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])))
