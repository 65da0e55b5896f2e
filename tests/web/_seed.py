"""Sessions for the web tests, written through the real store and the real loop (``test:echo``)."""

from __future__ import annotations

from decimal import Decimal

from tooloop import Agent, tool
from tooloop.messages import (
    AssistantMessage,
    StopReason,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from tooloop.store import open_store

HOSTILE = "<script>window.pwned = 1; alert('pwned')</script>"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def seed(url: str) -> None:
    """A handful of sessions: a real run, a cut one, one with errors, a hostile one."""
    async with open_store(url) as store:
        agent = Agent("test:echo", tools=[add], store=store)
        await agent.run("What is **two plus three**? Use the tool.", session_id="sum")
        await store.append(
            "essay",
            [
                UserMessage("Write an essay about lighthouses"),
                AssistantMessage(
                    "Lighthouses stand on the coast",
                    stop_reason=StopReason.MAX_TOKENS,
                    model="test:big",
                    thinking=(ThinkingPart("The user wants an essay; plan three parts."),),
                ),
            ],
        )
        await store.set_metadata(
            "essay",
            title="Lighthouse essay",
            model="test:big",
            usage=Usage(input_tokens=900, output_tokens=4000, requests=1, cost=Decimal("0.0420")),
        )
        await store.append(
            "broken",
            [
                UserMessage("fetch the report"),
                ToolCallMessage(
                    tool_name="fetch",
                    tool_call_id="f1",
                    arguments={"url": "https://example.org/report"},
                    status=ToolCallStatus.ERROR,
                    content="connection refused",
                    error_type="ConnectionError",
                    batch_id="r1",
                ),
                AssistantMessage("The report could not be fetched."),
            ],
        )
        await store.set_metadata("broken", usage=Usage(input_tokens=50, output_tokens=20, requests=2, tool_calls=1))
        await store.append(
            "hostile",
            [
                UserMessage(f"Summarise this page {HOSTILE}"),
                ToolCallMessage(
                    tool_name="read_page",
                    tool_call_id="h1",
                    arguments={"url": "javascript:alert(1)", "note": "<img src=x onerror=alert(2)>"},
                    content=f"<html>{HOSTILE}<img src=x onerror=\"alert('img')\"></html>",
                    batch_id="r1",
                ),
                AssistantMessage(f"[click me](javascript:alert(3)) and {HOSTILE}"),
            ],
        )
        await store.set_metadata("hostile", title=f"Hostile {HOSTILE}")
