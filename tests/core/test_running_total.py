"""A stream's ModelRequestFinished totals, summed when read: the totals as they were, in any order."""

from __future__ import annotations

from decimal import Decimal

from tooloop.events import ModelRequestFinished, request_finished, settle_total
from tooloop.loop.record import Recorder
from tooloop.messages import ModelResponse, Usage
from tooloop.transcript import Transcript


def test_totals_read_in_any_order_are_the_totals_when_they_were_made() -> None:
    record = Recorder(Transcript(), None)
    totals = []
    for n in range(1, 5):
        record.count_request(Usage(n, 1, requests=1, cost=Decimal(n) / 100))
        for _ in range(n):
            record.count_call()
        if n == 3:
            assert record.spent.input_tokens == 6  # a limit's check sums the requests so far
        totals.append(record.running_total())
    expected = [
        Usage(1, 1, requests=1, tool_calls=1, cost=Decimal("0.01")),
        Usage(3, 2, requests=2, tool_calls=3, cost=Decimal("0.03")),
        Usage(6, 3, requests=3, tool_calls=6, cost=Decimal("0.06")),
        Usage(10, 4, requests=4, tool_calls=10, cost=Decimal("0.10")),
    ]
    assert [settle_total(totals[i]) for i in (3, 1, 0, 2)] == [expected[i] for i in (3, 1, 0, 2)]
    assert record.usage == expected[3]


def test_an_event_with_a_running_total_is_the_event_with_its_usage() -> None:
    record = Recorder(Transcript(), None)
    record.count_request(Usage(3, 4, requests=1))
    record.count_call()
    event = request_finished(2, ModelResponse(text="x"), record.running_total())
    assert type(event.usage) is Usage
    assert event == ModelRequestFinished(2, ModelResponse(text="x"), Usage(3, 4, requests=1, tool_calls=1))
