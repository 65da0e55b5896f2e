"""OpenTelemetry spans, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tooloop import Agent, CancelToken, ModelRequest, ModelResponse, RunError, StopReason, ToolCall, Usage
from tooloop.telemetry import OpenTelemetry, instrument, uninstrument
from tooloop.testing import FunctionModel, ScriptedModel

SRC = Path(__file__).resolve().parents[2] / "src"


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sun"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def global_tracing() -> Iterator[None]:
    yield
    uninstrument()


def tree(spans: Sequence[ReadableSpan]) -> list[str]:
    """The spans as an indented outline, children in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in by_parent.get(parent, []):
            lines.append("  " * depth + span.name)
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def test_a_run_with_parallel_tools_makes_the_genai_span_tree(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    both_running = asyncio.Barrier(2)
    inner = provider.get_tracer("a tool's own code")

    async def fetch(url: str) -> str:
        """Fetch a page."""
        await asyncio.wait_for(both_running.wait(), 10)  # only passes when both calls run at once
        with inner.start_as_current_span(f"GET {url}"):
            return f"<html>{url}</html>"

    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[ToolCall("c1", "fetch", {"url": "a"}), ToolCall("c2", "fetch", {"url": "b"})],
                usage=Usage(100, 20),
                model="scripted-2025",
            ),
            ModelResponse("done", usage=Usage(150, 5)),
        ]
    )
    tracer = OpenTelemetry(provider, agent_name="researcher")
    result = await Agent(model, tools=[fetch], tracer=tracer).run("read a and b")
    assert result.text == "done"

    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent researcher",
        "  chat scripted",
        "  execute_tool fetch",
        "    GET a",
        "  execute_tool fetch",
        "    GET b",
        "  chat scripted",
    ]
    run = named(spans, "invoke_agent researcher")[0]
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "test",
        "gen_ai.request.model": "scripted",
        "gen_ai.agent.name": "researcher",
        "tooloop.run.id": run.attributes["tooloop.run.id"],  # type: ignore[index]
        "tooloop.tools": ("fetch",),
        "gen_ai.usage.input_tokens": 250,
        "gen_ai.usage.output_tokens": 25,
        "tooloop.usage.requests": 2,
        "tooloop.usage.tool_calls": 2,
        "tooloop.stop_reason": "end_turn",
    }
    first_chat = named(spans, "chat scripted")[0]
    assert dict(first_chat.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "test",
        "gen_ai.request.model": "scripted",
        "tooloop.iteration": 1,
        "gen_ai.response.model": "scripted-2025",
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
    }
    assert first_chat.kind is trace.SpanKind.CLIENT
    tools = named(spans, "execute_tool fetch")
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == ["c1", "c2"]  # type: ignore[index]
    assert all(s.attributes["tooloop.tool.status"] == "ok" for s in tools)  # type: ignore[index]
    assert all(s.attributes["gen_ai.operation.name"] == "execute_tool" for s in tools)  # type: ignore[index]
    pages = {s.name: s.parent.span_id for s in spans if s.name.startswith("GET")}  # type: ignore[union-attr]
    by_call = {s.attributes["gen_ai.tool.call.id"]: s.context.span_id for s in tools}  # type: ignore[index]
    assert pages == {"GET a": by_call["c1"], "GET b": by_call["c2"]}
    assert len({s.context.trace_id for s in spans}) == 1
    assert all(not s.events for s in spans)  # no contents unless asked


