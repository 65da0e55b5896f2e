"""What the compare view counts as a difference."""

from __future__ import annotations

from decimal import Decimal

from tooloop.messages import AssistantMessage, ToolCallMessage, Usage, UserMessage
from tooloop.web._timeline import same


def test_two_runs_saying_the_same_are_the_same_whatever_their_requests_cost() -> None:
    first = AssistantMessage("5", response_id="resp_a", usage=Usage(10, 1, requests=1, cost=Decimal("0.01")))
    again = AssistantMessage("5", response_id="resp_b", usage=Usage(12, 1, requests=1, cost=Decimal("0.02")))
    assert same(first, again)
    call_a = ToolCallMessage(tool_name="add", tool_call_id="c", content="5", response_id="r1", usage=Usage(1, 1))
    call_b = ToolCallMessage(tool_name="add", tool_call_id="c", content="5")
    assert same(call_a, call_b)


def test_what_was_said_still_differs() -> None:
    assert not same(AssistantMessage("5"), AssistantMessage("6"))
    assert not same(AssistantMessage("5", stop_sequence="END"), AssistantMessage("5"))
    assert not same(UserMessage("a"), None) and same(None, None)
