"""The compact forms captured tokens take to keep capture's cost bounded: logprobs as 32-bit floats
(64-bit ones, as earlier versions stored them, still read), prompt starts shared across the
conversations of one model, and the typed reading of a captured answer (with the general reader
taking over whatever it does not expect)."""

from __future__ import annotations

import base64
import json
import pickle
from array import array
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tooloop import Agent
from tooloop.batch import BatchItem, run_many
from tooloop.messages import AssistantMessage, Tokens
from tooloop.rollouts import Trajectory
from tooloop.testing.token_server import Sample, serve
from tooloop.transcript import Transcript, tokens_from_dict, tokens_to_dict

from .conftest import agent_for, expected_branch, f32, lookup, lookup_policy, responses


def _b64(values: array[Any]) -> str:
    return base64.b64encode(values.tobytes()).decode()


def test_logprobs_are_32_bit_floats_and_round_trip_with_nones() -> None:
    tokens = Tokens.of([1, 2], [3, 4, 5], [-0.5, None, -1e-9])
    assert len(tokens.logprobs) == 4 * 3
    assert tokens.completion_logprobs == [-0.5, None, array("f", [-1e-9])[0]]
    again = tokens_from_dict(json.loads(json.dumps(tokens_to_dict(tokens))))
    assert again == tokens and again.completion_logprobs == tokens.completion_logprobs
    assert tokens_to_dict(Tokens.of([1], [2], [None])).keys() == {"prompt", "completion"}  # no logprob at all


def test_64_bit_logprobs_as_earlier_versions_stored_them_still_load() -> None:
    values = [-0.51, -1.25, -3.0000001]
    stored = {
        "prompt": _b64(array("i", [7, 8])),
        "completion": _b64(array("i", [1, 2, 3])),
        "logprobs": _b64(array("d", values)),
    }
    tokens = tokens_from_dict(stored)  # (a little-endian machine: the stored order is native here)
    assert tokens.completion_logprobs == f32(values)
    assert tokens == Tokens.of([7, 8], [1, 2, 3], values)
    direct = Tokens(array("i", [7, 8]).tobytes(), array("i", [1, 2, 3]).tobytes(), array("d", values).tobytes())
    assert direct.logprobs == tokens.logprobs  # 64-bit bytes given directly are narrowed too
    with pytest.raises(ValueError, match="2 logprobs for 3 completion ids"):
        tokens_from_dict({**stored, "logprobs": _b64(array("f", values[:2]))})


def test_a_record_trajectory_with_64_bit_sampled_logprobs_still_loads() -> None:
    branch = {
        "token_ids": _b64(array("i", [5, 6, 7])),
        "sampled_logprobs": _b64(array("d", [-0.51, -0.25])),
        "loss_mask": base64.b64encode(b"\0\1\1").decode(),
    }
    (read,) = Trajectory.from_dict({"branches": [branch]}).branches
    assert read.logprobs == f32([None, -0.51, -0.25]) and read.token_ids == [5, 6, 7]
    compact = read.to_dict(compact=True)
    assert len(base64.b64decode(compact["sampled_logprobs"])) == 2 * 4  # written back as 32-bit floats
    assert Trajectory.from_dict({"branches": [compact]}).branches[0].to_dict() == read.to_dict()


def test_empty_completions_and_very_long_prompts_round_trip() -> None:
    empty = Tokens.of([1, 2, 3], [], [])
    assert empty.completion_logprobs == [] and empty.logprobs == b"" and not empty.ok
    assert tokens_from_dict(tokens_to_dict(empty)) == empty
    prompt = list(range(200_000))  # a long context, ids past 2**16 included
    first = Tokens.of(prompt, [2**31 - 1, 0], [-0.5, None])
    second = Tokens.of([*prompt, 2**31 - 1, 0, 9, 10], [11], [-2.0]).continuing(first)
    assert second.extends is first and len(second.prompt) == 2 * 4  # the two new ids only
    assert second.prompt_ids.tolist() == [*prompt, 2**31 - 1, 0, 9, 10]
    transcript = Transcript([AssistantMessage("a", tokens=first), AssistantMessage("b", tokens=second)])
    loaded = Transcript.from_json(transcript.to_json())
    assert loaded == transcript
    (branch,) = Trajectory.from_messages(loaded, strict=True).branches
    assert branch.token_ids == [*prompt, 2**31 - 1, 0, 9, 10, 11]
    assert branch.logprobs[-5:] == [-0.5, None, None, None, -2.0]


