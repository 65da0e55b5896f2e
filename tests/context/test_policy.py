"""Invariants of every context strategy, on random transcripts (hypothesis), and the summary cache."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooloop.context import (
    Budget,
    ContextPolicy,
    EstimateCounter,
    TiktokenCounter,
    counter_for,
    is_summary,
    middle_out,
    oldest_first,
    recent_turns,
    summarize,
)
from tooloop.errors import ConfigurationError, ContextBudgetError
from tooloop.events import EventHandler
from tooloop.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    SystemMessage,
    ToolCallMessage,
    UserMessage,
)
from tooloop.models.base import ModelRequest

COUNTER = EstimateCounter()
text = st.text(alphabet="abcdefghij ", min_size=0, max_size=120)


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(text)))
    for turn in range(draw(st.integers(0, 8))):
        messages.append(UserMessage(draw(text)))
        for batch in range(draw(st.integers(0, 3))):
            size = draw(st.integers(1, 3))
            for k in range(size):
                messages.append(
                    ToolCallMessage(
                        tool_name="t",
                        tool_call_id=f"c{turn}-{batch}-{k}",
                        batch_id=f"b{turn}-{batch}",
                        arguments={"q": draw(text)},
                        content=draw(text),
                    )
                )
        if draw(st.booleans()):
            messages.append(AssistantMessage(draw(text)))
        if draw(st.integers(0, 9)) == 0:
            messages.append(SystemMessage(draw(text)))
    return messages


def drop_every_other(messages: Sequence[Message], budget: Budget) -> list[Message]:
    keep_always = {id(m) for m in messages if isinstance(m, SystemMessage)}
    users = [m for m in messages if isinstance(m, UserMessage)]
    if users:
        keep_always.add(id(users[-1]))
    return [m for i, m in enumerate(messages) if i % 2 == 0 or id(m) in keep_always]


class SummaryModel:
    """A model that summarises by counting what it was given (the Model protocol, implemented directly)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return "summarizer"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        self.requests.append(request)
        body = request.messages[-1].text  # type: ignore[union-attr]
        return ModelResponse(f"summary #{len(self.requests)} of {body.count(chr(10)) + 1} lines")


STRATEGIES = {
    "oldest_first": oldest_first,
    "middle_out": middle_out,
    "recent_turns_2": recent_turns(2),
    "custom": drop_every_other,
}


def check_invariants(original: list[Message], out: Sequence[Message], budget: Budget, preserve: bool) -> None:
    summaries = [m for m in out if is_summary(m)]
    assert len(summaries) <= 1
    body = [m for m in out if not is_summary(m)]
    # a subsequence of the input, in order, same objects
    it = iter(original)
    assert all(any(m is o for o in it) for m in body)
    if preserve:
        assert all(any(k is o for k in out) for o in original if isinstance(o, SystemMessage))
    users = [m for m in original if isinstance(m, UserMessage)]
    if users:
        assert any(m is users[-1] for m in out)
    sizes: dict[str, int] = {}
    for m in original:
        if isinstance(m, ToolCallMessage):
            sizes[m.batch_id] = sizes.get(m.batch_id, 0) + 1
    previous = None
    run = 0
    for m in [*out, None]:
        batch = m.batch_id if isinstance(m, ToolCallMessage) else None
        if batch != previous and previous is not None:
            assert run == sizes[previous], f"batch {previous} kept partly"
        run = run + 1 if batch == previous else 1
        previous = batch
    assert sum(COUNTER.count(m) for m in out) <= budget.tokens
    assert budget.messages is None or len(out) <= budget.messages


def required_cost(original: list[Message], preserve: bool) -> tuple[int, int]:
    users = [m for m in original if isinstance(m, UserMessage)]
    required = [m for m in original if preserve and isinstance(m, SystemMessage)] + users[-1:]
    return sum(COUNTER.count(m) for m in required), len(required)


