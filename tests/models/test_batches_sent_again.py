"""A tool batch goes out the same on every later request of a run, converted once per run, and
nothing the adapter made of it stays once the run has ended, however long its result is kept."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.doors import DOORS, drive
from tests.models.test_gemini import chunk as gemini_chunk
from tests.models.test_gemini import reply as gemini_reply
from tests.models.test_gemini import sse as gemini_sse
from tests.models.test_openai_responses import Stream, message
from tests.models.test_openai_responses import call as responses_call
from tests.models.test_openai_responses import response as responses_body
from tests.support.wire import Handler, Recorded, Reply, WireServer, json_reply
from tooloop import Agent, Hooks, StepContext
from tooloop.errors import ToolloopError
from tooloop.messages import Message, ToolCallMessage, UserMessage
from tooloop.models import Model, ModelRequest, ModelSettings, get_model
from tooloop.models.anthropic.request import build_body
from tooloop.models.base import RunMemo
from tooloop.models.gemini.request import GeminiRequest
from tooloop.models.openai_chat.request import ChatRequest
from tooloop.models.openai_responses.request import ResponsesRequest
from tooloop.models.portable import BatchMemo

Body = Callable[[list[Message], RunMemo | None], Any]


def _calls(*names: str, batch: str = "b") -> list[ToolCallMessage]:
    return [
        ToolCallMessage(tool_name=name, tool_call_id=f"call_{name}", arguments={"n": i}, content=str(i), batch_id=batch)
        for i, name in enumerate(names)
    ]


# ---------------------------------------------------------------- the request builders, one run's memo at a time


def _anthropic() -> tuple[Body, Callable[[Any], list[Any]]]:
    def body(messages: list[Message], memo: RunMemo | None) -> Any:
        settings = ModelSettings(cache="off")
        return build_body(ModelRequest(messages, memo=memo), model="claude-x", settings=settings, max_tokens=9)[0]

    return body, lambda b: [block for m in b["messages"] for block in m["content"]]


def _responses() -> tuple[Body, Callable[[Any], list[Any]]]:
    builder = ResponsesRequest("gpt-x", include=None, reasoning=None)

    def body(messages: list[Message], memo: RunMemo | None) -> Any:
        return builder.params(ModelRequest(messages, memo=memo), ModelSettings())

    return body, lambda b: b["input"]


def _chat() -> tuple[Body, Callable[[Any], list[Any]]]:
    builder = ChatRequest("gpt-x", "openai")

    def body(messages: list[Message], memo: RunMemo | None) -> Any:
        return builder.body(ModelRequest(messages, memo=memo), ModelSettings())

    return body, lambda b: b["messages"]


def _gemini() -> tuple[Body, Callable[[Any], list[Any]]]:
    builder = GeminiRequest("gemini-3-flash")

    def body(messages: list[Message], memo: RunMemo | None) -> Any:
        return builder.body(ModelRequest(messages, memo=memo), ModelSettings())

    return body, lambda b: [part for content in b["contents"] for part in content["parts"]]


BUILDERS = [_anthropic, _responses, _chat, _gemini]
BATCH_MEMOS = [_responses, _chat, _gemini]
"""The builders that keep each batch as converted; Anthropic's keeps the JSON its previous request
sent instead (see tests/models/test_anthropic_request.py)."""


def _made_for_alpha(pieces: list[Any]) -> list[Any]:
    return [piece for piece in pieces if isinstance(piece, dict) and "alpha" in str(piece)]


def _same_objects(earlier: list[Any], later: list[Any]) -> bool:
    return all(any(piece is seen for seen in later) for piece in earlier)


@pytest.mark.parametrize("builder", BUILDERS)
def test_a_batch_sent_again_is_the_same_and_a_changed_one_is_read_anew(builder: Any) -> None:
    body = builder()[0]
    memo = RunMemo()
    first, second = _calls("alpha", "beta")
    user = UserMessage("go")
    whole = body([user, first, second], memo)
    assert body([user, first, second], memo) == whole == body([user, first, second], None)
    alone = body([user, first], memo)  # the same first call, the batch without its second
    fresh = body([user, _calls("alpha")[0]], memo)  # equal messages, not the same objects
    assert alone == fresh
    assert "beta" not in str(alone) and "beta" in str(whole)


@pytest.mark.parametrize("builder", BATCH_MEMOS)
def test_each_batch_is_converted_once_per_run(builder: Any) -> None:
    body, pieces = builder()
    memo = RunMemo()
    history: list[Message] = [UserMessage("go"), *_calls("alpha", "beta", batch="1")]
    earlier = pieces(body(history, memo))
    history += [UserMessage("more"), *_calls("gamma", batch="2")]
    later = pieces(body(history, memo))
    assert "gamma" in str(later)
    assert pieces(body(history, memo)) == later  # merging turns changed nothing that was kept
    # the first batch's blocks/items are the very objects made for the run's first request
    made_once = _made_for_alpha(earlier)
    assert made_once and _same_objects(made_once, later)
    # another run (or a request outside any run) makes them anew: nothing is kept between runs
    assert not _same_objects(made_once, _made_for_alpha(pieces(body(history, RunMemo()))))
    assert not _same_objects(made_once, _made_for_alpha(pieces(body(history, None))))


@pytest.mark.parametrize("builder", BATCH_MEMOS)
def test_the_run_memo_holds_the_batches_until_the_run_ends(builder: Any) -> None:
    body = builder()[0]
    memo = RunMemo()
    history: list[Message] = [UserMessage("go"), *_calls("a", "b", batch="1"), *_calls("c", batch="2")]
    body(history, memo)
    body(history, memo)
    [part] = memo.parts()  # one model, one part
    assert isinstance(part, BatchMemo) and len(part) == 2
    memo.clear()
    assert len(memo) == 0


def test_an_entry_is_found_only_for_the_very_same_messages() -> None:
    memo: BatchMemo[str] = BatchMemo()
    first, second = _calls("a", "b")
    memo.put((first, second), "made")
    assert memo.get((first, second)) == "made"
    assert memo.get((first, second), "other variant") is None
    assert memo.get((first,)) is None
    assert memo.get(tuple(_calls("a", "b"))) is None  # equal, not the same
    memo.put((first,), "again", variant=True)  # replaces what the first message had
    assert memo.get((first,), True) == "again" and memo.get((first, second)) is None
    assert len(memo) == 1


# ---------------------------------------------------------------- real runs against the wire


CALL_1 = {"n": 1}
CALL_2 = ({"n": 2}, {"n": 3})


def double(n: int) -> str:
    """Double a number."""
    return f"twice {n} is {2 * n}"


@dataclass(frozen=True)
class Provider:
    """How to reach one provider on the wire server, and its scripted answers per door."""

    make: Callable[[str], Model]
    variant: Hashable  # the request option its batches are kept under
    calls: Callable[[bool, Sequence[dict[str, int]], int], Reply]  # (streamed, arguments, turn)
    text: Callable[[bool], Reply]


def _chat_calls(streamed: bool, arguments: Sequence[dict[str, int]], turn: int) -> Reply:
    raw = [(f"call_{turn}_{i}", json.dumps(args)) for i, args in enumerate(arguments)]
    if not streamed:
        message = {"content": None, "tool_calls": [ow.tool_call(i, "double", a) for i, a in raw]}
        return ow.plain(ow.completion(message, "tool_calls"))
    starts = [ow.call_start(at, i, "double", a) for at, (i, a) in enumerate(raw)]
    first = ow.chunk({"role": "assistant", "content": None, "tool_calls": starts})
    return ow.stream(first, ow.chunk(finish="tool_calls"), ow.usage_chunk(ow.usage()))


def _chat_text(streamed: bool) -> Reply:
    if not streamed:
        return ow.plain(ow.completion({"content": "done"}))
    first = ow.chunk({"role": "assistant", "content": "done"})
    return ow.stream(first, ow.chunk(finish="stop"), ow.usage_chunk(ow.usage()))


def _anthropic_calls(streamed: bool, arguments: Sequence[dict[str, int]], turn: int) -> Reply:
    uses = [
        {"type": "tool_use", "id": f"toolu_{turn}_{i}", "name": "double", "input": args}
        for i, args in enumerate(arguments)
    ]
    return (aw.streamed if streamed else aw.plain)(uses, "tool_use")


def _anthropic_text(streamed: bool) -> Reply:
    return (aw.streamed if streamed else aw.plain)([{"type": "text", "text": "done"}], "end_turn")


def _responses_calls(streamed: bool, arguments: Sequence[dict[str, int]], turn: int) -> Reply:
    items = [
        responses_call(f"call_{turn}_{i}", "double", json.dumps(args), item_id=f"fc_{turn}_{i}")
        for i, args in enumerate(arguments)
    ]
    if not streamed:
        return json_reply(responses_body(items))
    stream = Stream()
    for at, item in enumerate(items):
        stream.call_added(at, item["call_id"], "double", item["id"]).args(at, item["arguments"], item["id"])
        stream.call_done(at, item["call_id"], "double", item["arguments"], item["id"])
    return stream.end("response.completed", responses_body(items))


def _responses_text(streamed: bool) -> Reply:
    if not streamed:
        return json_reply(responses_body([message("done")]))
    return Stream().text(0, "done").end("response.completed", responses_body([message("done")]))


def _gemini_calls(streamed: bool, arguments: Sequence[dict[str, int]], turn: int) -> Reply:
    parts = [
        {"functionCall": {"id": f"g_{turn}_{i}", "name": "double", "args": args}} for i, args in enumerate(arguments)
    ]
    return gemini_sse(gemini_chunk(parts, "STOP", prompt=10, out=5)) if streamed else gemini_reply(parts)


def _gemini_text(streamed: bool) -> Reply:
    parts = [{"text": "done"}]
    return gemini_sse(gemini_chunk(parts, "STOP", prompt=10, out=5)) if streamed else gemini_reply(parts)


PROVIDERS = {
    "anthropic": Provider(
        lambda url: get_model(f"anthropic:{aw.MODEL}", base_url=url, api_key="k", max_retries=0),
        False,
        _anthropic_calls,
        _anthropic_text,
    ),
    "gemini": Provider(
        lambda url: get_model("google:gemini-2.5-flash", base_url=url, api_key="k", max_retries=0),
        None,
        _gemini_calls,
        _gemini_text,
    ),
    "openai_chat": Provider(
        lambda url: get_model("openai:gpt-4.1-mini", base_url=url + "/v1", api_key="k", max_retries=0),
        None,
        _chat_calls,
        _chat_text,
    ),
    "openai_responses": Provider(
        lambda url: get_model("openai-responses:gpt-5-mini", base_url=url + "/v1", api_key="k", max_retries=0),
        False,
        _responses_calls,
        _responses_text,
    ),
}


def _streamed(request: Recorded) -> bool:
    """Whether the adapter asked for an event stream (Gemini says so in the path, others in the body)."""
    return "streamGenerateContent" in request.path or bool(request.json.get("stream"))


def _script(provider: Provider, asked: list[bool]) -> list[Handler]:
    """Two tool batches (one call, then two), then the answer: three requests, each answered the
    way it asked (plain or streamed); ``asked`` records which."""

    def answer(reply: Callable[[bool], Reply]) -> Handler:
        def handle(request: Recorded) -> Reply:
            asked.append(_streamed(request))
            return reply(asked[-1])

        return handle

    return [
        answer(lambda streamed: provider.calls(streamed, [CALL_1], 1)),
        answer(lambda streamed: provider.calls(streamed, CALL_2, 2)),
        answer(provider.text),
    ]


def _batches(messages: Sequence[Message]) -> list[tuple[ToolCallMessage, ...]]:
    grouped: dict[str, list[ToolCallMessage]] = {}
    for m in messages:
        if isinstance(m, ToolCallMessage):
            grouped.setdefault(m.batch_id, []).append(m)
    return [tuple(calls) for calls in grouped.values()]


class Watcher:
    """After each model response: the request's memo and what it holds for each batch sent."""

    def __init__(self, variant: Hashable) -> None:
        self.variant = variant
        self.memos: list[RunMemo] = []
        self.made: list[list[Any]] = []
        self.sent: list[bytes] = []  # Anthropic's: the JSON of the messages sent

    def __call__(self, context: StepContext) -> None:
        assert context.request is not None and context.request.memo is not None
        memo = context.request.memo
        self.memos.append(memo)
        [part] = memo.parts()  # the one model of the run keeps one part
        if isinstance(part, BatchMemo):
            self.made.append([part.get(calls, self.variant) for calls in _batches(context.request.messages)])
        else:
            self.sent.append(part.sent)


