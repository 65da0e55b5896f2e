"""Another process running an agent whose tool reports progress, one step each time a file appears."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tooloop import Agent, ModelResponse, ToolCall, ToolContext, tool
from tooloop.testing import ScriptedModel


async def main(url: str, session_id: str, folder: Path) -> None:
    async def step(name: str) -> None:
        while not (folder / name).exists():
            await asyncio.sleep(0.02)

    @tool
    async def crunch(context: ToolContext, parts: int) -> str:
        """Crunch the parts one by one."""
        for part in range(1, parts + 1):
            await step(f"go-{part}")
            context.report_progress(part, parts, f"crunching part {part}")
        await step("go-done")
        return f"crunched {parts} parts"

    model = ScriptedModel([ModelResponse("", [ToolCall("c1", "crunch", {"parts": 3})]), ModelResponse("All crunched.")])
    await Agent(model, tools=[crunch], store=url).run("crunch three parts", session_id=session_id)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
