"""Captured tokens kept compactly: each turn's prompt as the ids after the previous turn's, and
batch records' trajectories as base64 arrays; every reader still sees the whole, exact ids."""

from __future__ import annotations

import base64
import json
import pickle
from array import array
from pathlib import Path

import pytest

from tooloop import Transcript
from tooloop.batch import BatchItem, run_many
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


async def test_batch_records_hold_the_trajectory_as_base64_arrays_and_read_back_exactly(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(two_rounds_policy) as server:
        summary = await run_many(agent_for(server), [BatchItem("a", "go")], results=out)
    assert summary.errors == 0
    record = json.loads(out.read_text())
    (stored,) = record["trajectory"]["branches"]
    ids, logprobs, mask = expected_branch(server.sampled)
    assert array("i", base64.b64decode(stored["token_ids"])).tolist() == ids  # little-endian int32
    assert base64.b64decode(stored["loss_mask"]) == bytes(mask)
    values = array("f", base64.b64decode(stored["sampled_logprobs"]))  # the sampled tokens' only, 32-bit
    assert [None if v != v else v for v in values] == [p for p, m in zip(logprobs, mask, strict=True) if m]
    assert "logprobs" not in stored and len(values) == sum(mask) < len(mask)
    from_record = Trajectory.from_record(record, strict=True)
    assert from_record.to_dict() == Trajectory.from_record({"transcript": record["transcript"]}).to_dict()
    plain = from_record.to_dict()  # the list form, as records of earlier versions hold it
    assert Trajectory.from_record({**record, "trajectory": plain}).to_dict() == plain


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