@pytest.fixture
async def made() -> Any:
    models: list[Any] = []
    yield models
    for model in models:
        await model.aclose()


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_a_finished_run_leaves_nothing_in_its_memo_while_its_result_is_kept(
    wire: WireServer, made: list[Any], name: str, door: str
) -> None:
    provider = PROVIDERS[name]
    asked: list[bool] = []
    wire.queue(*_script(provider, asked))
    model = provider.make(wire.url)
    made.append(model)
    watch = Watcher(provider.variant)
    agent = Agent(model, tools=[double], hooks=Hooks(on_model_response=watch))

    result, _ = await drive(agent, door, "Double 1, then 2 and 3.")

    assert result.text == "done"
    if door == "stream":
        assert asked == [True, True, True]
    assert [len(batch) for batch in _batches(result.transcript)] == [1, 2]
    assert "twice 3 is 6" in wire.requests[2].body.decode()  # the last request sent both batches
    memo = watch.memos[0]
    assert all(m is memo for m in watch.memos)  # one memo for the whole run
    if name == "anthropic":  # what a request sent is kept as JSON, and the next request sends it again
        assert len(watch.sent) == 3 and watch.sent[1].startswith(watch.sent[0] + b",")
        assert watch.sent[2].startswith(watch.sent[1] + b",") and b"twice 3 is 6" in watch.sent[2]
    else:  # each batch converted once: the request after it made it, every later one reused that
        at_first, [first], [again, second] = watch.made
        assert at_first == []  # no batch to send yet
        assert first is not None and second is not None and again is first
    assert len(memo) == 0  # the run has ended: its memo is empty, the result still held


