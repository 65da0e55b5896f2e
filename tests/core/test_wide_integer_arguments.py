"""Integers beyond 64 bits in a model's tool arguments reach the tool exactly, or fail clearly.

orjson, the fast JSON parser, reads an integer wider than 64 bits as a float: 123456789012345678901234567890
came out as 1.2345678901234568e+29: rounded in the transcript, the store and what a tool without
a typed parameter (an MCP server's) is given, or refused by an ``int`` parameter for its size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.models.openai_wire import completion, plain, tool_call
from tests.support.wire import WireServer
from tooloop import Agent, ToolCallStatus, get_model
from tooloop.store import open_store

WIDE = 123456789012345678901234567890
NEGATIVE = -9223372036854775809  # one below the smallest 64-bit integer


def _agent(wire: WireServer, received: list[int], store: str | None = None) -> Agent:
    def count(n: int, below: int) -> str:
        """Count to n.

        Args:
            n: Where to stop.
            below: Where to start.
        """
        received.extend((n, below))
        return f"counted from {below} to {n}"

    model = get_model("openai:gpt-4.1-mini", base_url=wire.url + "/v1", api_key="sk-test", max_retries=0)
    return Agent(model, tools=[count], store=store)


def _turns(arguments: str) -> tuple[object, object]:
    call = tool_call("c1", "count", arguments)
    asks = plain(completion({"content": None, "tool_calls": [call]}, "tool_calls"))
    return asks, plain(completion({"content": "ok"}))


async def test_an_integer_wider_than_64_bits_in_tool_arguments_reaches_the_tool_exactly(
    wire: WireServer, tmp_path: Path
) -> None:
    wire.queue(*_turns(f'{{"n": {WIDE}, "below": {NEGATIVE}}}'))
    received: list[int] = []
    url = f"sqlite:///{tmp_path}/sessions.db"
    result = await _agent(wire, received, url).run("count", session_id="s")
    assert received == [WIDE, NEGATIVE]
    (message,) = result.tool_calls
    assert message.status is ToolCallStatus.OK
    assert message.arguments == {"n": WIDE, "below": NEGATIVE}
    assert message.content == f"counted from {NEGATIVE} to {WIDE}"
    (asked,) = [m for m in wire.requests[1].json["messages"] if m["role"] == "assistant"]
    assert json.loads(asked["tool_calls"][0]["function"]["arguments"]) == {"n": WIDE, "below": NEGATIVE}
    async with open_store(url) as store:
        (stored,) = (await store.load("s")).tool_invocations
    assert stored.arguments == {"n": WIDE, "below": NEGATIVE}


async def test_an_integer_longer_than_python_reads_is_a_clear_error_outcome(wire: WireServer) -> None:
    digits = sys.get_int_max_str_digits() + 1
    wire.queue(*_turns(f'{{"n": {"7" * digits}, "below": 0}}'))
    received: list[int] = []
    result = await _agent(wire, received).run("count")
    assert received == []
    (message,) = result.tool_calls
    assert message.status is ToolCallStatus.ERROR
    assert message.error_type == "ToolArgumentsError"
    assert f"an integer of more than {digits - 1} digits" in message.content
    assert result.text == "ok"
