"""User messages with content parts: built, checked where given, serialised and read back."""

from __future__ import annotations

import base64
import json

import pytest

from tooloop import (
    Agent,
    ArgumentTypeError,
    ArgumentValueError,
    AudioContent,
    DocumentContent,
    ImageContent,
    ModelRequest,
    TextContent,
    UnsupportedContentError,
    UserMessage,
)
from tooloop.testing import FunctionModel
from tooloop.transcript import Transcript, message_from_dict, message_to_dict

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()


def test_a_user_message_with_parts_has_their_text_joined() -> None:
    message = UserMessage(parts=[TextContent("Describe it."), ImageContent(PNG, "image/png"), TextContent("Briefly.")])
    assert message.text == "Describe it.\n\nBriefly."
    assert isinstance(message.parts, tuple)
    assert message.attachments == (ImageContent(PNG, "image/png"),)
    assert UserMessage("plain").parts == () and UserMessage("plain").text == "plain"


def test_a_user_message_refuses_text_that_disagrees_with_its_parts() -> None:
    with pytest.raises(ValueError, match="text or its parts, not both"):
        UserMessage("other", parts=[TextContent("Describe it.")])
    with pytest.raises(TypeError, match="TextContent, ImageContent, AudioContent or DocumentContent"):
        UserMessage(parts=["a string"])  # type: ignore[list-item]


def test_user_parts_survive_the_json_form_and_old_sessions_still_load() -> None:
    message = UserMessage(
        turn_id="t1",
        parts=(
            TextContent("Read these."),
            ImageContent(PNG, "image/png"),
            AudioContent("UklGRg==", "audio/wav"),
            DocumentContent(PDF, "application/pdf", "report.pdf"),
        ),
    )
    data = json.loads(json.dumps(message_to_dict(message)))
    assert data["parts"][3] == {"kind": "document", "data": PDF, "mime_type": "application/pdf", "name": "report.pdf"}
    assert message_from_dict(data) == message
    assert Transcript.from_json(Transcript([message]).to_json()) == Transcript([message])
    # written before user messages had parts: text only, no "parts" key
    assert message_from_dict({"kind": "user", "text": "hi", "turn_id": "t0"}) == UserMessage("hi", "t0")
    assert "parts" not in message_to_dict(UserMessage("hi"))


async def test_run_takes_strings_and_parts_and_the_model_sees_them_in_order() -> None:
    seen: list[UserMessage] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request.messages[-1])  # type: ignore[arg-type]
        return "A red square."

    result = await Agent(FunctionModel(answer)).run(["What is this?", ImageContent(PNG, "image/png")])
    assert result.text == "A red square."
    assert seen[0].parts == (TextContent("What is this?"), ImageContent(PNG, "image/png"))
    assert result.transcript[0] == seen[0]
    # a single part is a prompt too
    await Agent(FunctionModel(answer)).run(ImageContent(PNG, "image/png"))
    assert seen[1].parts == (ImageContent(PNG, "image/png"),) and seen[1].text == ""


def test_run_sync_takes_parts() -> None:
    result = Agent("test:echo").run_sync(["Echo this", DocumentContent(PDF, "application/pdf")])
    assert result.transcript[0].parts[1] == DocumentContent(PDF, "application/pdf")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("prompt", "error", "match"),
    [
        (b"bytes", ArgumentTypeError, "prompt got"),
        ({"text": "hi"}, ArgumentTypeError, "prompt got"),
        (["fine", 3], ArgumentTypeError, r"prompt\[1\] got"),
        ([ImageContent(b"raw", "image/png")], ArgumentTypeError, r"prompt\[0\] is a ImageContent whose data"),  # type: ignore[arg-type]
        ([ImageContent(PNG, "png")], ArgumentValueError, "mime_type 'png'"),
        ([], ArgumentValueError, "no content"),
        (["  "], ArgumentValueError, "no content"),
    ],
)
def test_a_wrong_prompt_is_refused_where_it_is_given(prompt: object, error: type[Exception], match: str) -> None:
    agent = Agent("test:echo")
    with pytest.raises(error, match=match):
        agent.conversation(prompt)  # type: ignore[arg-type]


async def test_an_attachment_the_model_cannot_take_is_refused_before_anything_is_stored(tmp_path: object) -> None:
    calls: list[ModelRequest] = []

    class TextOnly(FunctionModel):
        input_kinds = frozenset({"image"})

    model = TextOnly(lambda request: calls.append(request) or "no")  # type: ignore[func-returns-value]
    agent = Agent(model, store=f"sqlite:///{tmp_path}/s.db")
    with pytest.raises(UnsupportedContentError) as raised:
        agent.conversation(["Listen.", AudioContent("UklGRg==", "audio/wav")], session_id="s")
    assert (
        str(raised.value)
        == "test model 'function' cannot take audio (audio/wav) in a user message; it takes text, image"
    )
    assert "\n" not in str(raised.value)
    assert calls == []
    result = await agent.run(["Look.", ImageContent(PNG, "image/png")], session_id="s")
    assert result.text == "no" and len(calls) == 1
    assert [m.text for m in result.transcript] == ["Look.", "no"]  # the refused prompt was never stored


def test_a_transcript_shows_a_user_message_s_attachments_as_placeholders() -> None:
    pdf = DocumentContent(PDF, "application/pdf", "r.pdf")
    message = UserMessage(parts=(TextContent("Compare."), ImageContent(PNG, "image/png"), pdf))
    shown = Transcript([message]).render()
    assert shown.splitlines()[:3] == [
        "user: Compare.",
        "[image: image/png, 24 bytes]",
        "[document r.pdf: application/pdf, 15 bytes]",
    ]


def test_attachments_count_toward_the_context_budget() -> None:
    from tooloop.context import EstimateCounter, FunctionCounter

    text_only = UserMessage("Compare.")
    wav = base64.b64encode(bytes(32_000)).decode()  # a second of 16 kHz 16-bit audio
    notes = base64.b64encode(b"x" * 400).decode()
    with_parts = UserMessage(
        parts=(
            TextContent("Compare."),
            ImageContent(PNG, "image/png"),
            AudioContent(wav, "audio/wav"),
            DocumentContent(notes, "text/markdown"),
            DocumentContent(PDF, "application/pdf"),
        )
    )
    for counter in (EstimateCounter(), FunctionCounter(len)):
        assert counter.count(with_parts) - counter.count(text_only) == 1_600 + 32 + 100 + 1_600
