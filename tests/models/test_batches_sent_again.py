"""A tool batch goes out the same on every later request, and only the very same messages reuse it."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop.messages import ToolCallMessage, UserMessage
from tooloop.models import ModelRequest, ModelSettings
from tooloop.models.anthropic.request import build_body
from tooloop.models.openai_responses.request import ResponsesRequest


def _calls(*names: str) -> list[ToolCallMessage]:
    return [
        ToolCallMessage(tool_name=name, tool_call_id=f"call_{name}", arguments={"n": i}, content=str(i), batch_id="b")
        for i, name in enumerate(names)
    ]


def _anthropic(messages: list[Any]) -> Any:
    return build_body(ModelRequest(messages), model="claude-x", settings=ModelSettings(cache="off"), max_tokens=9)[0]


def _responses(messages: list[Any]) -> Any:
    return ResponsesRequest("gpt-x", include=None, reasoning=None).params(ModelRequest(messages), ModelSettings())


@pytest.mark.parametrize("body", [_anthropic, _responses])
def test_a_batch_sent_again_is_the_same_and_a_changed_one_is_read_anew(body: Any) -> None:
    first, second = _calls("a", "b")
    user = UserMessage("go")
    whole = body([user, first, second])
    assert body([user, first, second]) == whole
    alone = body([user, first])  # the same first call, the batch without its second
    fresh = body([user, _calls("a")[0]])  # equal messages, not the same objects
    assert alone == fresh
    assert "call_b" not in str(alone) and "call_b" in str(whole)