@pytest.mark.parametrize("name", [*STRATEGIES, "summarize"])
@settings(max_examples=150, deadline=None)
@given(
    messages=transcripts(),
    tokens=st.integers(1, 800),
    max_messages=st.none() | st.integers(1, 20),
    preserve=st.booleans(),
    recent=st.integers(0, 3),
)
def test_invariants_hold_for_every_strategy(
    name: str, messages: list[Message], tokens: int, max_messages: int | None, preserve: bool, recent: int
) -> None:
    strategy = summarize(SummaryModel()) if name == "summarize" else STRATEGIES[name]
    policy = ContextPolicy(
        tokens, max_messages, preserve_system=preserve, min_recent_turns=recent, strategy=strategy, counter=COUNTER
    )
    before = list(messages)
    need_tokens, need_messages = required_cost(messages, preserve)
    try:
        out = asyncio.run(policy.prepare(tuple(messages)))
    except ContextBudgetError as exc:
        assert "cannot be made to fit" in str(exc)
        slack_tokens = 1024 + 16 if name == "summarize" else 0  # the summary's reserve
        assert need_tokens > tokens - slack_tokens or (
            max_messages is not None and need_messages > max_messages - (name == "summarize")
        )
        return
    assert messages == before  # never mutated
    budget = Budget(tokens, max_messages)
    check_invariants(messages, out, budget, preserve)
    total = sum(COUNTER.count(m) for m in messages)
    if total <= tokens and (max_messages is None or len(messages) <= max_messages):
        assert list(out) == messages  # nothing pruned when it fits


def long_chat(turns: int) -> list[Message]:
    messages: list[Message] = [SystemMessage("sys")]
    for i in range(turns):
        messages.append(UserMessage(f"question {i} " + "x" * 200))
        messages.append(ToolCallMessage(tool_name="t", tool_call_id=f"c{i}", batch_id=f"b{i}", content="r" * 200))
        messages.append(AssistantMessage(f"answer {i} " + "y" * 200))
    return messages


async def test_summary_stands_in_for_dropped_messages_and_is_cached() -> None:
    model = SummaryModel()
    policy = ContextPolicy(3000, strategy=summarize(), counter=COUNTER)
    chat = long_chat(40)
    out = await policy.prepare(chat, model=model)
    assert isinstance(out[0], SystemMessage) and out[0].text == "sys"
    assert is_summary(out[1]) and "summary #1" in out[1].text  # type: ignore[union-attr]
    assert isinstance(out[2], UserMessage) and out[-1] is chat[-1]
    assert len(model.requests) == 1 and model.requests[0].settings.max_tokens == 750
    # the next requests reuse the summary while the kept part still fits
    chat.append(UserMessage("one more"))
    again = await policy.prepare(chat, model=model)
    assert len(model.requests) == 1 and again[1] == out[1] and again[-1] is chat[-1]
    # much later: the summary is extended with only the newly dropped messages
    chat.extend(long_chat(20)[1:])
    await policy.prepare(chat, model=model)
    assert len(model.requests) == 2
    second = model.requests[1].messages[-1].text  # type: ignore[union-attr]
    assert second.startswith("Summary so far:\nsummary #1")
    newer = second.split("Newer messages:\n")[1]
    assert newer.startswith("User: question ") and not newer.startswith("User: question 0 ")


async def test_overflow_prunes_to_half_of_what_was_sent() -> None:
    chat = long_chat(10)
    policy = ContextPolicy(10_000, counter=COUNTER)
    assert await policy.prepare(chat) is chat
    smaller = await policy.prepare(chat, overflow=True)
    assert sum(COUNTER.count(m) for m in smaller) <= sum(COUNTER.count(m) for m in chat) // 2


async def test_budget_comes_from_the_model_window() -> None:
    class Small(SummaryModel):
        context_window = 1000

    chat = long_chat(10)
    out = await ContextPolicy(counter=COUNTER).prepare(chat, model=Small())
    assert sum(COUNTER.count(m) for m in out) <= 750 < sum(COUNTER.count(m) for m in chat)


