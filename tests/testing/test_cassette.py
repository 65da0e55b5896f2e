"""Cassettes: record against a model, replay offline, fail loudly on drift, never store secrets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tooloop.errors import ConfigurationError, ProviderConnectionError, UserError
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import (
    ModelResponse,
    StopReason,
    ThinkingPart,
    ToolCall,
    ToolCallMessage,
    Usage,
    UserMessage,
)
from tooloop.models.base import ModelRequest, ModelSettings
from tooloop.testing.cassette import DEFAULT_MATCH, Cassette, CassetteError, CassetteMismatchError

from .helpers import ListModel, mini_run


def weather_responses() -> list[ModelResponse]:
    return [
        ModelResponse(
            "Let me check.",
            (ToolCall("call_1", "get_weather", '{"city": "Paris"}'),),
            usage=Usage(input_tokens=20, output_tokens=9),
            thinking=(ThinkingPart("The user wants weather.", signature="sig-1"),),
        ),
        ModelResponse("It is sunny in Paris.", usage=Usage(input_tokens=35, output_tokens=7), model="m-2024"),
    ]


def weather(city: str) -> str:
    return f"sunny in {city}"


async def record_weather(path: Path, **run: Any) -> tuple[list[Any], list[ModelEvent]]:
    cassette = Cassette(path, "record")
    events: list[ModelEvent] = []
    messages = await mini_run(
        cassette.wrap(ListModel(weather_responses())),
        "Weather in Paris?",
        {"get_weather": weather},
        on_event=events.append,
        **run,
    )
    return messages, events


async def test_record_writes_readable_json_with_requests_responses_and_events(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    await record_weather(path)

    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "version": 1,\n  "model": "list-model",')
    data = json.loads(text)
    first, second = data["interactions"]
    assert [m["kind"] for m in first["request"]["messages"]] == ["system", "user"]
    assert first["request"]["tools"][0]["name"] == "get_weather"
    assert first["request"]["tool_choice"] == "auto"
    assert first["response"] == {
        "text": "Let me check.",
        "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}],
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": 20,
            "output_tokens": 9,
            "requests": 0,
            "tool_calls": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": 0,
            "cache_write_1h_tokens": 0,
        },
        "thinking": [{"text": "The user wants weather.", "signature": "sig-1"}],
    }
    assert first["events"][0] == {"kind": "thinking_delta", "text": "The user wants weather."}
    assert first["events"][-1] == {"kind": "tool_call_delta", "index": 0, "arguments_delta": '{"city": "Paris"}'}
    # The tool result is inside the next recorded request.
    tool_message = second["request"]["messages"][2]
    assert tool_message["kind"] == "tool_call"
    assert tool_message["content"] == "sunny in Paris"
    assert second["response"]["model"] == "m-2024"


async def test_replay_without_a_model_gives_the_same_run_and_events(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    recorded_messages, recorded_events = await record_weather(path)

    cassette = Cassette(path)
    replayed_events: list[ModelEvent] = []
    model = cassette.model()
    messages = await mini_run(model, "Weather in Paris?", {"get_weather": weather}, on_event=replayed_events.append)

    assert messages[-1] == recorded_messages[-1]
    assert next(m for m in messages if isinstance(m, ToolCallMessage)).tool_call_id == "call_1"
    assert replayed_events == recorded_events
    assert "".join(e.text for e in replayed_events if isinstance(e, TextDelta)) == (
        "Let me check.It is sunny in Paris."
    )
    assert model.name == "list-model"
    cassette.assert_all_played()


async def test_replayed_response_equals_the_recorded_one(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    original = ModelResponse(
        "",
        (ToolCall("c1", "f", {"x": [1, 2]}, provider_data={"thought_signature": "abc"}),),
        StopReason.TOOL_USE,
        Usage(1, 2, cache_read_tokens=3),
        thinking=(ThinkingPart("", redacted=True, provider="anthropic", signature="s"),),
        refusal=None,
        model="m",
        provider_data={"response_id": "resp_1"},
    )
    request = ModelRequest([UserMessage("hi")])
    await Cassette(path, "record").wrap(ListModel([original])).respond(request)
    assert await Cassette(path).model().respond(request) == original


async def test_secrets_are_scrubbed_and_replay_still_matches(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    settings = ModelSettings(
        temperature=0.2,
        extra={
            "api_key": "sk-live-123",
            "extra_headers": {"Authorization": "Bearer abc.def", "x-api-key": "key-456", "X-Trace": "keep-me"},
            "max_output_tokens": 77,
            "metadata": {"access_token": "tok-789", "note": "Bearer zzz"},
        },
    )
    response = ModelResponse("ok", provider_data={"session_token": "tok-000", "input_tokens_detail": 5})
    model = Cassette(path, "record").wrap(ListModel([response]))
    await model.respond(ModelRequest([UserMessage("hi")], settings=settings))

    text = path.read_text(encoding="utf-8")
    for secret in ("sk-live-123", "abc.def", "key-456", "tok-789", "zzz", "tok-000"):
        assert secret not in text
    data = json.loads(text)["interactions"][0]
    extra = data["request"]["settings"]["extra"]
    assert extra["api_key"] == "<redacted>"
    assert extra["extra_headers"] == {"Authorization": "<redacted>", "x-api-key": "<redacted>", "X-Trace": "keep-me"}
    assert extra["max_output_tokens"] == 77
    assert data["response"]["provider_data"] == {"session_token": "<redacted>", "input_tokens_detail": 5}

    # Another key at replay time still matches: secrets are compared redacted.
    other = ModelSettings(temperature=0.2, extra={**settings.extra, "api_key": "sk-other"})
    replayed = await Cassette(path).model().respond(ModelRequest([UserMessage("hi")], settings=other))
    assert replayed.text == "ok"


async def test_changed_tool_result_fails_with_a_readable_diff(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    await record_weather(path)

    def rainy(city: str) -> str:
        return f"rainy in {city}"

    with pytest.raises(CassetteMismatchError) as caught:
        await mini_run(Cassette(path).model(), "Weather in Paris?", {"get_weather": rainy})
    assert isinstance(caught.value, UserError)
    message = str(caught.value)
    assert "request 2 does not match cassette" in message
    assert "at messages[2].content (tool_call get_weather id=call_1)" in message
    assert '  recorded: "sunny in Paris"\n  actual:   "rainy in Paris"' in message


async def test_changed_question_names_the_first_request(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    await record_weather(path)
    with pytest.raises(CassetteMismatchError, match=r"request 1 .* at messages\[1\]\.text \(user message\)"):
        await mini_run(Cassette(path).model(), "Weather in Rome?", {"get_weather": weather})


async def test_more_requests_than_recorded_fail(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    request = ModelRequest([UserMessage("hi")])
    await Cassette(path, "record").wrap(ListModel([ModelResponse("hello")])).respond(request)
    model = Cassette(path).model()
    await model.respond(request)
    with pytest.raises(CassetteMismatchError, match=r"made request 2 but cassette .* recorded only 1"):
        await model.respond(request)


async def test_fewer_requests_than_recorded_fail_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    request = ModelRequest([UserMessage("hi")])
    recording = Cassette(path, "record").wrap(ListModel([ModelResponse("a"), ModelResponse("b")]))
    await recording.respond(request)
    await recording.respond(request)

    cassette = Cassette(path)
    await cassette.model().respond(request)
    with pytest.raises(CassetteMismatchError, match="recorded 2 requests but the run made only 1"):
        cassette.assert_all_played()
    with pytest.raises(CassetteMismatchError, match="recorded 2 requests but the run made only 0"), Cassette(path):
        pass
    with Cassette(path) as complete:
        model = complete.model()
        assert [(await model.respond(request)).text for _ in range(2)] == ["a", "b"]


async def test_settings_can_be_left_out_of_matching(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    await record_weather(path, settings=ModelSettings(temperature=0.0))

    hot = ModelSettings(temperature=1.0)
    with pytest.raises(CassetteMismatchError, match=r"at settings\.temperature"):
        await mini_run(Cassette(path).model(), "Weather in Paris?", {"get_weather": weather}, settings=hot)
    relaxed = Cassette(path, match=DEFAULT_MATCH - {"settings"})
    messages = await mini_run(relaxed.model(), "Weather in Paris?", {"get_weather": weather}, settings=hot)
    assert messages[-1].text == "It is sunny in Paris."  # type: ignore[union-attr]


async def test_ignored_message_fields_allow_volatile_tool_results(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    await record_weather(path)

    def other(city: str) -> str:
        return f"cloudy in {city}"

    cassette = Cassette(path, ignore_fields={"content", "result"})
    messages = await mini_run(cassette.model(), "Weather in Paris?", {"get_weather": other})
    assert messages[-1].text == "It is sunny in Paris."  # type: ignore[union-attr]


async def test_replay_synthesises_deltas_when_recorded_without_streaming(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    await mini_run(Cassette(path, "record").wrap(ListModel(weather_responses())), "Weather?", {"get_weather": weather})
    assert json.loads(path.read_text())["interactions"][0]["events"] == []

    events: list[ModelEvent] = []
    await mini_run(Cassette(path).model(), "Weather?", {"get_weather": weather}, on_event=events.append)
    assert events == [
        ThinkingDelta("The user wants weather."),
        TextDelta("Let me check."),
        ToolCallDelta(0, "call_1", "get_weather", '{"city": "Paris"}'),
        TextDelta("It is sunny in Paris."),
    ]


async def test_auto_mode_records_when_missing_then_replays(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "auto.json"
    first = Cassette(path, "auto")
    assert first.recording
    real = ListModel(weather_responses())
    await mini_run(first.wrap(real), "Weather?", {"get_weather": weather})
    assert len(real.requests) == 2

    second = Cassette(path, "auto")
    assert not second.recording
    untouched = ListModel([])
    messages = await mini_run(second.wrap(untouched), "Weather?", {"get_weather": weather})
    assert untouched.requests == []
    assert messages[-1].text == "It is sunny in Paris."  # type: ignore[union-attr]


async def test_each_request_is_saved_at_once_and_a_crash_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "crash.json"
    seen_during_run: list[int] = []

    def look(city: str) -> str:
        # Runs between request 1 and 2: the first entry must already be on disk.
        seen_during_run.append(len(json.loads(path.read_text())["interactions"]))
        return "sunny"

    class Dying(ListModel):
        async def respond(self, request: ModelRequest, on_event: Any = None) -> ModelResponse:
            if len(self.requests) == 1:
                raise ProviderConnectionError("connection reset")
            return await super().respond(request, on_event)

    with pytest.raises(ProviderConnectionError):
        await mini_run(Cassette(path, "record").wrap(Dying(weather_responses())), "Weather?", {"get_weather": look})
    assert seen_during_run == [1]
    data = json.loads(path.read_text())
    assert len(data["interactions"]) == 1
    assert data["interactions"][0]["response"]["tool_calls"][0]["name"] == "get_weather"
    assert sorted(os.listdir(tmp_path)) == ["crash.json"]  # no temporary file left


async def test_record_replaces_an_old_cassette(tmp_path: Path) -> None:
    path = tmp_path / "again.json"
    await record_weather(path)
    request = ModelRequest([UserMessage("hi")])
    await Cassette(path, "record").wrap(ListModel([ModelResponse("hello")])).respond(request)
    assert len(json.loads(path.read_text())["interactions"]) == 1


def test_missing_broken_and_newer_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="does not exist; record it first"):
        Cassette(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CassetteError, match="cannot be read"):
        Cassette(broken)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"version": 99, "interactions": []}))
    with pytest.raises(CassetteError, match="format version 99"):
        Cassette(newer)


def test_bad_options_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="mode"):
        Cassette(tmp_path / "x.json", "rewind")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown cassette match part"):
        Cassette(tmp_path / "x.json", "record", match={"messages", "headers"})
    with pytest.raises(ConfigurationError, match="needs the real model"):
        Cassette(tmp_path / "x.json", "record").wrap(None)


async def test_wrap_calls_a_model_factory_only_when_recording(tmp_path: Path) -> None:
    path = tmp_path / "factory.json"
    built: list[str] = []

    def build() -> ListModel:
        built.append("built")
        return ListModel([ModelResponse("hello")])

    request = ModelRequest([UserMessage("hi")])
    await Cassette(path, "auto").wrap(build).respond(request)
    replayed = await Cassette(path, "auto").wrap(build).respond(request)
    assert (replayed.text, built) == ("hello", ["built"])


async def test_a_failed_request_can_be_retried_against_a_replay(tmp_path: Path) -> None:
    from tooloop.errors import ProviderTimeoutError
    from tooloop.testing.faults import Timeout, inject

    path = tmp_path / "weather.json"
    await record_weather(path)
    cassette = Cassette(path)
    faulty = inject(cassette.model(), Timeout(on=2))

    class RetryOnce:
        name = "retry-once"

        async def respond(self, request: ModelRequest, on_event: Any = None) -> ModelResponse:
            try:
                return await faulty.respond(request, on_event)
            except ProviderTimeoutError:
                return await faulty.respond(request, on_event)

    messages = await mini_run(RetryOnce(), "Weather in Paris?", {"get_weather": weather})
    # The timed-out request never reached the cassette, so its retry played entry 2.
    assert messages[-1].text == "It is sunny in Paris."  # type: ignore[union-attr]
    assert faulty.fired_on(Timeout) == [2]
    assert faulty.requests == 3
    cassette.assert_all_played()


async def test_a_damaged_entry_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.json"
    request = ModelRequest([UserMessage("hi")])
    await Cassette(path, "record").wrap(ListModel([ModelResponse("hello")])).respond(request)
    data = json.loads(path.read_text())
    data["interactions"][0]["response"]["stop_reason"] = "sleepy"
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match=r"entry 1 of cassette .* cannot be read"):
        await Cassette(path).model().respond(request)
