"""Usage and cost per model request and in total, in a real browser."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tooloop import Agent, Limits, ModelResponse, ToolCall, Usage
from tooloop.testing import ScriptedModel

from ._seed import add, seed
from .conftest import WebServer, run_async

pytestmark = pytest.mark.timeout(180)
Start = Callable[..., WebServer]


async def _priced_run(url: str) -> None:
    model = ScriptedModel(
        [
            ModelResponse(
                "adding",
                [ToolCall("c1", "add", {"a": 2, "b": 3}), ToolCall("c2", "add", {"a": 1, "b": 1})],
                usage=Usage(1200, 40, cache_read_tokens=1000, cost=Decimal("0.00052")),
                response_id="resp_first",
            ),
            ModelResponse(
                "5 and 2",
                usage=Usage(1300, 25, reasoning_tokens=10, cost=Decimal("0.0125")),
                response_id="resp_second",
                stop_sequence="END",
            ),
        ]
    )
    await Agent(model, tools=[add], store=url).run("add 2+3 and 1+1", session_id="priced")


def _cells(row: Any) -> list[str]:
    return [c.strip() for c in row.locator("td").all_inner_texts()]


def test_a_session_shows_usage_and_cost_per_request_and_in_total(
    store_url: str, web: Start, page: Any, screenshots: Path
) -> None:
    run_async(lambda: _priced_run(store_url))
    server = web(store_url)
    page.goto(server.address)
    page.goto(server.base + "/s/priced")

    rows = page.locator("#requests tbody tr.request-row")
    assert rows.count() == 2  # two requests, though the first produced two tool calls
    first, second = _cells(rows.nth(0)), _cells(rows.nth(1))
    assert first[0] == "#1" and first[2] == "resp_first" and first[3] == "tool_use"
    assert first[4:] == ["1200", "1000", "40", "0", "$0.000520"]
    assert second[0] == "#3" and second[2] == "resp_second" and second[3] == "end_turn ('END')"
    assert second[4:] == ["1300", "0", "25", "10", "$0.0125"]
    total = [c.strip() for c in page.locator("#requests-total td").all_inner_texts()]
    assert total == ["2500", "1000", "65", "10", "$0.0130"]
    assert "$0.0130" in page.locator("#totals").inner_text()  # the session's own total agrees

    assert page.locator("#m1 .request-usage").inner_text() == "1200 in · 40 out · $0.000520"
    assert page.locator("#m2 .request-usage").count() == 0  # the batch's second call: same request
    assert page.locator("#m3 .request-usage").inner_text() == "1300 in · 25 out · $0.0125"
    titles = page.locator("#waterfall rect.wf-bar.request title").all_text_contents()
    assert len(titles) == 2 and "1200 in · 40 out · $0.000520" in titles[0]  # the waterfall says it too
    assert "1300 in · 25 out · $0.0125" in titles[1]
    page.locator("#requests a[href='#m3']").click()
    assert page.url.endswith("#m3")
    page.screenshot(path=str(screenshots / f"requests-{store_url.partition(':')[0]}.png"), full_page=True)


def test_a_session_stored_without_per_request_usage_shows_its_totals_only(
    sqlite_url: str, web: Start, page: Any
) -> None:
    run_async(lambda: seed(sqlite_url))
    server = web(sqlite_url)
    page.goto(server.address)
    page.goto(server.base + "/s/essay")  # written message by message, without a request's usage
    assert page.locator("#requests").count() == 0
    assert page.locator(".request-usage").count() == 0
    assert "$0.0420" in page.locator("#totals").inner_text()


def test_a_request_whose_usage_was_estimated_says_so(sqlite_url: str, web: Start, page: Any) -> None:
    async def run() -> None:
        model = ScriptedModel([ModelResponse("hi")])  # a model that reports no usage
        agent = Agent(model, store=sqlite_url, limits=Limits(max_total_tokens=10_000))
        await agent.run("hello there", session_id="guessed")

    run_async(run)
    server = web(sqlite_url)
    page.goto(server.address)
    page.goto(server.base + "/s/guessed")
    row = page.locator("#requests tbody tr.request-row")
    assert row.count() == 1
    assert row.locator(".badge").inner_text() == "estimated"
    assert int(_cells(row)[4]) > 0  # the context counter's estimate, not zero
