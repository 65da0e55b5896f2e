"""run_many: every item once, records complete, reruns continue, failures recorded, processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.batch.agents import lookup, offline_agent, server_agent
from tests.support.rollout_server import RolloutServer
from tooloop import Agent, ConfigurationError, CorruptDataError, ModelRequest, ProviderError, RunResult
from tooloop.batch import BatchItem, run_many
from tooloop.testing import FunctionModel


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def items(n: int, start: int = 0) -> list[BatchItem]:
    return [BatchItem(f"item-{i}", f"key{i}", metadata={"n": i}) for i in range(start, start + n)]


async def test_every_item_is_recorded_once_with_its_whole_conversation(rollout: RolloutServer, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    summary = await run_many(server_agent(), items(120), concurrency=40, results=out)

    records = read(out)
    assert sorted(r["id"] for r in records) == sorted(f"item-{i}" for i in range(120))
    first = next(r for r in records if r["id"] == "item-7")
    assert first["text"] == "answer: value-of-key7"
    assert first["stop_reason"] == "end_turn" and first["error"] is None
    assert first["metadata"] == {"n": 7}
    assert first["usage"]["requests"] == 2 and first["usage"]["tool_calls"] == 1
    kinds = [m["kind"] for m in first["transcript"]["messages"]]
    assert kinds == ["user", "tool_call", "assistant"]
    assert (summary.total, summary.finished, summary.errors, summary.skipped) == (120, 120, 0, 0)
    assert summary.stop_reasons == {"end_turn": 120}
    assert summary.usage.requests == 240
    assert rollout.requests == 240 and set(rollout.keys.values()) == {2}


async def test_a_rerun_skips_finished_ids_and_runs_only_the_rest(rollout: RolloutServer, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    await run_many(server_agent(), items(60), concurrency=20, results=out)
    before = rollout.requests

    summary = await run_many(server_agent(), items(90), concurrency=20, results=out)

    assert rollout.requests - before == 2 * 30
    assert (summary.skipped, summary.finished, summary.total) == (60, 30, 90)
    ids = [r["id"] for r in read(out)]
    assert len(ids) == len(set(ids)) == 90


async def test_a_partial_last_line_from_a_killed_writer_is_cut_and_its_item_runs_again(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    await run_many(offline_agent(), items(3), results=out)
    whole = out.read_text().splitlines()
    out.write_text(whole[0] + "\n" + whole[1] + "\n" + whole[2][:40])  # the third line was cut mid-write

    summary = await run_many(offline_agent(), items(3), results=out)

    assert summary.finished == 1 and summary.skipped == 2
    assert sorted(r["id"] for r in read(out)) == ["item-0", "item-1", "item-2"]


async def test_a_complete_line_that_is_not_a_record_is_corrupt_data_naming_the_line(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a"}\nnot json\n')
    with pytest.raises(CorruptDataError, match=r"out\.jsonl:2"):
        await run_many(offline_agent(), items(1), results=out)


async def test_failed_conversations_are_recorded_and_retry_failed_runs_them_again(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    broken = {"key1", "key3"}

    def answer(request: ModelRequest) -> str:
        prompt = request.messages[-1].text  # type: ignore[union-attr]
        if prompt in broken:
            raise ProviderError(f"upstream failed for {prompt}")
        return f"ok {prompt}"

    summary = await run_many(Agent(FunctionModel(answer)), items(5), results=out)

    assert summary.errors == 2 and summary.stop_reasons == {"end_turn": 3, "error": 2}
    failed = {r["id"]: r["error"] for r in read(out) if r["error"]}
    assert failed == {
        "item-1": {"type": "ProviderError", "message": "upstream failed for key1"},
        "item-3": {"type": "ProviderError", "message": "upstream failed for key3"},
    }
    broken.clear()
    again = await run_many(Agent(FunctionModel(answer)), items(5), results=out, retry_failed=True)
    assert (again.finished, again.skipped, again.errors) == (2, 3, 0)
    records = read(out)
    assert sorted(r["id"] for r in records) == [f"item-{i}" for i in range(5)]
    assert all(r["error"] is None for r in records)


async def test_an_unexpected_exception_is_that_items_error_not_the_batchs_end(tmp_path: Path) -> None:
    def answer(request: ModelRequest) -> str:
        raise KeyError("a bug in a custom model")

    seen: list[RunResult] = []
    summary = await run_many(
        Agent(FunctionModel(answer)), ["a", "b"], results=tmp_path / "o.jsonl", on_result=lambda i, r: seen.append(r)
    )
    assert summary.errors == 2 and len(seen) == 2
    assert all(isinstance(r.error, Exception) for r in seen)


async def test_items_can_be_prompts_or_mappings_and_are_read_lazily() -> None:
    pulled: list[int] = []

    def source() -> Any:
        for i in range(30):
            pulled.append(i)
            yield {"id": f"m{i}", "prompt": f"p{i}"} if i % 2 else f"p{i}"

    got: dict[str, str] = {}
    summary = await run_many(
        Agent(FunctionModel(lambda r: "done")),
        source(),
        concurrency=4,
        on_result=lambda i, r: got.update({i.id: r.text}),
    )
    assert summary.finished == summary.total == 30
    assert got["m1"] == "done" and got["2"] == "done"


async def test_two_processes_share_the_results_file_and_run_every_id_once(
    rollout: RolloutServer, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    summary = await run_many("tests.batch.agents:server_agent", items(200), concurrency=30, results=out, processes=2)

    ids = [r["id"] for r in read(out)]
    assert len(ids) == len(set(ids)) == 200
    assert summary.processes == 2 and summary.finished == 200 and summary.errors == 0
    assert summary.usage.requests == 400 and rollout.requests == 400


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"processes": "2"}, "processes"),
        ({"processes": 2}, "results="),
        ({"processes": 2, "results": "x.jsonl", "on_result": print}, "on_result"),
    ],
)
async def test_bad_options_are_configuration_errors_naming_them(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        await run_many(offline_agent(), items(1), **options)


async def test_an_agent_other_processes_cannot_rebuild_is_refused_with_the_fix(tmp_path: Path) -> None:
    agent = Agent(FunctionModel(lambda r: "x"), tools=[lookup])  # a lambda does not pickle
    with pytest.raises(ConfigurationError, match=r"package\.module:agent"):
        await run_many(agent, items(2), results=tmp_path / "o.jsonl", processes=2)


async def test_a_worker_that_cannot_load_its_agent_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no attribute"):
        await run_many("tests.batch.agents:nothing_here", items(2), results=tmp_path / "o.jsonl", processes=2)


def counting_agent() -> tuple[Agent, list[str]]:
    asked: list[str] = []

    def answer(request: ModelRequest) -> str:
        asked.append(request.messages[-1].text)  # type: ignore[union-attr]
        return "done"

    return Agent(FunctionModel(answer)), asked


async def test_metadata_that_is_not_json_is_refused_before_any_model_call(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    agent, asked = counting_agent()
    listed = [{"id": "a", "prompt": "p", "metadata": {"n": 1}}, {"id": "b", "prompt": "q", "metadata": {1, 2}}]
    with pytest.raises(ConfigurationError, match=r"BatchItem 'b': metadata must be JSON-compatible"):
        await run_many(agent, listed, results=out)
    assert asked == [] and out.read_text() == ""
    with pytest.raises(ConfigurationError, match="metadata must be JSON-compatible"):
        BatchItem("c", "r", metadata=object())

    def lazily() -> Any:
        yield from ({"id": f"ok{i}", "prompt": f"p{i}"} for i in range(5))
        yield {"id": "bad", "prompt": "x", "metadata": Path("/")}
        yield {"id": "after", "prompt": "y"}

    with pytest.raises(ConfigurationError, match=r"BatchItem 'bad'"):
        await run_many(agent, lazily(), results=out, concurrency=3)
    assert sorted(r["id"] for r in read(out)) == [f"ok{i}" for i in range(5)]  # what ran was recorded
    assert sorted(asked) == [f"p{i}" for i in range(5)]


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ([BatchItem("a", "p"), BatchItem("b", "q"), BatchItem("a", "r")], "batch items 0 and 2 both have the id 'a'$"),
        (
            ["first prompt", {"id": "0", "prompt": "second"}],
            "batch items 0 and 1 both have the id '0' (an item without an id gets its position as id: "
            "give every item an id, or none)",
        ),
        (
            [{"id": 1, "prompt": "p"}, "a prompt at position 1"],
            "batch items 0 and 1 both have the id '1' (an item without an id",
        ),
    ],
)
async def test_two_items_with_one_id_are_refused_before_running(
    tmp_path: Path, listed: list[Any], message: str
) -> None:
    out = tmp_path / "out.jsonl"
    agent, asked = counting_agent()
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await run_many(agent, listed, results=out)
    assert asked == [] and out.read_text() == ""


SECOND_BATCH = """
import sys
from tooloop import Agent, ConfigurationError
from tooloop.batch import run_many_sync
from tooloop.testing import FunctionModel

