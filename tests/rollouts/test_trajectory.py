"""Trajectory: the token-level view of a conversation, checked against what the server sampled."""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import pytest

from tooloop.rollouts import Branch, Trajectory, TrajectoryError
from tooloop.testing.token_server import serve

from .conftest import agent_for, expected_branch, lookup_policy, two_calls_policy, two_rounds_policy


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_an_append_only_conversation_is_one_exactly_aligned_branch(stream: bool) -> None:
    with serve(two_rounds_policy) as server:
        result = await agent_for(server, stream=stream).run("go")
    assert result.text == "done: K0,K1"
    trajectory = Trajectory.from_result(result, strict=True)
    (branch,) = trajectory.branches
    ids, logprobs, mask = expected_branch(server.sampled)
    assert branch.token_ids == ids
    assert branch.loss_mask == mask
    assert branch.logprobs == logprobs
    assert len(branch) == len(ids) and branch.reason == "first response"
    assert branch.responses == (1, 2, 3)
    assert sum(mask) == sum(len(c) for _, c, _ in server.sampled)


async def test_a_multi_call_turn_counts_as_one_response() -> None:
    with serve(two_calls_policy) as server:
        result = await agent_for(server).run("go")
    (branch,) = Trajectory.from_result(result, strict=True).branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == expected_branch(server.sampled)


async def test_a_template_that_is_not_append_only_starts_a_new_branch_with_the_reason() -> None:
    with serve(lookup_policy, keep_reasoning=False) as server:  # earlier turns lose their <think> block
        result = await agent_for(server).run("hi")
    trajectory = Trajectory.from_result(result)
    first, second = trajectory.branches
    assert (first.token_ids, first.logprobs, first.loss_mask) == expected_branch(server.sampled[:1])
    assert (second.token_ids, second.logprobs, second.loss_mask) == expected_branch(server.sampled[1:])
    assert second.reason.startswith("the prompt of the response at message 2 does not extend the previous branch")
    assert "first difference at token" in second.reason
    assert trajectory.unused == ()
    with pytest.raises(TrajectoryError, match="does not extend"):
        Trajectory.from_result(result, strict=True)
    with pytest.raises(TrajectoryError, match="use to_dataset_rows"):
        trajectory.to_dataset_row()


def _no_ids_on_the_second(answer: Any, number: int) -> None:
    if number == 2:
        answer.pop("prompt_token_ids")
        answer["choices"][0].pop("token_ids")


def _short_ids_on_the_second(answer: Any, number: int) -> None:
    if number == 2:
        answer["choices"][0]["token_ids"].pop()


@pytest.mark.parametrize(
    ("mangle", "problem"),
    [
        (_no_ids_on_the_second, "the server sent no token ids"),
        (_short_ids_on_the_second, "completion ids but counted"),
    ],
    ids=["ids-then-none", "wrong-length"],
)
async def test_unusable_tokens_are_never_trained_on_and_the_next_response_branches(mangle: Any, problem: str) -> None:
    with serve(two_rounds_policy, mangle=mangle) as server:
        result = await agent_for(server).run("go")
    trajectory = Trajectory.from_result(result)
    assert len(trajectory.unused) == 1 and problem in trajectory.unused[0]
    assert trajectory.unused[0].startswith("the response at message 2:")
    first, third = trajectory.branches
    assert (first.token_ids, first.logprobs, first.loss_mask) == expected_branch(server.sampled[:1])
    assert (third.token_ids, third.logprobs, third.loss_mask) == expected_branch(server.sampled[2:])
    assert third.reason == trajectory.unused[0] and third.responses == (3,)
    for branch in trajectory.branches:
        assert len(branch.token_ids) == len(branch.logprobs) == len(branch.loss_mask)
    with pytest.raises(TrajectoryError, match="the response at message 2"):
        Trajectory.from_result(result, strict=True)


async def test_without_capture_there_is_nothing_to_train_on() -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server, capture=False).run("hi")
    trajectory = Trajectory.from_result(result)
    assert trajectory.branches == ()
    assert len(trajectory.unused) == 2 and "has no tokens" in trajectory.unused[0]


async def test_to_dict_is_plain_json_and_reads_back() -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server).run("hi")
    trajectory = Trajectory.from_result(result)
    data = json.loads(json.dumps(trajectory.to_dict()))
    again = Trajectory.from_dict(data)
    assert again.to_dict() == data
    (branch,) = data["branches"]
    assert set(branch) == {"token_ids", "logprobs", "loss_mask", "responses", "reason"}
    bad = {"branches": [{**branch, "loss_mask": branch["loss_mask"][:-1]}]}
    with pytest.raises(TrajectoryError, match="of one length"):
        Trajectory.from_dict(bad)


async def test_the_dataset_row_splits_prompt_and_completion_at_the_first_sampled_token() -> None:
    with serve(two_rounds_policy) as server:
        result = await agent_for(server).run("go")
    row = Trajectory.from_result(result).to_dataset_row(reward=1.0)
    prompt, completion, _ = server.sampled[0]
    ids, logprobs, mask = expected_branch(server.sampled)
    assert row["prompt_ids"] == prompt and row["prompt_mask"] == [1] * len(prompt)
    assert row["completion_ids"] == ids[len(prompt) :]
    assert row["completion_mask"] == row["env_mask"] == mask[len(prompt) :]
    assert row["completion_logprobs"] == row["logprobs"] == [v or 0.0 for v in logprobs[len(prompt) :]]
    assert row["completion_ids"][: len(completion)] == completion
    assert row["reward"] == 1.0
    assert Trajectory.from_result(result).to_dataset_row({"reward": 0.5, "format": 1.0})["format"] == 1.0


def test_dataset_row_logprobs_are_zero_wherever_none_was_sampled_or_given() -> None:
    values = [None, None, -0.5, None, -0.0, -2.0, None, -1e-30, -9999.0, None]
    mask = [0, 0, 1, 0, 1, 1, 1, 1, 1, 0]  # a sampled token without a logprob at 6
    branch = Branch.from_dict({"token_ids": list(range(10)), "logprobs": values, "loss_mask": mask})
    row = branch.dataset_row()
    expected = [0.0 if v is None else array("f", [v])[0] for v in values[2:]]
    assert row["completion_logprobs"] == expected and row["completion_mask"] == mask[2:]
    assert [math.copysign(1, v) for v in row["logprobs"]] == [math.copysign(1, v) for v in expected]
    whole = Branch.from_dict({"token_ids": [1, 2, 3], "logprobs": [None, -1.5, -0.25], "loss_mask": [0, 1, 1]})
    assert whole.dataset_row()["logprobs"] == [-1.5, -0.25] and whole.dataset_row()["prompt_ids"] == [1]
