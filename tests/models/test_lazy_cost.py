"""A cost is looked up when it is read, not when the response arrives.

The price table (``genai-prices``, with pydantic and its updater's imports) costs a third of a
second of CPU and about 17 MB the first time a process loads it. A run on a priced provider keeps
each response's pricing inputs and looks the price up the first time ``Usage.cost`` is read: a
process whose runs nobody asks the cost of never loads the table, and one that reads it gets the
same ``Decimal`` as a response priced on arrival. These runs go through the real adapters against
a server on 127.0.0.1 speaking each provider's wire format, in fresh processes (other tests load
the table into this one).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.billing import add, price, served_model
from tests.support.wire import WireServer, sse_reply
from tooloop import Agent, StopReason
from tooloop.messages import AssistantMessage, ToolCallMessage, Usage
from tooloop.transcript import Transcript, usage_from_dict, usage_to_dict

pytestmark = pytest.mark.usefixtures("served_models")

ROOT = Path(__file__).resolve().parents[2]

# claude-sonnet-4-5, published per million: input $3, output $15
BLOCKS = [{"input_tokens": 1_850, "output_tokens": 120}, {"input_tokens": 2_010, "output_tokens": 41}]
BY_HAND = [price((1_850, "3"), (120, "15")), price((2_010, "3"), (41, "15"))]


def _queue_conversation(wire: WireServer) -> None:
    """A tool call, then the answer, as Anthropic streams them."""
    contents = [
        ([{"type": "tool_use", "id": "toolu_01", "name": "add", "input": {"a": 2, "b": 3}}], "tool_use"),
        ([{"type": "text", "text": "5."}], "end_turn"),
    ]
    for (content, stop), block in zip(contents, BLOCKS, strict=True):
        events = aw.stream_events(content, stop, block)
        events[0][1]["message"]["model"] = "claude-sonnet-4-5-20250929"
        wire.queue(sse_reply(events, named=True))


def _fresh(body: str) -> Any:
    """What ``body`` (the inside of an async function, given ``wire``) returns, as JSON, run in a
    fresh interpreter against its own wire server."""
    code = (
        "import asyncio, json, sys\n"
        "from tests.support.wire import WireServer\n"
        "from tests.models.test_lazy_cost import _queue_conversation\n"
        "from tests.models.billing import add, close_served_models, served_model\n"
        "from tooloop import Agent, Limits\n"
        "async def main(wire):\n"
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", "    ")
        + "wire = WireServer().start()\n"
        "try:\n"
        "    out = asyncio.run(main(wire))\n"
        "finally:\n"
        "    wire.stop()\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_run_whose_cost_nobody_reads_never_loads_the_price_table() -> None:
    loaded, then, cost, kept = _fresh(
        """
        _queue_conversation(wire)
        _queue_conversation(wire)
        agent = Agent(served_model("anthropic:claude-sonnet-4-5", wire.url), tools=[add])
        result = await agent.run("2+3?")
        events = [type(event).__name__ async for event in agent.stream("2+3?")]
        assert "ModelRequestFinished" in events and "RunFinished" in events, events
        loaded = "genai_prices" in sys.modules
        cost = str(result.usage.cost)
        kept = [str(m.usage.cost) for m in result.transcript if getattr(m, "usage", None)]
        await close_served_models()
        return [loaded, "genai_prices" in sys.modules, cost, kept]
        """
    )
    assert not loaded  # two runs (run() and stream()) finished, usage summed, messages kept: no price looked up
    assert then  # reading the cost looked it up
    assert Decimal(cost) == sum(BY_HAND, Decimal(0))
    assert [Decimal(c) for c in kept] == BY_HAND


def test_max_cost_looks_prices_up_and_stops_where_it_did() -> None:
    # The first request costs $0.007350; with the second's estimated at as much, $0.01 is crossed.
    stop, requests, cost = _fresh(
        """
        _queue_conversation(wire)
        model = served_model("anthropic:claude-sonnet-4-5", wire.url)
        agent = Agent(model, tools=[add], limits=Limits(max_cost="0.01"))
        result = await agent.run("2+3?")
        await close_served_models()
        return [result.stop_reason.value, result.usage.requests, str(result.usage.cost)]
        """
    )
    assert (stop, requests) == (StopReason.COST_LIMIT.value, 1)
    assert Decimal(cost) == BY_HAND[0]


async def test_a_read_cost_is_the_price_on_arrival_and_survives_every_copy(wire: WireServer) -> None:
    _queue_conversation(wire)
    result = await Agent(served_model("anthropic:claude-sonnet-4-5", wire.url), tools=[add]).run("2+3?")
    kept = [m.usage for m in result.transcript if isinstance(m, AssistantMessage | ToolCallMessage) and m.usage]
    total = result.usage
    assert total == Usage(3_860, 161, requests=2, tool_calls=1, cost=sum(BY_HAND, Decimal(0)))
    assert hash(kept[0]) == hash(Usage(1_850, 120, requests=1, cost=BY_HAND[0]))
    assert pickle.loads(pickle.dumps(total)) == total
    assert usage_from_dict(usage_to_dict(kept[1])) == kept[1]
    assert Transcript.from_json(result.transcript.to_json())[-1] == result.transcript[-1]
    assert replace(kept[0], tool_calls=0).cost == BY_HAND[0]
    assert repr(kept[1]).count(repr(BY_HAND[1])) == 1


def test_sums_of_costs_not_yet_read_follow_the_same_rules() -> None:
    from tooloop.models.prices import priced

    def later(n: int) -> Usage:
        return priced(Usage(1_000 * n, 10, requests=1), "anthropic", "claude-sonnet-4-5")

    each = price((1_000, "3"), (10, "15"))
    assert (later(1) + Usage(tool_calls=1)).cost == each  # a side without requests adds nothing
    assert (Usage() + later(1)).cost == each
    assert (later(1) + Usage(5, 5, requests=1)).cost is None  # a request without a price: unknown
    assert (Usage(5, 5, requests=1) + later(1)).cost is None
    assert (later(1) + Usage(requests=1, cost=Decimal("0.5"))).cost == each + Decimal("0.5")
    unknown = priced(Usage(10, 1, requests=1), "anthropic", "no-such-model-anywhere")
    assert (later(1) + unknown).cost is None
    total = Usage()
    for n in range(1, 3_001):  # a chain longer than the recursion limit, worked out in one read
        total = total + later(n % 3 + 1)
    assert total.cost == sum((price((1_000 * (n % 3 + 1), "3"), (10, "15")) for n in range(1, 3_001)), Decimal(0))
