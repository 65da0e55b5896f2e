"""Batch records keep each response's prompt as the ids after the previous response's
(``prompt_after``), and every reader still gets the whole, exact prompts back."""

from __future__ import annotations

import base64
import json
from array import array
from pathlib import Path

import pytest

from tooloop import Transcript
from tooloop.batch import BatchItem, run_many
from tooloop.batch._results import encode_record
from tooloop.errors import CorruptDataError
from tooloop.loop.result import RunResult
from tooloop.messages import AssistantMessage, Tokens, UserMessage
from tooloop.rollouts import Trajectory
from tooloop.testing.token_server import serve
from tooloop.transcript import tokens_from_dict, tokens_to_dict

from .conftest import agent_for, lookup_policy, responses, two_rounds_policy


async def test_records_keep_only_each_prompts_new_ids_and_read_back_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(two_rounds_policy) as server:
        summary = await run_many(agent_for(server), [BatchItem("a", "go")], results=out)
    assert summary.errors == 0
    record = json.loads(out.read_text())
    written = [m["tokens"] for m in record["transcript"]["messages"] if "tokens" in m]
    assert len(written) == len(server.sampled) == 3
    assert "prompt" in written[0] and "prompt_after" not in written[0]
    for (prompt, _, _), (before, completion, _), tokens in zip(
        server.sampled[1:], server.sampled[:-1], written[1:], strict=True
    ):
        assert "prompt" not in tokens
        after = array("i", base64.b64decode(tokens["prompt_after"])).tolist()
        assert before + completion + after == prompt  # only the ids the environment added
    loaded = Transcript.from_json(record["transcript"])
    assert [m.tokens.prompt_ids.tolist() for m in responses(loaded)] == [p for p, _, _ in server.sampled]
    assert Transcript.from_json(loaded.to_json()) == loaded  # Transcript.to_json() still writes them whole
    rebuilt = Trajectory.from_record({"transcript": record["transcript"]}, strict=True)
    assert rebuilt.to_dict() == Trajectory.from_record(record, strict=True).to_dict()


async def test_a_prompt_that_does_not_continue_is_written_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with serve(lookup_policy, keep_reasoning=False) as server:  # the template drops the earlier <think>
        await run_many(agent_for(server), [BatchItem("a", "hi")], results=out)
    record = json.loads(out.read_text())
    written = [m["tokens"] for m in record["transcript"]["messages"] if "tokens" in m]
    assert all("prompt" in tokens and "prompt_after" not in tokens for tokens in written)
    loaded = Transcript.from_json(record["transcript"])
    assert [m.tokens.prompt_ids.tolist() for m in responses(loaded)] == [p for p, _, _ in server.sampled]
    assert len(Trajectory.from_record({"transcript": record["transcript"]}).branches) == 2


def test_prompt_after_needs_the_previous_tokens() -> None:
    first = Tokens.of([1, 2], [3], [-0.5])
    second = Tokens.of([1, 2, 3, 4], [5], [-1.0]).continuing(first)
    data = tokens_to_dict(second, first)
    assert "prompt_after" in data and "prompt" not in data
    assert tokens_from_dict(data, first) == second
    assert tokens_to_dict(second) == tokens_to_dict(Tokens.of([1, 2, 3, 4], [5], [-1.0]))  # whole without it
    with pytest.raises(ValueError, match="prompt_after"):
        tokens_from_dict(data)
    message = {"kind": "assistant", "text": "x", "tokens": data}
    with pytest.raises(CorruptDataError, match="message 0"):
        Transcript.from_json({"version": 1, "messages": [message]})


async def test_records_write_the_token_arrays_as_transcript_json_does(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    kept: list[RunResult] = []
    with serve(two_rounds_policy) as server:
        await run_many(agent_for(server), ["go"], results=out, on_result=lambda _, result: kept.append(result))
    record = json.loads(out.read_text())
    messages = kept[0].transcript.to_dicts(prompt_extensions=True)  # the arrays as base64 text
    assert record["transcript"]["messages"] == json.loads(json.dumps(messages))


def test_a_record_msgspec_refuses_is_written_by_json_with_the_same_base64() -> None:
    first = Tokens.of([1, 2], [3], [-0.5])
    second = Tokens.of([1, 2, 3, 4], [5, 6], [-1.0, None]).continuing(first)
    transcript = Transcript(
        [UserMessage("hi"), AssistantMessage("x", tokens=first), AssistantMessage("y", tokens=second)]
    )
    messages = transcript.to_dicts(prompt_extensions=True, binary=True)
    record = {
        "id": "a",
        "metadata": {True: "a key msgspec refuses"},
        "transcript": {"version": 1, "messages": messages},
    }
    line = encode_record(record)  # json.dumps's way, the bytes as base64
    written = json.loads(line)
    assert written["metadata"] == {"true": "a key msgspec refuses"}
    assert written["transcript"]["messages"] == transcript.to_dicts(prompt_extensions=True)
    assert Transcript.from_json(written["transcript"]) == transcript
    assert json.loads(encode_record({"tokens": tokens_to_dict(first, binary=True)}))["tokens"] == tokens_to_dict(first)
