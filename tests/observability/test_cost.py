"""Cost: each priced request's ``Usage.cost`` from the offline price table, sums, and ``max_cost``."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from tests.models.openai_wire import completion, plain, tool_call, usage
from tests.support.wire import WireServer
from tooloop import Agent, ConfigurationError, Limits, ModelResponse, StopReason, Usage, get_model
from tooloop.models.openai_chat import OpenAIChatModel
from tooloop.models.prices import cost_of
from tooloop.testing import FunctionModel

# gpt-4.1-mini list prices, USD per million tokens: input 0.40, cached input 0.10, output 1.60.
INPUT, CACHED, OUTPUT = Decimal("0.40"), Decimal("0.10"), Decimal("1.60")
MILLION = Decimal(1_000_000)


def mini_cost(prompt: int, completion_tokens: int, cached: int = 0) -> Decimal:
    return ((prompt - cached) * INPUT + cached * CACHED + completion_tokens * OUTPUT) / MILLION


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city} is sunny"


@pytest.fixture
def openai_model(wire: WireServer) -> Iterator[OpenAIChatModel]:
    model = get_model("openai:gpt-4.1-mini", base_url=wire.url + "/v1", api_key="sk-test", max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    yield model


def tool_turn(prompt: int = 1000, out: int = 50, cached: int = 0) -> object:
    call = tool_call("c1", "lookup", '{"city": "Oslo"}')
    return plain(completion({"content": None, "tool_calls": [call]}, "tool_calls", usage(prompt, out, cached)))


def answer(prompt: int = 1200, out: int = 20) -> object:
    return plain(completion({"content": "Sunny."}, "stop", usage(prompt, out)))


def test_costs_add_up_and_an_unpriced_request_makes_the_sum_unknown() -> None:
    one = Usage(10, 2, requests=1, cost=Decimal("0.001"))
    two = Usage(20, 3, requests=1, cost=Decimal("0.002"))
    assert (one + two).cost == Decimal("0.003")
    assert (Usage() + one).cost == Decimal("0.001")  # an empty usage adds nothing
    assert (one + Usage(tool_calls=1)).cost == Decimal("0.001")  # nor does a tool call
    assert (one + Usage(5, 5, requests=1)).cost is None  # a request without a price
    assert (Usage() + Usage()).cost is None


async def test_a_run_on_a_priced_model_sums_each_requests_cost(wire: WireServer, openai_model: OpenAIChatModel) -> None:
    wire.queue(tool_turn(1000, 50, cached=400), answer(1200, 20))
    result = await Agent(openai_model, tools=[lookup]).run("weather?")
    assert result.text == "Sunny."
    assert result.usage.cost == mini_cost(1000, 50, cached=400) + mini_cost(1200, 20)
    await openai_model.aclose()


async def test_models_without_a_price_cost_none() -> None:
    assert (await Agent("test:echo").run("hi")).usage.cost is None
    assert cost_of(Usage(100, 10), "openai", "no-such-model-anywhere") is None
    assert cost_of(Usage(100, 10), "ollama", "qwen3") is None  # a local server has no list price
    assert cost_of(Usage(100_000, 0), "anthropic", "claude-sonnet-4-5") == Decimal("0.3")  # $3 per million
    assert cost_of(Usage(1_000_000, 0), "anthropic", "claude-sonnet-4-5") == Decimal(6)  # long-context tier


async def test_a_cost_an_adapter_reports_is_kept() -> None:
    model = FunctionModel(lambda r: ModelResponse("ok", usage=Usage(1, 1, cost=Decimal("0.5"))))
    assert (await Agent(model).run("hi")).usage.cost == Decimal("0.5")


async def test_max_cost_stops_before_the_request_that_would_go_over(
    wire: WireServer, openai_model: OpenAIChatModel
) -> None:
    first = mini_cost(1000, 50)
    wire.queue(tool_turn(1000, 50))  # nothing else: a second request would fail the test
    limits = Limits(max_cost=first * Decimal("1.5"))  # the first fits, first + the estimate does not
    result = await Agent(openai_model, tools=[lookup], limits=limits).run("weather?")
    assert result.stop_reason is StopReason.COST_LIMIT
    assert result.stop_reason.acp == "max_tokens"
    assert len(wire.requests) == 1
    assert result.usage.cost == first
    assert result.tool_calls[0].content == "Oslo is sunny"  # the tools of the paid response still ran
    await openai_model.aclose()


async def test_max_cost_lets_the_run_finish_when_the_estimate_fits(
    wire: WireServer, openai_model: OpenAIChatModel
) -> None:
    wire.queue(tool_turn(1000, 50), answer(1200, 20))
    limits = Limits(max_cost=mini_cost(1000, 50) * 3)
    result = await Agent(openai_model, tools=[lookup], limits=limits).run("weather?")
    assert result.stop_reason is StopReason.END_TURN
    assert len(wire.requests) == 2
    await openai_model.aclose()


async def test_max_cost_on_a_model_without_a_price_fails_before_any_request() -> None:
    asked: list[object] = []
    model = FunctionModel(lambda r: asked.append(r) or ModelResponse("ok"))
    with pytest.raises(ConfigurationError, match="price of 'test' model 'function' is unknown"):
        await Agent(model, limits=Limits(max_cost=1)).run("hi")
    assert asked == []


def test_max_cost_must_be_a_non_negative_number() -> None:
    assert Limits(max_cost=0.25).max_cost == Decimal("0.25")
    assert Limits(max_cost="2").max_cost == Decimal(2)
    for bad in (-1, "nan", float("inf")):
        with pytest.raises(ValueError, match="max_cost must be a non-negative number"):
            Limits(max_cost=bad)


def test_call_stays_priced_when_the_provider_reports_a_dated_model_name() -> None:
    assert cost_of(Usage(1_000_000, 0), "openai", "gpt-4.1-mini-2025-04-14") == INPUT