async def test_concurrent_runs_nest_under_their_own_callers(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    outer = provider.get_tracer("app")
    agent = Agent("test:echo", tools=[weather], tracer=OpenTelemetry(provider))

    async def handle(request: str) -> None:
        with outer.start_as_current_span(request):
            await agent.run(request)

    await asyncio.gather(handle("request A"), handle("request B"))
    spans = exporter.get_finished_spans()
    for name in ("request A", "request B"):
        root = named(spans, name)[0]
        mine = [s for s in spans if s.context.trace_id == root.context.trace_id]
        assert sorted(tree(mine)) == sorted(
            [name, "  invoke_agent", "    chat test:echo", "    execute_tool weather", "    chat test:echo"]
        )


async def test_errors_are_recorded_on_the_spans(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    def broken(x: int) -> int:
        """Always fails."""
        raise ValueError(f"cannot handle {x}")

    def model_fn(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return ModelResponse(tool_calls=[ToolCall("c1", "broken", {"x": 3})])
        raise ConnectionResetError("the provider hung up")

    with pytest.raises(RunError):
        await Agent(FunctionModel(model_fn), tools=[broken], tracer=OpenTelemetry(provider)).run("go")
    spans = exporter.get_finished_spans()
    tool = named(spans, "execute_tool broken")[0]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == "ValueError"  # type: ignore[index]
    assert tool.attributes["tooloop.tool.status"] == "error"  # type: ignore[index]
    assert [e.name for e in tool.events] == ["exception"]
    failed_chat = named(spans, "chat function")[1]
    assert failed_chat.status.status_code is StatusCode.ERROR
    assert failed_chat.attributes["error.type"] == "ConnectionResetError"  # type: ignore[index]
    run = named(spans, "invoke_agent")[0]
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "RunError"  # type: ignore[index]
    assert "tooloop.stop_reason" not in (run.attributes or {})


async def test_a_cancelled_run_ends_every_span(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    started = asyncio.Event()

    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    token = CancelToken()
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c1", "hang", {})])])
    run = asyncio.ensure_future(Agent(model, tools=[hang], tracer=OpenTelemetry(provider)).run("wait", cancel=token))
    await asyncio.wait_for(started.wait(), 10)
    token.cancel("enough")
    result = await asyncio.wait_for(run, 10)
    assert result.stop_reason is StopReason.CANCELLED
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_agent", "  chat scripted", "  execute_tool hang"]
    tool = named(spans, "execute_tool hang")[0]
    assert tool.attributes["tooloop.cancelled"] is True  # type: ignore[index]
    assert tool.status.status_code is StatusCode.UNSET
    assert named(spans, "invoke_agent")[0].attributes["tooloop.stop_reason"] == "cancelled"  # type: ignore[index]


async def test_contents_are_span_events_only_when_asked(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent("test:echo", tools=[weather], tracer=OpenTelemetry(provider, content=True))
    await agent.run("private question")
    spans = exporter.get_finished_spans()
    chat = named(spans, "chat test:echo")[0]
    sent, received = chat.events
    assert json.loads(sent.attributes["gen_ai.input.messages"]) == [  # type: ignore[index, arg-type]
        {"kind": "user", "text": "private question"}
    ]
    assert json.loads(received.attributes["gen_ai.output.messages"])["tool_calls"][0]["name"] == "weather"  # type: ignore[index, arg-type]
    tool = named(spans, "execute_tool weather")[0]
    assert [dict(e.attributes or {}) for e in tool.events] == [
        {"gen_ai.tool.call.arguments": '{"city": "text"}'},
        {"gen_ai.tool.call.result": "text: sun"},
    ]


async def test_instrument_traces_every_agent_until_uninstrumented(
    provider: TracerProvider, exporter: InMemorySpanExporter, global_tracing: None
) -> None:
    instrument(tracer_provider=provider)
    await Agent("test:echo").run("one")
    uninstrument()
    await Agent("test:echo").run("two")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat test:echo", "invoke_agent"]


def test_a_tracer_must_be_a_tracer() -> None:
    with pytest.raises(TypeError, match=r"Agent\(tracer=...\) got str"):
        Agent("test:echo", tracer="otel")  # type: ignore[arg-type]


def test_import_tooloop_and_its_telemetry_module_import_no_opentelemetry() -> None:
    code = (
        "import sys, tooloop, tooloop.telemetry\nprint(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(SRC)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
