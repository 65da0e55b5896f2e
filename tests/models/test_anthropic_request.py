"""The Anthropic request body within a run: a request converts only the messages the run's previous
request did not send, and the body is always the one a request made from scratch gets, as dicts
(the SDK's path) and as the JSON the lean transport sends."""

from __future__ import annotations

import json
from typing import Any

from tooloop.messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, UserMessage
from tooloop.models import ModelRequest, ModelSettings
from tooloop.models.anthropic.request import AnthropicRequest, build_body
from tooloop.models.base import RunMemo


def _call(name: str, batch: str, content: str = "1") -> ToolCallMessage:
    return ToolCallMessage(
        tool_name=name, tool_call_id=f"call_{name}", arguments={"n": 1}, content=content, batch_id=batch
    )


def _body(messages: list[Message], memo: RunMemo | None, **request: Any) -> dict[str, Any]:
    settings = ModelSettings(cache_ttl="1h")  # breakpoints on: the latest messages get marked copies
    model_request = ModelRequest(messages, memo=memo, **request)
    return build_body(model_request, model="claude-x", settings=settings, max_tokens=9)[0]


def _sent(messages: list[Message], memo: RunMemo | None, **request: Any) -> Any:
    """What the lean transport sends, read back."""
    settings = ModelSettings(cache_ttl="1h")
    payload, _ = AnthropicRequest().payload(
        ModelRequest(messages, memo=memo, **request),
        model="claude-x",
        settings=settings,
        max_tokens=9,
        thinking=None,
        native_output=False,
        stream=False,
    )
    return json.loads(payload)


class Run:
    """One run's memo for the bodies as dicts, another for the JSON (a run takes one of the two paths)."""

    def __init__(self) -> None:
        self.memo = RunMemo()
        self.json_memo = RunMemo()


def _same_as_from_scratch(run: Run, messages: list[Message], **request: Any) -> dict[str, Any]:
    body = _body(messages, run.memo, **request)
    assert body == _body(messages, None, **request)
    assert _sent(messages, run.json_memo, **request) == _sent(messages, None, **request) == json.loads(json.dumps(body))
    return body


def test_each_request_of_a_run_sends_what_a_fresh_request_sends() -> None:
    memo = Run()
    history: list[Message] = [SystemMessage("Be brief."), UserMessage("go")]
    _same_as_from_scratch(memo, history)
    history += [_call("alpha", "1"), _call("beta", "1")]
    _same_as_from_scratch(memo, history)
    history += [UserMessage("and more"), SystemMessage("Still brief.")]  # merged into the results' turn
    body = _same_as_from_scratch(memo, history)
    assert body["system"][0]["text"] == "Be brief.\n\nStill brief."
    assert [block["type"] for block in body["messages"][-1]["content"]] == ["tool_result", "tool_result", "text"]
    history += [AssistantMessage("sure"), _call("gamma", "2")]
    body = _same_as_from_scratch(memo, history)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    _same_as_from_scratch(memo, history)  # the same request again


def test_a_rewritten_history_is_converted_anew() -> None:
    memo = Run()
    history: list[Message] = [UserMessage("go"), _call("alpha", "1", "long result"), UserMessage("next")]
    _same_as_from_scratch(memo, history)
    shorter = [history[0], _call("alpha", "1", "short"), history[2]]  # same length, a message replaced
    assert "short" in str(_same_as_from_scratch(memo, shorter))
    assert "long result" not in str(_same_as_from_scratch(memo, [*shorter, UserMessage("again")]))
    _same_as_from_scratch(memo, [UserMessage("fresh start")])  # fewer messages than before


def test_a_batch_that_goes_on_after_the_previous_request_is_sent_whole() -> None:
    memo = Run()
    history: list[Message] = [UserMessage("go"), _call("alpha", "1")]
    _same_as_from_scratch(memo, history)
    body = _same_as_from_scratch(memo, [*history, _call("beta", "1")])
    uses = [block["name"] for block in body["messages"][1]["content"] if block["type"] == "tool_use"]
    assert uses == ["alpha", "beta"] and len(body["messages"]) == 3


def test_the_tool_search_option_changes_what_is_sent_again() -> None:
    memo = Run()
    history: list[Message] = [UserMessage("go"), _call("alpha", "1")]
    _same_as_from_scratch(memo, history)
    _same_as_from_scratch(memo, [*history, UserMessage("next")], tool_search=True)
    _same_as_from_scratch(memo, [*history, UserMessage("next"), UserMessage("last")])
