"""A real conversation with real tools, from Python: ask about this repository's source code.

Uses a real provider when one is configured (see ``pick_model``) and otherwise an offline model
that calls the same tools, so the example runs anywhere. It prints which one it used.
``scripts/demo.sh`` does the same from the command line (``tooloop run``).

    python examples/quickstart.py ["your question"]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from repo_tools import TOOLS, offline_answer

from tooloop import Agent, TextDelta, ToolCallFinished, get_model
from tooloop.testing import FunctionModel


def pick_model() -> tuple[object, str]:
    """A real provider when its key or base URL is set, else the offline model."""
    if os.environ.get("TOOLOOP_MODEL"):
        return os.environ["TOOLOOP_MODEL"], f"{os.environ['TOOLOOP_MODEL']} (from TOOLOOP_MODEL)"
    if os.environ.get("OLLAMA_HOST"):
        host = os.environ["OLLAMA_HOST"]
        url = (host if host.startswith("http") else f"http://{host}").rstrip("/") + "/v1"
        return get_model("ollama:qwen3", base_url=url), f"ollama:qwen3 at {url} (because OLLAMA_HOST is set)"
    for variable, spec in (
        ("OPENAI_API_KEY", "openai:gpt-4.1-mini"),
        ("ANTHROPIC_API_KEY", "anthropic:claude-sonnet-4-5"),
        ("GEMINI_API_KEY", "google:gemini-2.5-flash"),
        ("GOOGLE_API_KEY", "google:gemini-2.5-flash"),
    ):
        if os.environ.get(variable):
            return spec, f"{spec} (because {variable} is set)"
    return FunctionModel(offline_answer, name="offline"), (
        "the offline model (set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or TOOLOOP_MODEL for a real one)"
    )


async def main() -> None:
    question = sys.argv[1] if len(sys.argv) > 1 else "How big is tooloop's loop package, and which module is largest?"
    model, label = pick_model()
    print(f"model: {label}\n")
    agent = Agent(
        model,  # type: ignore[arg-type]
        system="You answer questions about a code repository. Use the tools; be brief.",
        tools=TOOLS,
    )
    print(f"> {question}")
    async with agent.stream(question) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolCallFinished):
                call = event.message
                arguments = json.dumps(dict(call.arguments))[:60]
                print(f"\n  [{call.tool_name}({arguments}) -> {call.status}: {call.content[:60]}]")
        result = events.result
    assert result is not None
    usage = result.usage
    print(f"\n\nstop reason: {result.stop_reason}, requests: {usage.requests}, tool calls: {usage.tool_calls}")


if __name__ == "__main__":
    asyncio.run(main())