try:
    run_many_sync(Agent(FunctionModel(lambda r: "second")), ["a", "b", "c"], results=sys.argv[1])
except ConfigurationError as exc:
    print(exc)
    sys.exit(2)
"""


async def test_a_second_batch_on_a_results_file_in_use_is_refused_and_does_no_work(tmp_path: Path) -> None:
    import asyncio
    import subprocess
    import sys

    out = tmp_path / "out.jsonl"
    release = asyncio.Event()
    started = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await release.wait()
        return "first"

    first = asyncio.create_task(run_many(Agent(FunctionModel(slow)), ["a", "b", "c"], results=out))
    await asyncio.wait_for(started.wait(), 30)
    second = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", SECOND_BATCH, str(out)], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 2, second.stderr
    assert second.stdout.strip() == (
        f"the results file {out} is in use by another batch (it holds out.jsonl.lock); wait for that batch to end, "
        "or give this one another results file"
    )
    release.set()
    summary = await first
    assert summary.finished == 3
    assert [r["text"] for r in read(out)] == ["first"] * 3
    rerun = await run_many(Agent(FunctionModel(lambda r: "again")), ["a", "b", "c"], results=out)
    assert (rerun.skipped, rerun.finished) == (3, 0)  # the file the first batch left is one a rerun accepts
