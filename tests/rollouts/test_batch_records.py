"""run_many records for training: trajectory, reward and provenance (one process, several, and Ray)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tooloop.batch import BatchItem, run_many
from tooloop.batch.ray import run_many_ray
from tooloop.loop.result import RunResult
from tooloop.rollouts import Trajectory
from tooloop.testing.token_server import serve

from .agents import capturing_agent, exact_answer
from .conftest import agent_for, lookup_policy

ROOT = Path(__file__).resolve().parents[2]
NOT_A_SCORE = "not a number or a mapping"
ITEMS = [BatchItem(f"item-{i}", f"key{i}") for i in range(6)]


def _records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def _check_training_fields(record: dict[str, Any]) -> None:
    trajectory = Trajectory.from_record(record, strict=True)
    rebuilt = Trajectory.from_record({"transcript": record["transcript"]}, strict=True)
    assert trajectory.to_dict()["branches"] == rebuilt.to_dict()["branches"]  # the record's own tokens, unchanged
    assert trajectory.reward == {"reward": 1.0, "format": 1.0}
    row = trajectory.to_dataset_row()
    assert row["reward"] == 1.0 and row["format"] == 1.0
    assert len(row["completion_ids"]) == len(row["completion_mask"]) == len(row["completion_logprobs"])
    provenance = record["provenance"]
    assert provenance["model"] == "toy" and provenance["provider"] == "vllm"
    assert provenance["settings"] == {"temperature": 0.7, "max_tokens": 64, "seed": 11}
    assert provenance["seed"] == 11 and provenance["tools"] == ["lookup"]
    assert provenance["tools_hash"].startswith("sha256:") and len(provenance["tools_hash"]) == 71
    assert provenance["tooloop_version"]


async def test_one_process_records_carry_trajectory_reward_and_provenance(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy) as server:
        summary = await run_many(capturing_agent(server.url), ITEMS, results=out, concurrency=3, reward=exact_answer)
    assert summary.finished == 6 and summary.errors == 0
    records = _records(out)
    assert sorted(records) == sorted(item.id for item in ITEMS)
    for record in records.values():
        _check_training_fields(record)


async def test_several_processes_score_in_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{ROOT / 'src'}")
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy) as server:
        monkeypatch.setenv("TOKEN_SERVER_URL", server.url)
        summary = await run_many(
            "tests.rollouts.agents:capturing_agent", ITEMS, results=out, processes=2, reward=exact_answer
        )
    assert summary.finished == 6 and summary.processes == 2
    for record in _records(out).values():
        _check_training_fields(record)


@pytest.mark.timeout(240)
async def test_ray_actors_score_and_record_the_trajectory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{ROOT / 'src'}")
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy) as server:
        await run_many_ray(
            "tests.rollouts.agents:capturing_agent",
            ITEMS,
            results=out,
            actors=1,
            concurrency=3,
            servers=[server.url],
            reward=exact_answer,
            ray_init={"num_cpus": 1, "include_dashboard": False, "log_to_driver": False},
        )
    for record in _records(out).values():
        _check_training_fields(record)


def _failing(item: BatchItem, result: RunResult) -> float:
    raise RuntimeError(f"no score for {item.id}")


def _wrong_type(item: BatchItem, result: RunResult) -> Any:
    return "good"


async def _async_score(item: BatchItem, result: RunResult) -> float:
    return float(len(result.text))


@pytest.mark.parametrize(
    ("reward", "expected", "error"),
    [
        (_failing, None, {"type": "RuntimeError", "message": "no score for item-0"}),
        (
            _wrong_type,
            None,
            {"type": "TypeError", "message": "the reward function returned str, not a number or a mapping"},
        ),
        (_async_score, 12.0, None),
    ],
    ids=["raises", "wrong-type", "async"],
)
async def test_the_reward_function_fills_the_slot_or_says_why_not(
    tmp_path: Path, reward: Any, expected: Any, error: Any
) -> None:
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy) as server:
        summary = await run_many(agent_for(server), ITEMS[:1], results=out, reward=reward)
    assert summary.errors == 0  # a scoring failure is the record's, not the conversation's
    (record,) = _records(out).values()
    assert record["reward"] == expected
    assert record.get("reward_error") == error


async def test_without_capture_or_reward_a_record_has_only_its_provenance(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy) as server:
        await run_many(agent_for(server, capture=False), ITEMS[:1], results=out)
    (record,) = _records(out).values()
    assert "trajectory" not in record and "reward" not in record
    assert record["provenance"]["model"] == "toy"
