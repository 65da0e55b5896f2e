"""``Transcript.render()``: a readable conversation, plain and rich."""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console

from tooloop import (
    AssistantMessage,
    StopReason,
    SystemMessage,
    ToolCallMessage,
    ToolCallStatus,
    Transcript,
    Usage,
    UserMessage,
)
from tooloop.errors import ToolDeniedError

CONVERSATION = Transcript(
    [
        SystemMessage("Be brief."),
        UserMessage("What is 2 + 40, and delete x?"),
        ToolCallMessage(
            tool_name="add", tool_call_id="c1", arguments={"a": 2, "b": 40}, result=42, content="42", message="Sure."
        ),
        ToolCallMessage(
            tool_name="delete",
            tool_call_id="c2",
            arguments={"path": "x"},
            status=ToolCallStatus.DENIED,
            error=ToolDeniedError("the user said no"),
            content="the user said no",
        ),
        ToolCallMessage(
            tool_name="dump", tool_call_id="c3", arguments={}, result="y" * 1000, content="y" * 1000, batch_id="c1"
        ),
        AssistantMessage("**42**; x is kept."),
    ]
)


def test_plain_rendering() -> None:
    text = CONVERSATION.render(usage=Usage(input_tokens=120, output_tokens=30, requests=2, tool_calls=2))
    assert text.splitlines() == [
        "system: Be brief.",
        "user: What is 2 + 40, and delete x?",
        "assistant: Sure.",
        '  tool add({"a": 2, "b": 40})',
        "    -> 42",
        '  tool delete({"path": "x"})',
        "    -> denied: ToolDeniedError: the user said no",
        "  tool dump({})",
        "    -> " + "y" * 500 + "… [500 more characters]",
        "assistant: **42**; x is kept.",
        "stop: end_turn",
        "usage: 120 tokens in, 30 out · 2 requests · 2 tool calls",
    ]
    assert "y" * 1000 in CONVERSATION.render(max_chars=0)


def test_the_ending_is_read_from_the_last_messages() -> None:
    waiting = Transcript(
        [UserMessage("go"), ToolCallMessage(tool_name="rm", tool_call_id="1", status=ToolCallStatus.PENDING)]
    )
    cancelled = Transcript(
        [UserMessage("go"), ToolCallMessage(tool_name="rm", tool_call_id="1", status=ToolCallStatus.CANCELLED)]
    )
    cut = Transcript([UserMessage("go"), AssistantMessage("Once upon", stop_reason=StopReason.MAX_TOKENS)])
    assert waiting.render().splitlines()[-1] == "stop: approval_required"
    assert cancelled.render().splitlines()[-1] == "stop: cancelled"
    assert cut.render().splitlines()[-2:] == ["  [stop: max_tokens]", "stop: max_tokens"]
    assert cut.render(stop_reason="cancelled").splitlines()[-1] == "stop: cancelled"
    assert Transcript().render() == ""


def test_rich_rendering() -> None:
    console = Console(record=True, width=100, color_system=None)
    console.print(CONVERSATION.render(rich=True, usage=Usage(requests=2)))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[:4] == ["system", "Be brief.", "user", "What is 2 + 40, and delete x?"]
    assert '  ⚙ add({"a": 2, "b": 40})' in lines
    assert "    ✓ 42" in lines
    assert "    ✗ denied: ToolDeniedError: the user said no" in lines
    assert "42; x is kept." in lines  # markdown: the bold markers are rendered, not shown
    assert lines[-2:] == ["stop: end_turn", "usage: 0 tokens in, 0 out · 2 requests · 0 tool calls"]


def test_plain_rendering_does_not_import_rich() -> None:
    code = "import sys, tooloop; tooloop.Transcript([tooloop.UserMessage('hi')]).render(); print('rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_subagents_call_names_the_session_it_ran_in() -> None:
    call = ToolCallMessage(
        tool_name="research",
        tool_call_id="c1",
        arguments={"prompt": "tides"},
        result={"subagent": "research", "answer": "the moon", "session_id": "lead.c1"},
        content="the moon",
    )
    lines = Transcript([UserMessage("why tides?"), call]).render().splitlines()
    assert lines[1:4] == ['  tool research({"prompt": "tides"})', "    -> the moon", "    (subagent session lead.c1)"]
    console = Console(width=80, record=True, color_system=None)
    console.print(Transcript([call]).render(rich=True))
    assert "(subagent session lead.c1)" in console.export_text()
    # a tool's own dict result naming a session is not a subagent's
    plain = ToolCallMessage(tool_name="t", tool_call_id="c2", result={"session_id": "x"}, content="{}")
    assert "subagent session" not in Transcript([plain]).render()