async def test_impossible_budget_names_the_numbers() -> None:
    chat = [SystemMessage("s" * 400), UserMessage("u" * 400)]
    with pytest.raises(ContextBudgetError, match=r"budget of 50 tokens: .* alone need 208 tokens in 2 messages"):
        await ContextPolicy(50, counter=COUNTER).prepare(chat)


async def test_custom_strategy_must_keep_the_latest_user_message() -> None:
    chat = long_chat(3)
    policy = ContextPolicy(100, strategy=lambda messages, budget: messages[:1], counter=COUNTER)
    with pytest.raises(ConfigurationError, match="dropped the latest user message"):
        await policy.prepare(chat)


async def test_middle_out_keeps_the_start_of_the_task() -> None:
    chat = long_chat(20)
    out = await ContextPolicy(2500, strategy=middle_out, counter=COUNTER).prepare(chat)
    assert out[1] is chat[1] and out[-1] is chat[-1] and len(out) < len(chat)


async def test_recent_turns_sends_only_the_last_turns() -> None:
    chat = long_chat(10)
    out = await ContextPolicy(1_000_000, 5, strategy=recent_turns(2), counter=COUNTER).prepare(chat)
    assert [m.text for m in out if isinstance(m, UserMessage)] == [chat[-3].text]  # type: ignore[union-attr]
    out = await ContextPolicy(1_000_000, 29, strategy=recent_turns(2), counter=COUNTER).prepare(chat)
    assert out == [chat[0], *chat[-6:]]


def test_counts_are_cached_per_message() -> None:
    counter = EstimateCounter()
    message = ToolCallMessage(tool_name="lookup", tool_call_id="c", arguments={"city": "Paris"}, content="21")
    first = counter.count(message)
    assert first == 4 + -(-len('\nlookup\n{"city": "Paris"}\n21') // 4)
    assert counter.count(message) == first and counter._cache.get(message) == first


def test_tiktoken_counter_with_a_real_encoding() -> None:
    import tiktoken

    encoding = tiktoken.Encoding(
        "bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}
    )
    counter = TiktokenCounter(encoding=encoding)
    assert counter.count(UserMessage("héllo")) == 4 + 6  # one token per byte in this encoding
    assert isinstance(counter_for("ollama:qwen3"), EstimateCounter)


def test_the_default_budget_is_a_fraction_of_the_models_real_window() -> None:
    from tooloop.models.profiles import DEFAULT_PROFILE, profile_for
    from tooloop.testing import FunctionModel

    policy = ContextPolicy(window_fraction=0.5)
    known = FunctionModel(lambda request: "x", name="claude-sonnet-4-5")
    unknown = FunctionModel(lambda request: "x", name="my-own-model")
    assert policy.budget(known).tokens == profile_for("claude-sonnet-4-5").context_window // 2
    assert policy.budget(unknown).tokens == DEFAULT_PROFILE.context_window // 2


def test_the_budget_of_an_unknown_model_is_the_documented_window() -> None:
    import re
    from pathlib import Path

    from tooloop import get_model
    from tooloop.testing import FunctionModel

    docs = (Path(__file__).resolve().parents[2] / "docs" / "context.md").read_text()
    stated = re.search(r"else ([\d,]+) tokens.*? is ([\d,]+) tokens", docs, re.S)
    assert stated is not None
    window, budget = (int(n.replace(",", "")) for n in stated.groups())
    unknown = FunctionModel(lambda r: "x")
    assert getattr(unknown, "context_window", None) is None
    assert ContextPolicy().budget(unknown).tokens == budget == int(window * 0.75)
    assert (
        ContextPolicy().budget(get_model("openai-compatible:my-local-model", base_url="http://127.0.0.1:9/v1")).tokens
        == budget
    )
    assert ContextPolicy().budget(get_model("openai:gpt-4.1", api_key="sk-test")).tokens == int(1_047_576 * 0.75)
