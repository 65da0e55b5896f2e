"""Token capture on the OpenAI-compatible adapter, against a server speaking vLLM's (and SGLang's) shapes."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop.errors import ConfigurationError
from tooloop.messages import AssistantMessage, Tokens, ToolCallMessage
from tooloop.models import get_model
from tooloop.rollouts import Trajectory
from tooloop.testing.token_server import serve
from tooloop.transcript import Transcript

from .conftest import agent_for, expected_branch, f32, lookup_policy, responses, two_calls_policy, two_rounds_policy


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_each_response_keeps_the_servers_exact_ids_and_logprobs(stream: bool) -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server, stream=stream).run("héllo wörld")
    assert result.text == "answer: HÉLLO WÖRLD"
    recorded = responses(result.transcript)
    assert len(recorded) == len(server.sampled) == 2
    for message, (prompt, completion, logprobs) in zip(recorded, server.sampled, strict=True):
        assert message.tokens is not None and message.tokens.ok
        assert message.tokens.prompt_ids.tolist() == prompt
        assert message.tokens.completion_ids.tolist() == completion
        assert message.tokens.completion_logprobs == f32(logprobs)
    for body in server.requests:
        assert body["return_token_ids"] is True and body["logprobs"] is True


async def test_capture_is_off_by_default_and_asks_for_nothing() -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server, capture=False).run("hi")
    assert all(m.tokens is None for m in responses(result.transcript))
    assert all("return_token_ids" not in body and "logprobs" not in body for body in server.requests)


async def test_a_multi_call_turn_keeps_its_tokens_on_the_first_call_only() -> None:
    with serve(two_calls_policy) as server:
        result = await agent_for(server, stream=True).run("go")
    calls = [m for m in result.transcript if isinstance(m, ToolCallMessage)]
    assert [c.arguments["key"] for c in calls] == ["a", "b"]
    assert calls[0].tokens is not None and calls[0].tokens.completion_ids.tolist() == server.sampled[0][1]
    assert calls[1].tokens is None


async def test_a_server_that_ignores_the_request_leaves_a_problem_not_ids() -> None:
    with serve(lookup_policy, token_ids=False) as server:
        result = await agent_for(server).run("hi")
    for message in responses(result.transcript):
        assert message.tokens is not None and not message.tokens.ok
        assert message.tokens.problem == "the server sent no token ids (does it support return_token_ids?)"


def _none_logprobs(answer: Any, number: int) -> None:
    choice = answer["choices"][0]
    if number == 1:
        choice["logprobs"] = None  # no logprobs at all on the first response
    else:
        choice["logprobs"]["content"][0]["logprob"] = None


async def test_missing_logprobs_are_none_and_the_ids_stay_good() -> None:
    with serve(lookup_policy, mangle=_none_logprobs) as server:
        result = await agent_for(server).run("hi")
    first, second = responses(result.transcript)
    assert first.tokens is not None and first.tokens.ok
    assert first.tokens.completion_logprobs == [None] * len(server.sampled[0][1])
    assert second.tokens is not None and second.tokens.ok
    assert second.tokens.completion_logprobs == f32([None, *server.sampled[1][2][1:]])


def _short_ids(answer: Any, number: int) -> None:
    if number == 2:
        answer["choices"][0]["token_ids"].pop()


async def test_ids_of_the_wrong_length_are_kept_with_a_problem() -> None:
    with serve(lookup_policy, mangle=_short_ids) as server:
        result = await agent_for(server).run("hi")
    first, second = responses(result.transcript)
    assert first.tokens is not None and first.tokens.ok
    count = len(server.sampled[1][1])
    assert second.tokens is not None and not second.tokens.ok
    assert second.tokens.problem == f"the server sent {count - 1} completion ids but counted {count} completion tokens"


def _short_stream_logprobs(chunks: Any, number: int) -> None:
    if number == 1:
        chunks[2]["choices"][0]["logprobs"]["content"].pop()


async def test_a_stream_with_fewer_logprobs_than_ids_is_flagged() -> None:
    with serve(lookup_policy, mangle=_short_stream_logprobs) as server:
        result = await agent_for(server, stream=True).run("hi")
    first = responses(result.transcript)[0]
    count = len(server.sampled[0][1])
    assert first.tokens is not None
    assert first.tokens.problem == f"the server sent {count - 1} logprobs for {count} completion ids"


def _sglang_shapes(answer: Any, number: int) -> None:
    """vLLM's answer moved into SGLang's: prompt ids on the choice, logprobs in meta_info."""
    choice = answer["choices"][0]
    choice["prompt_token_ids"] = answer.pop("prompt_token_ids")
    content = choice.pop("logprobs")["content"]
    ids = choice.pop("token_ids")
    choice["meta_info"] = {
        "output_token_logprobs": [[c["logprob"], i, c["token"]] for c, i in zip(content, ids, strict=True)]
    }


async def test_sglang_shapes_are_read_and_its_requests_stay_plain() -> None:
    with serve(lookup_policy, mangle=_sglang_shapes) as server:
        result = await agent_for(server, stream=True, token_server="sglang").run("hi")
    for message, (prompt, completion, logprobs) in zip(responses(result.transcript), server.sampled, strict=True):
        assert message.tokens is not None and message.tokens.ok
        assert message.tokens.prompt_ids.tolist() == prompt
        assert message.tokens.completion_ids.tolist() == completion
        assert message.tokens.completion_logprobs == f32(logprobs)
    for body in server.requests:
        assert "stream" not in body  # SGLang refuses prompt ids on a stream
        assert body["return_prompt_token_ids"] is True and body["return_meta_info"] is True


def test_bad_capture_options_are_refused_where_given() -> None:
    with pytest.raises(ConfigurationError, match="token_server must be one of"):
        get_model("vllm:toy", capture_tokens=True, token_server="tgi")
    with pytest.raises(ConfigurationError, match="capture_tokens must be True, False or 'ids'"):
        get_model("vllm:toy", capture_tokens="yes")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_ids_only_capture_asks_for_no_logprobs_and_keeps_the_same_ids(stream: bool) -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server, stream=stream, capture="ids").run("hi")
    for body in server.requests:
        assert body["return_token_ids"] is True and "logprobs" not in body
    for message, (prompt, completion, _) in zip(responses(result.transcript), server.sampled, strict=True):
        tokens = message.tokens
        assert tokens is not None and tokens.ok and tokens.logprobs == b""
        assert (tokens.prompt_ids.tolist(), tokens.completion_ids.tolist()) == (prompt, completion)
        assert tokens.completion_logprobs == [None] * len(completion)
    branch = Trajectory.from_result(result, strict=True).branches[0]
    ids, _, mask = expected_branch(server.sampled)
    assert (branch.token_ids, branch.loss_mask, branch.logprobs) == (ids, mask, [None] * len(ids))
    assert Transcript.from_json(result.transcript.to_json()) == result.transcript


async def test_ids_only_token_in_asks_the_completions_endpoint_for_no_logprobs() -> None:
    with serve(two_rounds_policy) as server:
        result = await agent_for(server, capture="ids", token_in=True).run("go")
    sent = [body for body in server.requests if "prompt" in body]
    assert sent and all("logprobs" not in body for body in sent)
    branch = Trajectory.from_result(result, strict=True).branches[0]
    assert branch.token_ids == expected_branch(server.sampled)[0] and set(branch.logprobs) == {None}


async def test_tokens_survive_the_transcripts_json_form() -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server).run("hi")
    again = Transcript.from_json(result.transcript.to_json())
    assert again == result.transcript
    assert [m.tokens for m in responses(again)] == [m.tokens for m in responses(result.transcript)]


def test_tokens_values_check_their_input() -> None:
    tokens = Tokens.of([1, 2], [3, 4, 5], [-0.5, None, -1.5])
    assert tokens.completion_logprobs == [-0.5, None, -1.5]
    assert Tokens.of([1], [2], [None]).logprobs == b""  # no logprob at all: nothing stored
    with pytest.raises(ValueError, match="2 logprobs for 3 completion ids"):
        Tokens.of([1], [1, 2, 3], [0.0, 0.0])
    with pytest.raises(ValueError, match="ints from 0"):
        Tokens.of([-3], [1])
    with pytest.raises(ValueError, match="a logprob must be a number"):
        Tokens.of([1], [1], ["x"])  # type: ignore[list-item]


def test_a_corrupt_tokens_field_names_the_message() -> None:
    data = Transcript([AssistantMessage("hi", tokens=Tokens.of([1], [2]))]).to_dicts()
    data[0]["tokens"]["completion"] = "AAA"  # 2 bytes: not whole ids
    with pytest.raises(Exception, match="message 0 of the transcript cannot be read"):
        Transcript.from_json({"version": 1, "messages": data})
