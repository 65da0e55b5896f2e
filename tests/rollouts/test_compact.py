"""Captured tokens kept compactly: each turn's prompt as the ids after the previous turn's, and
batch records' trajectories as the shapes of their branches over the transcript's ids (records of
the version before: base64 arrays); every reader still sees the whole, exact ids."""

from __future__ import annotations

import base64
import json
import pickle
from array import array
from pathlib import Path
from typing import Any

import pytest

from tooloop import Transcript
from tooloop.batch import BatchItem, run_many
from tooloop.loop.result import RunResult
from tooloop.messages import Tokens
from tooloop.rollouts import Trajectory, TrajectoryError
from tooloop.testing.token_server import serve

from .conftest import agent_for, expected_branch, lookup_policy, responses, two_rounds_policy


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_each_turn_keeps_only_the_ids_after_the_previous_turn_and_reads_back_whole(stream: bool) -> None:
    with serve(two_rounds_policy) as server:
        result = await agent_for(server, stream=stream).run("go")
    kept = [message.tokens for message in responses(result.transcript)]
    assert len(kept) == len(server.sampled) == 3
    first, second, third = kept
    assert first is not None and second is not None and third is not None
    assert first.extends is None and second.extends is first and third.extends is second
    for tokens, (prompt, completion, _) in zip(kept, server.sampled, strict=True):
        assert tokens.prompt_ids.tolist() == prompt  # the whole prompt the server reported
        assert tokens.prompt_length == len(prompt)
        assert tokens.completion_ids.tolist() == completion
    held = sum(len(t.prompt) for t in kept) // 4
    new_each_turn = len(server.sampled[-1][0]) - sum(len(c) for _, c, _ in server.sampled[:-1])
    assert held == new_each_turn  # every prompt id is held once
    assert held < sum(len(p) for p, _, _ in server.sampled)
    (branch,) = Trajectory.from_result(result, strict=True).branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == expected_branch(server.sampled)

    loaded = Transcript.from_json(result.transcript.to_json())
    assert loaded == result.transcript  # written whole: old readers and stores see what they always did
    assert [m.tokens.prompt_ids.tolist() for m in responses(loaded)] == [p for p, _, _ in server.sampled]
    assert Trajectory.from_messages(loaded).to_dict() == Trajectory.from_result(result).to_dict()
    again = pickle.loads(pickle.dumps(result.transcript))  # how several processes and Ray hand results back
    assert [m.tokens.prompt_ids.tolist() for m in responses(again)] == [p for p, _, _ in server.sampled]


async def test_a_prompt_that_does_not_continue_the_previous_turn_keeps_its_whole_ids() -> None:
    with serve(lookup_policy, keep_reasoning=False) as server:  # the template drops the earlier <think>
        result = await agent_for(server).run("hi")
    first, second = (message.tokens for message in responses(result.transcript))
    assert first is not None and second is not None
    assert second.prompt_ids.tolist() == server.sampled[1][0]
    assert second.extends is None or not second.extends.completion  # a shared start, not the first turn
    assert len(Trajectory.from_result(result).branches) == 2


def test_continuing_is_exact_and_refuses_what_is_not_a_continuation() -> None:
    first = Tokens.of([1, 2, 3], [4, 5], [-0.5, -0.25])
    second = Tokens.of([1, 2, 3, 4, 5, 6, 7], [8], [-1.0]).continuing(first)
    assert second.extends is first and second.prompt_ids.tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert second == Tokens.of([1, 2, 3, 4, 5, 6, 7], [8], [-1.0])  # compares by the whole prompt
    assert hash(second) == hash(Tokens.of([1, 2, 3, 4, 5, 6, 7], [8], [-1.0]))
    third = Tokens.of([1, 2, 3, 4, 5, 6, 7, 8, 9], [10]).continuing(second)
    assert third.extends is second and third.whole_prompt == array("i", range(1, 10)).tobytes()
    assert third.prompt_ids.tolist() == list(range(1, 10)) and "prompt=9 ids" in repr(third)
    for other in ([1, 2, 9, 4, 5, 6], [1, 2, 3, 4], [1, 2, 3, 4, 6, 6]):  # edited, pruned, another completion
        kept = Tokens.of(other, [8]).continuing(first)
        assert kept.extends is None and kept.prompt_ids.tolist() == other
    broken = Tokens(first.prompt, first.completion, problem="the server sent 1 logprobs for 2 completion ids")
    assert Tokens.of([1, 2, 3, 4, 5, 6], [8]).continuing(broken).extends is None