async def test_a_failed_run_empties_its_memo_too(wire: WireServer, made: list[Any]) -> None:
    provider = PROVIDERS["openai_chat"]
    wire.queue(provider.calls(False, [CALL_1], 1), json_reply({"error": {"message": "bad", "type": "x"}}, 400))
    model = provider.make(wire.url)
    made.append(model)
    watch = Watcher(provider.variant)
    with pytest.raises(ToolloopError):
        await Agent(model, tools=[double], hooks=Hooks(on_model_response=watch)).run("Double 1.")
    assert len(watch.memos) == 1 and len(watch.memos[0]) == 0


def _adapter_bytes(snapshot: tracemalloc.Snapshot) -> int:
    """Bytes still held that the request builders and the batch memo allocated."""
    kept = snapshot.filter_traces(
        [tracemalloc.Filter(True, "*/tooloop/models/*/request.py"), tracemalloc.Filter(True, "*/models/portable.py")]
    )
    return sum(stat.size for stat in kept.statistics("filename"))


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_kept_results_hold_nothing_the_adapter_made_for_their_runs(
    wire: WireServer, made: list[Any], name: str
) -> None:
    provider = PROVIDERS[name]
    model = provider.make(wire.url)
    made.append(model)
    agent = Agent(model, tools=[double])
    kept = []

    async def runs(count: int) -> None:
        for _ in range(count):
            wire.queue(*_script(provider, []))
            kept.append(await agent.run("Double 1, then 2 and 3."))
        gc.collect()

    await runs(1)  # the model's own state (its tool list) made before counting
    tracemalloc.start()
    try:
        await runs(1)
        after_one = _adapter_bytes(tracemalloc.take_snapshot())
        await runs(8)
        after_nine = _adapter_bytes(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert all(result.text == "done" for result in kept)
    # nothing per run (with a memo kept as long as the messages: 1.7 to 3.5 KB per run of this script)
    assert after_nine - after_one < 1000, (after_one, after_nine)
