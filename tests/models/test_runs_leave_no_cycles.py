"""Whole runs, through both front doors and every provider's wire format, leave no garbage for the
cyclic collector: at a thousand concurrent conversations an object a run leaves in a reference
cycle waits for a collection of the oldest generation, which walks everything alive."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from tests.models.doors import DOORS, drive
from tests.models.test_batches_sent_again import PROVIDERS, _script, double
from tests.support.wire import WireServer
from tooloop import Agent


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_finished_runs_leave_nothing_for_the_cyclic_collector(wire: WireServer, name: str, door: str) -> None:
    provider = PROVIDERS[name]
    model = provider.make(wire.url)
    agent = Agent(model, tools=[double])
    kept: list[Any] = []
    try:
        wire.queue(*_script(provider, []))
        kept.append(await drive(agent, door, "Double 1, then 2 and 3."))  # what the first run sets up
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):  # two tool batches and an answer each: three requests
                wire.queue(*_script(provider, []))
                kept.append(await drive(agent, door, "Double 1, then 2 and 3."))
            found = gc.collect()
        finally:
            gc.enable()
    finally:
        await model.aclose()
    assert all(result.text == "done" for result, _ in kept)
    assert found == 0
