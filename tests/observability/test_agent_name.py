"""``Agent(name=...)``: the name shows in traces, the CLI's header and the editor's agent info."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import acp
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.acp_agent.support import TIMEOUT, RecordingClient
from tooloop import Agent, ArgumentTypeError, ModelResponse, ToolCall
from tooloop.telemetry import OpenTelemetry
from tooloop.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", **extra}
    env.pop("TOOLOOP_CONFIG", None)
    return env


async def test_the_agents_name_names_its_run_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(ScriptedModel(["hi", "hi"]), name="triage", tracer=OpenTelemetry(provider))
    await agent.run("hello")
    (run,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert run.name == "invoke_agent triage"
    assert (run.attributes or {})["gen_ai.agent.name"] == "triage"
    # the tracer's own agent_name wins over the agent's
    exporter.clear()
    await Agent(ScriptedModel(["hi"]), name="triage", tracer=OpenTelemetry(provider, agent_name="desk")).run("x")
    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")] == ["invoke_agent desk"]


async def test_a_subagents_run_span_nests_under_its_call_and_keeps_its_own_name() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    grandchild = Agent(ScriptedModel(["low tide at six"]))  # nameless: named after its tool
    child = Agent(
        ScriptedModel([ModelResponse(tool_calls=(ToolCall("q1", "tables", {"prompt": "when?"}),)), "at six"]),
        name="scout",
        tools=[grandchild.as_tool(name="tables", description="Tide tables.")],
    )
    lead = Agent(
        ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "scout", {"prompt": "tides"}),)), "done"]),
        name="lead",
        tools=[child.as_tool(description="Scouts.")],
        tracer=OpenTelemetry(provider, agent_name="desk"),  # names the agent traced, not its subagents
    )
    assert (await lead.run("go")).transcript.final_text == "done"
    spans = {s.context.span_id: s for s in exporter.get_finished_spans()}

    def chain(name: str) -> list[str]:
        (span,) = [s for s in spans.values() if s.name == name]
        names = []
        while span is not None:
            names.append(span.name)
            span = spans.get(span.parent.span_id) if span.parent else None
        return names

    assert chain("invoke_agent tables") == [
        "invoke_agent tables",
        "execute_tool tables",
        "invoke_agent scout",
        "execute_tool scout",
        "invoke_agent desk",
    ]
    paths = {s.name: (s.attributes or {}).get("tooloop.subagent.path") for s in spans.values()}
    assert paths["invoke_agent scout"] == "c1" and paths["invoke_agent tables"] == "c1/q1"
    assert paths["invoke_agent desk"] is None
    assert (spans_named := [s for s in spans.values() if s.name == "invoke_agent scout"])
    assert (spans_named[0].attributes or {})["gen_ai.agent.name"] == "scout"


def test_the_name_is_kept_by_copies_shown_by_repr_and_checked() -> None:
    agent = Agent("test:echo", name="triage")
    assert agent.name == "triage" and agent.with_system("be brief").name == "triage"
    assert agent.with_name("desk").name == "desk" and Agent("test:echo").name is None
    assert repr(agent) == "Agent(name='triage', model='test:echo')"
    for bad in ("", "   ", 3):
        with pytest.raises(ArgumentTypeError, match="name"):
            Agent("test:echo", name=bad)  # type: ignore[arg-type]


def test_an_agent_of_the_config_file_is_named_after_its_table(tmp_path: Path) -> None:
    from tooloop import load_agent

    (tmp_path / "tooloop.toml").write_text('[agents.helper]\nmodel = "test:echo"\n')
    assert load_agent("helper", path=tmp_path / "tooloop.toml").name == "helper"


def test_the_cli_header_names_a_python_agent(tmp_path: Path) -> None:
    (tmp_path / "myagents.py").write_text("from tooloop import Agent\n\nhelper = Agent('test:echo', name='triage')\n")
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "tooloop",
            "run",
            "hello",
            "--agent",
            "myagents.py:helper",
            "--store",
            f"sqlite:///{tmp_path / 's.db'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "agent triage · model test:echo (agent myagents.py:helper)" in ran.stderr


async def test_the_editor_is_told_the_agents_name(tmp_path: Path) -> None:
    (tmp_path / "tooloop.toml").write_text('[agents.helper]\nmodel = "test:echo"\n')
    command = [sys.executable, "-m", "tooloop", "acp", "--agent", "helper"]
    async with acp.spawn_agent_process(RecordingClient(), *command, env=_env(), cwd=tmp_path) as (conn, _):
        answer = await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
    assert answer.agent_info is not None
    assert (answer.agent_info.name, answer.agent_info.title) == ("tooloop", "helper")
