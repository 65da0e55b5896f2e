"""User messages with images, audio and documents, as each provider's API takes them on the wire.

tooloop is pointed at the local wire server and the exact JSON it sends is asserted; an
attachment a provider or model cannot take is refused in one line before anything is sent.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import test_gemini as gm
from tests.models import test_openai_responses as rs
from tests.models.openai_wire import chunk, completion, plain, stream, usage, usage_chunk
from tests.models.test_anthropic import make as anthropic_model
from tests.support.wire import WireServer, json_reply
from tooloop import (
    Agent,
    AudioContent,
    DocumentContent,
    ImageContent,
    ModelSettings,
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
    return aw.uncached(wire.requests[at].json)  # the prompt-cache breakpoints are tested elsewhere


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


# ---------------------------------------------------------------- Responses API

RESPONSES_CONTENT = [
    {"type": "input_text", "text": "Compare these."},
    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
    {"type": "input_file", "filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
]
NO_AUDIO = [p for p in PROMPT if not isinstance(p, AudioContent)]


@pytest.mark.parametrize("streamed", [False, True])
async def test_responses_sends_input_image_and_input_file(wire: WireServer, streamed: bool) -> None:
    done = rs.response([rs.message("Same topic.")])
    if streamed:
        wire.queue(rs.Stream().text(0, "Same ", "topic.").end("response.completed", done))
    else:
        wire.queue(json_reply(done))
    agent = Agent(rs.model(wire, stream=streamed))
    result = await (_streamed(agent, NO_AUDIO) if streamed else agent.run(NO_AUDIO))
    assert result.text == "Same topic."
    assert sent(wire)["input"] == [{"type": "message", "role": "user", "content": RESPONSES_CONTENT}]


async def test_responses_refuses_audio_before_sending(wire: WireServer) -> None:
    agent = Agent(rs.model(wire))
    with pytest.raises(UnsupportedContentError) as raised:
        await agent.run(PROMPT)
    assert str(raised.value) == (
        f"openai-responses model {rs.MODEL!r} cannot take audio (audio/wav) in a user message; "
        "it takes text, document, image"
    )
    # a transcript written with another provider is refused by the adapter itself
    history = [UserMessage(parts=(TextContent("Hear this."), AudioContent(WAV, "audio/wav")))]
    with pytest.raises(UnsupportedContentError, match="the Responses API takes no audio"):
        await agent.run("Well?", history=history)
    assert wire.requests == []


# ---------------------------------------------------------------- Anthropic Messages

ANTHROPIC_CONTENT = [
    {"type": "text", "text": "Compare these."},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        "title": "report.pdf",
    },
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Notes: café at 9."}},
]


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_sends_image_and_document_blocks(wire: WireServer, streamed: bool) -> None:
    content = [{"type": "text", "text": "Same topic."}]
    wire.queue(aw.streamed(content) if streamed else aw.plain(content))
    agent = Agent(anthropic_model(wire), settings=ModelSettings(stream=streamed))
    prompt = [*NO_AUDIO, DocumentContent(NOTES, "text/markdown")]
    result = await (_streamed(agent, prompt) if streamed else agent.run(prompt))
    assert result.text == "Same topic."
    assert sent(wire)["messages"] == [{"role": "user", "content": ANTHROPIC_CONTENT}]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (
            AudioContent(WAV, "audio/wav"),
            "cannot take audio (audio/wav) in a user message; it takes text, document, image",
        ),
        (ImageContent(PNG, "image/bmp"), "cannot take an image (image/bmp) in a user message; it takes images as JPEG"),
        (
            DocumentContent(PDF, "application/msword", "a.doc"),
            "cannot take a document 'a.doc' (application/msword) in a user message; it takes documents as PDF or UTF-8",
        ),
    ],
)
async def test_anthropic_refuses_what_the_messages_api_cannot_take(
    wire: WireServer, part: AudioContent | ImageContent | DocumentContent, message: str
) -> None:
    with pytest.raises(UnsupportedContentError, match=re.escape(f"anthropic model {aw.MODEL!r} {message}")):
        await Agent(anthropic_model(wire)).run(["Look.", part])
    assert wire.requests == []


# ---------------------------------------------------------------- Gemini

GEMINI_PARTS = [
    {"text": "Compare these."},
    {"inlineData": {"mimeType": "image/png", "data": PNG}},
    {"inlineData": {"mimeType": "audio/wav", "data": WAV}},
    {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
]


@pytest.mark.parametrize("streamed", [False, True])
async def test_gemini_sends_inline_data_parts(wire: WireServer, streamed: bool) -> None:
    if streamed:
        wire.queue(gm.sse(gm.chunk([{"text": "Same "}]), gm.chunk([{"text": "topic."}], "STOP", prompt=10, out=2)))
    else:
        wire.queue(gm.reply([{"text": "Same topic."}]))
    agent = Agent(gm.model(wire, stream=streamed))
    result = await (_streamed(agent, PROMPT) if streamed else agent.run(PROMPT))
    assert result.text == "Same topic."
    assert sent(wire)["contents"] == [{"role": "user", "parts": GEMINI_PARTS}]


async def _streamed(agent: Agent, prompt: list[Any]) -> Any:
    deltas: list[str] = []
    async with agent.stream(prompt) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                deltas.append(event.text)
    assert "".join(deltas) == events.result.text
    return events.result


async def test_chat_completions_sends_a_text_document_as_text_even_to_a_text_only_model(
    wire: WireServer, make_model: Make
) -> None:
    wire.queue(plain(completion({"content": "At nine."})))
    model = make_model("deepseek:deepseek-chat", stream=False)
    await Agent(model).run(["When?", DocumentContent(NOTES, "text/markdown", "notes.md")])
    assert sent(wire)["messages"][0]["content"] == [
        {"type": "text", "text": "When?"},
        {"type": "text", "text": '<document name="notes.md">\nNotes: café at 9.\n</document>'},
    ]
