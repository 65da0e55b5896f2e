"""User messages with images, audio and documents, as each provider's API takes them on the wire.

tooloop is pointed at the local wire server and the exact JSON it sends is asserted; an
attachment a provider or model cannot take is refused in one line before anything is sent.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from tests.models.openai_wire import chunk, completion, plain, stream, usage, usage_chunk
from tests.support.wire import WireServer
from tooloop import (
    Agent,
    AudioContent,
    DocumentContent,
    ImageContent,
    TextContent,
    TextDelta,
    UnsupportedContentError,
    UserMessage,
)
from tooloop.models.openai_chat import OpenAIChatModel

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
NOTES = base64.b64encode("Notes: café at 9.".encode()).decode()

PROMPT = [
    "Compare these.",
    ImageContent(PNG, "image/png"),
    AudioContent(WAV, "audio/wav"),
    DocumentContent(PDF, "application/pdf", "report.pdf"),
]

Make = Callable[..., OpenAIChatModel]


def sent(wire: WireServer, at: int = -1) -> Any:
    return wire.requests[at].json


# ---------------------------------------------------------------- Chat Completions

CHAT_CONTENT = [
    {"type": "text", "text": "Compare these."},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
    {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}},
]


async def test_chat_completions_sends_text_image_audio_and_file_parts(wire: WireServer, make_model: Make) -> None:
    wire.queue(plain(completion({"content": "Same topic."})))
    result = await Agent(make_model(stream=False)).run(PROMPT)
    assert result.text == "Same topic."
    assert sent(wire)["messages"] == [{"role": "user", "content": CHAT_CONTENT}]


async def test_chat_completions_streams_with_parts_and_sends_them_again_next_turn(
    wire: WireServer, make_model: Make
) -> None:
    wire.queue(
        stream(
            chunk({"role": "assistant", "content": "Same "}), chunk({"content": "topic."}, "stop"), usage_chunk(usage())
        ),
        plain(completion({"content": "Yes."})),
    )
    agent = Agent(make_model())
    deltas = []
    async with agent.stream(PROMPT) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                deltas.append(event.text)
    first = events.result
    assert "".join(deltas) == "Same topic."
    assert sent(wire)["stream"] is True
    assert sent(wire)["messages"] == [{"role": "user", "content": CHAT_CONTENT}]
    await agent.run("Sure?", history=first.transcript)
    assert sent(wire)["messages"] == [
        {"role": "user", "content": CHAT_CONTENT},
        {"role": "assistant", "content": "Same topic."},
        {"role": "user", "content": "Sure?"},
    ]


async def test_chat_completions_document_without_a_name_gets_one_from_its_type(
    wire: WireServer, make_model: Make
) -> None:
    wire.queue(plain(completion({"content": "ok"})))
    await Agent(make_model(stream=False)).run([DocumentContent(PDF, "application/pdf")])
    (part,) = sent(wire)["messages"][0]["content"]
    assert part == {
        "type": "file",
        "file": {"filename": "document.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
    }


async def test_chat_completions_refuses_audio_that_is_not_wav_or_mp3(wire: WireServer, make_model: Make) -> None:
    with pytest.raises(UnsupportedContentError) as raised:
        await Agent(make_model(stream=False)).run(["Listen.", AudioContent(WAV, "audio/ogg")])
    assert str(raised.value) == (
        "openai model 'gpt-4.1-mini' cannot take audio (audio/ogg) in a user message; it takes audio as WAV or MP3 only"
    )
    assert wire.requests == []


async def test_a_server_configured_text_only_refuses_an_image_before_sending(
    wire: WireServer, make_model: Make
) -> None:
    model = make_model("deepseek:deepseek-chat", stream=False)
    assert model.input_kinds == frozenset()
    with pytest.raises(UnsupportedContentError) as raised:
        await Agent(model).run(["What is this?", ImageContent(PNG, "image/png")])
    assert str(raised.value) == (
        "deepseek model 'deepseek-chat' cannot take an image (image/png) in a user message; it takes text only"
    )
    # a history written with another model is refused by the adapter too, before sending
    history = [UserMessage(parts=(TextContent("Look."), ImageContent(PNG, "image/png")))]
    with pytest.raises(UnsupportedContentError, match="cannot take an image"):
        await Agent(model).run("And now?", history=history)
    vision = make_model("openai-compatible:llava", stream=False, input_kinds=["image"])
    with pytest.raises(UnsupportedContentError, match=r"it takes text, image$"):
        await Agent(vision).run(["Read.", DocumentContent(PDF, "application/pdf")])
    assert wire.requests == []