async def test_batch_records_hold_the_tokens_once_and_read_back_the_exact_trajectory(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    kept: list[RunResult] = []
    with serve(two_rounds_policy) as server:
        summary = await run_many(
            agent_for(server), [BatchItem("a", "go")], results=out, on_result=lambda _, result: kept.append(result)
        )
    assert summary.errors == 0
    record = json.loads(out.read_text())
    ids, logprobs, mask = expected_branch(server.sampled)
    assert record["trajectory"] == {  # the shapes only: the ids and logprobs are the transcript's
        "tokens": "transcript",
        "branches": [{"responses": [1, 2, 3], "reason": "first response", "length": len(ids), "sampled": sum(mask)}],
        "unused": [],
    }
    from_record = Trajectory.from_record(record, strict=True)
    (branch,) = from_record.branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == (ids, logprobs, mask)
    in_memory = Trajectory.from_result(kept[0], strict=True)
    assert from_record.to_dict() == in_memory.to_dict()
    assert from_record.to_dataset_row(reward=1.0) == in_memory.to_dataset_row(reward=1.0)
    plain = from_record.to_dict()  # the list form, as records of earlier versions could hold it
    assert Trajectory.from_record({**record, "trajectory": plain}).to_dict() == plain
    compact = from_record.to_dict(compact=True)  # the base64 arrays, as the version before wrote them
    assert Trajectory.from_record({**record, "trajectory": compact}).to_dict() == plain


async def test_a_record_written_with_the_trajectory_arrays_still_loads() -> None:
    """``data/record_with_arrays.jsonl``: the same conversation as written by the version before
    records referred to their transcript (the branch's ids, mask and sampled logprobs in base64)."""
    old = json.loads((Path(__file__).parent / "data" / "record_with_arrays.jsonl").read_text())
    assert set(old["trajectory"]["branches"][0]) >= {"token_ids", "loss_mask", "sampled_logprobs"}
    with serve(two_rounds_policy) as server:  # deterministic: the same ids and logprobs again
        result = await agent_for(server).run("go")
    trajectory = Trajectory.from_record(old, strict=True)
    assert trajectory.to_dict() == Trajectory.from_result(result, strict=True).to_dict()
    assert trajectory.to_dict() == Trajectory.from_record({"transcript": old["transcript"]}).to_dict()
    (branch,) = trajectory.branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == expected_branch(server.sampled)


def _short_ids_on_the_second(answer: Any, number: int) -> None:
    if number == 2:
        answer["choices"][0]["token_ids"].pop()


@pytest.mark.parametrize(
    ("policy", "options"),
    [(lookup_policy, {"keep_reasoning": False}), (two_rounds_policy, {"mangle": _short_ids_on_the_second})],
    ids=["not-append-only", "unusable-response"],
)
async def test_records_of_several_branches_and_unused_responses_read_back_as_built(
    tmp_path: Path, policy: Any, options: dict[str, Any]
) -> None:
    out = tmp_path / "out.jsonl"
    kept: list[RunResult] = []
    with serve(policy, **options) as server:
        await run_many(agent_for(server), ["go"], results=out, on_result=lambda _, result: kept.append(result))
    record = json.loads(out.read_text())
    built = Trajectory.from_result(kept[0])
    assert len(built.branches) == 2
    assert [b["reason"] for b in record["trajectory"]["branches"]] == [b.reason for b in built.branches]
    assert record["trajectory"]["unused"] == list(built.unused)
    assert Trajectory.from_record(record).to_dict() == built.to_dict()
    assert Trajectory.from_record(record).to_dataset_rows(0.5) == built.to_dataset_rows(0.5)
    with pytest.raises(TrajectoryError):
        Trajectory.from_record(record, strict=True)


async def test_a_record_whose_transcript_does_not_give_its_trajectory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(two_rounds_policy) as server:
        await run_many(agent_for(server), ["go"], results=out)
    record = json.loads(out.read_text())
    shape = record["trajectory"]["branches"][0]
    for wrong in ({**shape, "length": shape["length"] + 1}, {**shape, "responses": [1, 3]}, {**shape, "sampled": 1}):
        with pytest.raises(TrajectoryError, match="the record's transcript gives branches"):
            Trajectory.from_record({**record, "trajectory": {**record["trajectory"], "branches": [wrong]}})
    with pytest.raises(TrajectoryError, match="the record's transcript gives branches"):
        Trajectory.from_record({**record, "trajectory": {**record["trajectory"], "branches": []}})
    with pytest.raises(TrajectoryError, match="cannot be read"):
        Trajectory.from_record({**record, "trajectory": {"tokens": "transcript", "branches": [{"length": 3}]}})
    with pytest.raises(TrajectoryError, match="has none"):
        Trajectory.from_record({"trajectory": record["trajectory"]})
    with pytest.raises(TrajectoryError, match="from_record"):
        Trajectory.from_dict(record["trajectory"])  # its tokens are elsewhere: never an empty trajectory


def test_a_compact_branch_that_does_not_line_up_is_refused() -> None:
    branch = Trajectory.from_dict(
        {"branches": [{"token_ids": [1, 2], "logprobs": [None, -0.5], "loss_mask": [0, 1]}]}
    ).branches[0]
    compact = branch.to_dict(compact=True)
    assert Trajectory.from_dict({"branches": [compact]}).branches[0].to_dict() == branch.to_dict()
    with pytest.raises(TrajectoryError, match="one length"):
        Trajectory.from_dict({"branches": [{**compact, "loss_mask": base64.b64encode(b"\1").decode()}]})
    with pytest.raises(TrajectoryError, match="1 sampled logprobs for a mask of 2 sampled tokens"):
        Trajectory.from_dict({"branches": [{**compact, "loss_mask": base64.b64encode(b"\1\1").decode()}]})
    with pytest.raises(TrajectoryError, match="cannot be read"):
        Trajectory.from_dict({"branches": [{**compact, "token_ids": "not base64!"}]})