@pytest.mark.parametrize("bad", [[-1], [2**31], [2**40], ["7"], [1.5]])
def test_ids_out_of_range_are_refused(bad: list[Any]) -> None:
    with pytest.raises(ValueError, match="ints from 0 to 2\\*\\*31-1"):
        Tokens.of(bad, [1])


def _system_policy(messages: list[dict[str, Any]], number: int) -> Sample:
    last = messages[-1]
    if last["role"] == "user":
        return Sample(text="looking", calls=(("lookup", {"key": last["content"]}),))
    return Sample(text=f"answer: {last['content']}")


async def test_conversations_of_one_model_hold_the_start_they_share_once(tmp_path: Path) -> None:
    """A GRPO-style batch: groups of identical prompts under one system prompt and tool set."""
    system = "You look things up. " * 8
    items = [BatchItem(f"{q}-{k}", f"question {q}") for q in range(3) for k in range(4)]
    kept: list[Any] = []
    out = tmp_path / "out.jsonl"
    with serve(_system_policy) as server:
        agent = Agent(agent_for(server).model, tools=[lookup], system=system)
        summary = await run_many(
            agent, items, results=out, concurrency=1, on_result=lambda _, result: kept.append(result)
        )
    assert summary.errors == 0
    firsts = [responses(result.transcript)[0].tokens for result in kept]
    assert all(t is not None and t.ok for t in firsts)
    heads = {id(t.extends) for t in firsts[1:] if t is not None and t.extends is not None}
    assert heads and len(firsts) - 1 == sum(1 for t in firsts[1:] if t is not None and t.extends is not None)
    for tokens in firsts[1:]:
        assert tokens is not None and tokens.extends is not None and not tokens.extends.completion
    assert len(heads) < len(firsts) - 1  # one head serves several conversations
    sent = {tuple(p) for p, _, _ in server.sampled}
    for result in kept:
        for message in responses(result.transcript):
            assert message.tokens is not None and tuple(message.tokens.prompt_ids) in sent  # the exact ids
    held = sum(len(t.prompt) for t in firsts if t is not None)
    assert held < sum(t.prompt_length * 4 for t in firsts if t is not None) / 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for record in records:  # written whole: readers need no head
        trajectory = Trajectory.from_record(record, strict=True)
        from_transcript = Trajectory.from_record({"transcript": record["transcript"]}, strict=True)
        assert trajectory.to_dict() == from_transcript.to_dict()


def _string_id(answer: Any, number: int) -> None:
    if number == 1:
        answer["choices"][0]["token_ids"][0] = "7"  # not an int: the typed reader hands over


async def test_an_answer_the_typed_reader_does_not_expect_is_read_the_general_way() -> None:
    with serve(lookup_policy, mangle=_string_id) as server:
        result = await agent_for(server).run("hi")
    first, second = responses(result.transcript)
    assert first.tokens is not None and first.tokens.problem is not None
    assert "unreadable token ids" in first.tokens.problem
    assert second.tokens is not None and second.tokens.ok
    assert second.tokens.completion_logprobs == f32(server.sampled[1][2])
    assert len(Trajectory.from_result(result).branches) == 1  # the flagged response is never trained on
    assert expected_branch(server.sampled[1:])[0] == Trajectory.from_result(result).branches[0].token_ids


def test_tokens_built_by_their_written_out_constructor_are_plain_frozen_tokens() -> None:
    wide = array("d", [-0.5, -1.25]).tobytes()  # 64-bit logprobs are narrowed on the way in
    tokens = Tokens(array("i", [1, 2]).tobytes(), array("i", [3, 4]).tobytes(), wide, None, "why")
    assert type(tokens) is Tokens
    assert (list(tokens.prompt_ids), list(tokens.completion_ids)) == ([1, 2], [3, 4])
    assert tokens.completion_logprobs == [-0.5, -1.25] and tokens.fallback == "why" and tokens.extends is None
    assert tokens != Tokens.of([1, 2], [3, 4], [-0.5, -1.25])  # the fallback differs
    with pytest.raises(AttributeError):
        tokens.prompt = b""  # type: ignore[misc]
    later = replace(tokens, fallback=None, extends=Tokens(b""))
    assert later == Tokens.of([1, 2], [3, 4], [-0.5, -1.25]) and later.extends == Tokens()
    assert pickle.loads(pickle.dumps(later)) == later

    class Mine(Tokens):
        pass

    mine = Mine(tokens.prompt, tokens.completion)
    assert type(mine) is Mine and mine.completion_ids.tolist() == [3, 4] and mine.logprobs == b""
