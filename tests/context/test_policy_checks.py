"""``ContextPolicy`` checks its values where they are given, and takes a plain function as counter."""

from __future__ import annotations

from typing import Any

import pytest

from tooloop import Agent, AssistantMessage, UserMessage
from tooloop.context import ContextPolicy, FunctionCounter, middle_out, oldest_first, recent_turns
from tooloop.context.strategies import Budget, OldestFirst
from tooloop.context.summary import Summarize, summarize
from tooloop.context.tokens import TiktokenCounter
from tooloop.errors import ArgumentTypeError, ArgumentValueError
from tooloop.testing import ScriptedModel


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"max_tokens": "100000"}, ArgumentTypeError, "max_tokens=...) takes a whole number, got str"),
        ({"max_tokens": 0}, ArgumentValueError, "max_tokens=...) must be at least 1"),
        ({"max_tokens": True}, ArgumentTypeError, "max_tokens"),
        ({"max_messages": 2.5}, ArgumentTypeError, "max_messages"),
        ({"preserve_system": "yes"}, ArgumentTypeError, "preserve_system"),
        ({"min_recent_turns": -1}, ArgumentValueError, "min_recent_turns"),
        ({"window_fraction": "0.5"}, ArgumentTypeError, "window_fraction"),
        ({"window_fraction": 1.5}, ArgumentValueError, "window_fraction must be in (0, 1]"),
        ({"strategy": "middle-out"}, ArgumentValueError, "'middle-out') is no strategy; use oldest_first, middle_out"),
        ({"strategy": "recent_turns"}, ArgumentValueError, "recent_turns(n)"),
        ({"strategy": 3}, ArgumentTypeError, "strategy=...) got"),
        ({"counter": "tiktoken"}, ArgumentTypeError, "counter=...) got"),
    ],
)
def test_a_bad_value_fails_where_the_policy_is_made(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as raised:
        ContextPolicy(**options)
    assert words in str(raised.value)


def test_strategies_by_name() -> None:
    assert ContextPolicy(strategy="oldest_first").strategy is oldest_first
    assert ContextPolicy(strategy="middle_out").strategy is middle_out
    assert isinstance(ContextPolicy(strategy="summarize").strategy, Summarize)
    assert ContextPolicy(strategy=recent_turns(2)).strategy == recent_turns(2)


def test_a_plain_function_of_a_text_counts_tokens() -> None:
    texts: list[str] = []

    def words(text: str) -> int:
        texts.append(text)
        return len(text.split())

    policy = ContextPolicy(max_tokens=30, counter=words)
    assert isinstance(policy.counter, FunctionCounter)
    messages = [UserMessage(f"question {i} " + "word " * 10) for i in range(5)]
    kept = policy.prune(messages, policy.budget(), policy.counter_for(None))
    # each message is 12 words + 4 overhead = 16: only the latest fits in 30
    assert kept == messages[-1:]
    assert texts[0].startswith("question 0")


async def test_a_function_counter_prunes_a_real_run() -> None:
    model = ScriptedModel(["one", "two"])
    policy = ContextPolicy(max_tokens=40, counter=lambda text: len(text.split()))
    history = [UserMessage("old " * 30), AssistantMessage("fine")]
    await Agent(model, context=policy).run("new question", history=history)
    sent = model.requests[0].messages
    assert [m.text for m in sent] == ["new question"]  # the 30-word turn did not fit


def test_a_counter_returning_no_count_is_an_error_naming_it() -> None:
    def broken(text: str) -> Any:
        return "many"

    policy = ContextPolicy(counter=broken)
    with pytest.raises(ArgumentValueError, match="broken must return a whole number >= 0"):
        policy.prune([UserMessage("hi")], Budget(10), policy.counter_for(None))


def _two(a: str, b: str) -> int:
    return 1


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"counter": TiktokenCounter}, "got the class TiktokenCounter; pass an instance, e.g. TiktokenCounter()"),
        ({"counter": lambda: 3}, "cannot be called with 1 argument; pass a function giving the tokens of a text"),
        ({"counter": _two}, "got _two(a, b), which cannot be called with 1 argument"),
        ({"strategy": recent_turns}, "call it: strategy=recent_turns(n)"),
        ({"strategy": summarize}, "call it: strategy=summarize()"),
        ({"strategy": OldestFirst}, "call it: strategy=OldestFirst()"),
        (
            {"strategy": lambda messages: messages},
            "cannot be called with 2 arguments; pass a function (messages, budget)",
        ),
    ],
)
def test_a_counter_or_strategy_that_cannot_be_called_so_fails_where_given(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ArgumentTypeError) as raised:
        ContextPolicy(**options)
    assert words in str(raised.value)


def test_functions_that_can_be_called_so_are_taken() -> None:
    def keep(messages: Any, budget: Any, *, note: str = "") -> Any:
        return messages

    assert ContextPolicy(counter=len, strategy=keep).strategy is keep
    assert isinstance(ContextPolicy(counter=lambda text, scale=1: len(text) * scale).counter, FunctionCounter)


@pytest.mark.parametrize(
    ("turns", "error"), [(0, ArgumentValueError), ("3", ArgumentTypeError), (True, ArgumentTypeError)]
)
def test_recent_turns_checks_its_count(turns: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="recent_turns"):
        recent_turns(turns)
