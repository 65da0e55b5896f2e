"""A model that reports no usage still counts against the token budget, by the context counter's
estimate, and the usage says it is an estimate."""

from __future__ import annotations

from tooloop import Agent, Limits, ModelResponse, StopReason, ToolCall, Transcript, Usage, tool
from tooloop.context import ContextPolicy
from tooloop.testing import ScriptedModel


@tool
def fetch(page: int) -> str:
    return "lorem ipsum dolor sit amet " * 40  # about 1,000 characters: ~250 tokens


def _calls(n: int) -> ModelResponse:
    return ModelResponse("", [ToolCall(f"c{n}", "fetch", {"page": n})])


async def test_a_model_without_usage_is_stopped_by_the_token_budget() -> None:
    model = ScriptedModel([_calls(i) for i in range(20)] + ["done"])
    result = await Agent(model, tools=[fetch], limits=Limits(max_total_tokens=2_000)).run("read every page")
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert 2_000 <= result.usage.total_tokens < 4_000  # stopped at the first request past the budget
    assert result.usage.estimated
    assert len(model.requests) < 10
    first = result.tool_calls[0].usage
    assert first is not None and first.estimated and first.input_tokens > 0 and first.output_tokens > 0


async def test_the_estimate_uses_the_context_policys_counter() -> None:
    model = ScriptedModel(["a short answer"])
    policy = ContextPolicy(counter=lambda text: 1000 if "question" in text else 1)
    result = await Agent(model, context=policy, limits=Limits(max_total_tokens=10**6)).run("a question")
    assert result.usage.input_tokens == 1004  # 1000 + the message overhead of 4
    assert result.usage.output_tokens == 5 and result.usage.estimated


async def test_reported_usage_is_never_estimated_and_no_budget_means_no_estimate() -> None:
    reported = ScriptedModel([ModelResponse("hi", usage=Usage(10, 2))])
    result = await Agent(reported, limits=Limits(max_total_tokens=1000)).run("hello")
    assert result.usage.total_tokens == 12 and not result.usage.estimated
    silent = await Agent(ScriptedModel(["hi"])).run("hello")
    assert silent.usage.total_tokens == 0 and not silent.usage.estimated


async def test_the_estimate_mark_survives_the_transcript_json_and_the_result_dict() -> None:
    result = await Agent(ScriptedModel(["hi"]), limits=Limits(max_total_tokens=1000)).run("hello")
    assert result.to_dict()["usage"]["estimated"] is True
    again = Transcript.from_json(result.transcript.to_json())
    usage = again[-1].usage  # type: ignore[union-attr]
    assert usage is not None and usage.estimated
    assert Usage(1, 1) + Usage(estimated=True) == Usage(1, 1, estimated=True)
    assert "estimated" not in (await Agent(ScriptedModel(["x"])).run("y")).to_dict()["usage"]
