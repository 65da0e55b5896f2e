"""Token-in: later turns sent as the previous ids plus the new messages' tokens (vLLM completions, SGLang input_ids)."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop.errors import ConfigurationError
from tooloop.messages import ToolCallMessage
from tooloop.models import get_model
from tooloop.models.openai_chat.token_in import hermes_calls
from tooloop.rollouts import Trajectory
from tooloop.testing.token_server import serve

from .conftest import agent_for, expected_branch, lookup_policy, responses, two_rounds_policy


@pytest.mark.parametrize("keep_reasoning", [True, False], ids=["append-only", "drops-reasoning"])
async def test_token_in_keeps_one_branch_even_when_the_template_is_not_append_only(keep_reasoning: bool) -> None:
    with serve(two_rounds_policy, keep_reasoning=keep_reasoning) as server:
        result = await agent_for(server, token_in=True).run("go")
    assert result.text == "done: K0,K1"
    (branch,) = Trajectory.from_result(result, strict=True).branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == expected_branch(server.sampled)
    first, *later = server.requests
    assert "messages" in first  # nothing to continue yet: the chat endpoint, capturing
    for body in later:
        assert body["prompt"] == server.sampled[server.requests.index(body)][0]
        assert body["return_token_ids"] is True and body["logprobs"] == 0
        assert body["max_tokens"] > 16  # never vLLM's default of 16 for completions
    calls = [m for m in result.transcript if isinstance(m, ToolCallMessage)]
    assert [(c.tool_name, dict(c.arguments), c.content) for c in calls] == [
        ("lookup", {"key": "k0"}, "K0"),
        ("lookup", {"key": "k1"}, "K1"),
    ]


async def test_message_in_on_the_same_template_branches() -> None:
    with serve(lookup_policy, keep_reasoning=False) as server:
        result = await agent_for(server).run("hi")
    assert len(Trajectory.from_result(result).branches) == 2  # what token-in avoids


async def test_without_tokenize_it_falls_back_to_messages_and_says_so() -> None:
    with serve(lookup_policy, keep_reasoning=False, tokenize_endpoint=False) as server:
        result = await agent_for(server, token_in=True).run("hi")
    assert all("messages" in body for body in server.requests)
    second = responses(result.transcript)[1]
    assert second.tokens is not None and second.tokens.fallback == "the server's /tokenize answered 404"
    _, again = Trajectory.from_result(result).branches
    assert again.reason.endswith("it was sent as messages: the server's /tokenize answered 404")
    assert (again.token_ids, again.logprobs, again.loss_mask) == expected_branch(server.sampled[1:])


def _no_ids_first(answer: Any, number: int) -> None:
    if number == 1:
        answer.pop("prompt_token_ids")
        answer["choices"][0].pop("token_ids")


async def test_unusable_previous_tokens_fall_back_to_messages() -> None:
    with serve(lookup_policy, mangle=_no_ids_first) as server:
        result = await agent_for(server, token_in=True).run("hi")
    second = responses(result.transcript)[1]
    assert second.tokens is not None and second.tokens.fallback is not None
    assert second.tokens.fallback.startswith("the previous response's tokens cannot be used: the server sent no token")
    assert "messages" in server.requests[1]


def _sglang(answer: Any, number: int) -> None:
    choice = answer["choices"][0]
    choice["prompt_token_ids"] = answer.pop("prompt_token_ids")


async def test_sglang_token_in_sends_input_ids_to_its_chat_endpoint() -> None:
    with serve(two_rounds_policy, keep_reasoning=False, mangle=_sglang) as server:
        result = await agent_for(server, token_in=True, token_server="sglang").run("go")
    (branch,) = Trajectory.from_result(result, strict=True).branches
    assert (branch.token_ids, branch.logprobs, branch.loss_mask) == expected_branch(server.sampled)
    assert "input_ids" not in server.requests[0]
    for number, body in enumerate(server.requests[1:], 1):
        assert body["input_ids"] == server.sampled[number][0] and "messages" in body


def test_hermes_calls_are_read_as_the_servers_parser_would() -> None:
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>'
    text = f"<think>plan</think>Sure.\n{call}<tool_call>{{bad</tool_call>"
    reasoning, head, calls = hermes_calls(text)
    assert (reasoning, head) == ("plan", "Sure.\n")
    assert calls == [(None, "add", '{"a": 1}'), (None, "", "{bad")]
    assert hermes_calls("just text") == ("", "just text", [])


def test_token_in_needs_capture_and_the_lean_transport() -> None:
    with pytest.raises(ConfigurationError, match="token_in=True needs capture_tokens=True"):
        get_model("vllm:toy", token_in=True)
    with pytest.raises(ConfigurationError, match="token_in needs the lean transport"):
        get_model("vllm:toy", capture_tokens=True, token_in=True, transport="sdk")
