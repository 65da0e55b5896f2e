"""Large tool results summarised by a function or a model instead of cut; the cut stays the default."""

from __future__ import annotations

import pytest

from tooloop import Agent, ArgumentTypeError, Limits, ModelResponse, ToolCall, ToolCallMessage, Usage, tool
from tooloop.testing import ScriptedModel

BIG = "".join(f"row {i}: value {i * 7}\n" for i in range(400))  # about 7,000 characters


@tool
def report(kind: str) -> str:
    return BIG if kind == "big" else "small"


def _calls(*kinds: str) -> ModelResponse:
    return ModelResponse("", [ToolCall(f"c{i}", "report", {"kind": k}) for i, k in enumerate(kinds)])


def _told(model: ScriptedModel, request: int = 1) -> dict[str, str]:
    return {m.tool_call_id: m.content for m in model.requests[request].messages if isinstance(m, ToolCallMessage)}


async def test_a_function_summarises_a_result_over_the_limit_and_only_that_one() -> None:
    seen: list[tuple[str, int, int]] = []

    def shorten(call: ToolCallMessage, text: str, limit: int) -> str:
        seen.append((call.tool_name, len(text), limit))
        return f"400 rows, the last is {text.splitlines()[-1]!r}"

    model = ScriptedModel([_calls("big", "small"), "done"])
    agent = Agent(model, tools=[report], limits=Limits(max_tool_result_chars=1_000), summarize_results=shorten)
    result = await agent.run("go")
    assert seen == [("report", len(BIG), 1_000)]  # the small result was not summarised
    assert _told(model) == {"c0": "400 rows, the last is 'row 399: value 2793'", "c1": "small"}
    assert result.tool_calls[0].result == BIG  # the tool's value is kept whole


async def test_a_model_writes_the_summary_and_its_usage_counts() -> None:
    summarizer = ScriptedModel([ModelResponse("rows 0 to 399, value = 7 x row", usage=Usage(2_000, 12))])
    model = ScriptedModel([_calls("big"), "done"])
    agent = Agent(model, tools=[report], limits=Limits(max_tool_result_chars=1_000), summarize_results=summarizer)
    result = await agent.run("go")
    assert _told(model) == {"c0": "rows 0 to 399, value = 7 x row"}
    (asked,) = summarizer.requests
    assert "at most 1000 characters" in asked.messages[0].text
    assert BIG in asked.messages[1].text and "report" in asked.messages[1].text
    assert not asked.tools
    assert result.usage.requests == 3 and result.usage.input_tokens == 2_000


async def test_by_default_and_when_the_summariser_fails_the_result_is_cut() -> None:
    def broken(call: ToolCallMessage, text: str, limit: int) -> str:
        raise RuntimeError("summary service down")

    for summarize in (None, broken):
        model = ScriptedModel([_calls("big"), "done"])
        agent = Agent(model, tools=[report], limits=Limits(max_tool_result_chars=1_000), summarize_results=summarize)
        await agent.run("go")
        told = _told(model)["c0"]
        assert told.startswith(BIG[:1_000]) and "truncated" in told


async def test_a_summary_over_the_limit_is_cut_too() -> None:
    async def wordy(call: ToolCallMessage, text: str, limit: int) -> str:
        return "x" * (limit * 2)

    model = ScriptedModel([_calls("big"), "done"])
    agent = Agent(model, tools=[report], limits=Limits(max_tool_result_chars=500), summarize_results=wordy)
    await agent.run("go")
    assert _told(model)["c0"].startswith("x" * 500) and "truncated 500 characters" in _told(model)["c0"]


def test_summarize_results_takes_a_function_or_a_model() -> None:
    with pytest.raises(ArgumentTypeError, match="summarize_results"):
        Agent("test:echo", summarize_results=42)  # type: ignore[arg-type]
    assert Agent("test:echo", summarize_results="test:echo").tools == ()
