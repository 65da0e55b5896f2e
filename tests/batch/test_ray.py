"""Ray actors: every id once, written by the driver, and each conversation sticks to one server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.rollout_server import RolloutServer, serve_in_thread
from tooloop.batch import BatchItem
from tooloop.batch.ray import run_many_ray, sticky_index

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_servers() -> Iterator[tuple[RolloutServer, RolloutServer]]:
    with serve_in_thread() as first, serve_in_thread() as second:
        yield first, second


@pytest.mark.timeout(240)
async def test_ray_actors_run_every_id_once_and_each_conversation_sticks_to_one_server(
    two_servers: tuple[RolloutServer, RolloutServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{ROOT / 'src'}")  # actors import the test agents
    out = tmp_path / "out.jsonl"
    urls = [server.url for server in two_servers]
    items = [BatchItem(f"item-{i}", f"key{i}") for i in range(300)]

    summary = await run_many_ray(
        "tests.batch.agents:agent_for_server",
        items,
        results=out,
        actors=2,
        concurrency=50,
        servers=urls,
        ray_init={"num_cpus": 2, "include_dashboard": False, "log_to_driver": False},
    )

    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(i.id for i in items)
    assert all(r["text"] == f"answer: value-of-key{r['id'].split('-')[1]}" for r in records)
    assert summary.finished == 300 and summary.errors == 0 and summary.processes == 2
    for n, server in enumerate(two_servers):
        expected = {f"key{i}" for i in range(300) if sticky_index(f"item-{i}", 2) == n}
        assert set(server.keys) == expected  # both turns of a conversation went to its server
        assert set(server.keys.values()) == {2}
    assert 0 < len(two_servers[0].keys) < 300  # the hash spreads conversations over both
