"""Tool results with content parts (images, audio, resources) and tool progress events."""

from __future__ import annotations

import base64
from pathlib import Path

from tooloop import (
    Agent,
    AudioContent,
    EmbeddedResource,
    ImageContent,
    Limits,
    ModelResponse,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolCallProgress,
    ToolContext,
    ToolOutput,
    Transcript,
)
from tooloop.testing import ScriptedModel

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(92)).decode()
PARTS = (
    TextContent("Here is the chart."),
    ImageContent(PNG, "image/png"),
    AudioContent(base64.b64encode(bytes(30)).decode(), "audio/wav"),
    ResourceLink(uri="file:///tmp/report.csv", name="report.csv", mime_type="text/csv", description="raw data"),
    EmbeddedResource(uri="memo://1", mime_type="text/plain", text="remember the milk"),
    EmbeddedResource(uri="blob://2", mime_type="application/zip", blob=base64.b64encode(bytes(9)).decode()),
)


def chart() -> ToolOutput:
    """Draw the chart."""
    return ToolOutput(parts=PARTS, structured={"points": 3})


def call(name: str) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall("c1", name, {}),))


async def test_parts_are_kept_and_their_text_form_is_what_every_provider_can_take() -> None:
    result = await Agent(ScriptedModel([call("chart"), "done"]), tools=[chart]).run("go")
    (message,) = result.transcript.tool_invocations
    assert message.parts == PARTS
    assert message.result == {"points": 3}
    assert message.content == (
        "Here is the chart.\n"
        "[image: image/png, 100 bytes]\n"
        "[audio: audio/wav, 30 bytes]\n"
        "[resource link: report.csv <file:///tmp/report.csv> (text/csv): raw data]\n"
        "[resource <memo://1>]\nremember the milk\n"
        "[resource <blob://2>: application/zip, 9 bytes]"
    )


async def test_parts_survive_json_and_the_store(tmp_path: Path) -> None:
    result = await Agent(ScriptedModel([call("chart"), "done"]), tools=[chart]).run("go")
    assert Transcript.from_json(result.transcript.to_json()) == result.transcript
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    agent = Agent(ScriptedModel([call("chart"), "done", "again"]), tools=[chart], store=url)
    await agent.run("go", session_id="s1")
    second = await agent.run("more", session_id="s1")
    assert second.transcript.tool_invocations[0].parts == PARTS  # read back from the store


async def test_text_parts_are_cut_to_the_result_limit_like_the_text() -> None:
    def long() -> ToolOutput:
        return ToolOutput(parts=(TextContent("x" * 50), ImageContent(PNG, "image/png")))

    agent = Agent(ScriptedModel([call("long"), "ok"]), tools=[long], limits=Limits(max_tool_result_chars=10))
    (message,) = (await agent.run("go")).transcript.tool_invocations
    assert message.parts[0] == TextContent("x" * 10 + "\n[... truncated 40 characters ...]")
    assert message.parts[1] == ImageContent(PNG, "image/png")


async def test_a_tool_reports_progress_as_stream_events_from_a_thread_or_the_loop() -> None:
    def sync_work(context: ToolContext) -> str:
        for step in (1, 2):
            context.report_progress(step, 2, f"step {step}")
        return "done"

    async def async_work(context: ToolContext) -> str:
        context.report_progress(0.5)
        return "done"

    model = ScriptedModel(
        [ModelResponse(tool_calls=(ToolCall("a", "sync_work", {}), ToolCall("b", "async_work", {}))), "ok"]
    )
    events = [e async for e in Agent(model, tools=[sync_work, async_work]).stream("go")]
    progress = sorted(
        (e for e in events if isinstance(e, ToolCallProgress)), key=lambda e: (e.tool_call_id, e.progress)
    )
    assert progress == [
        ToolCallProgress("a", "sync_work", 1, 2, "step 1"),
        ToolCallProgress("a", "sync_work", 2, 2, "step 2"),
        ToolCallProgress("b", "async_work", 0.5),
    ]
