"""Image, audio and resource prompts through the official ACP SDK client: advertised where the
model takes them, sent to the model as content parts, refused (-32602) where it does not, replayed
by session/load."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from acp import RequestError, schema

from tests.acp_agent.support import ROOT, TIMEOUT, RecordingClient, new_session, spawn, text_reply
from tests.models import anthropic_wire as aw
from tests.support.wire import WireServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()

BLOCKS = [
    schema.TextContentBlock(type="text", text="Compare these."),
    schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
    schema.AudioContentBlock(type="audio", data=WAV, mime_type="audio/wav"),
    schema.EmbeddedResourceContentBlock(
        type="resource",
        resource=schema.BlobResourceContents(uri="file:///home/user/report.pdf", blob=PDF, mime_type="application/pdf"),
    ),
    schema.EmbeddedResourceContentBlock(
        type="resource", resource=schema.TextResourceContents(uri="file:///home/user/a.txt", text="alpha")
    ),
]
CHAT_CONTENT = [
    {"type": "text", "text": "Compare these."},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
    {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}},
    {"type": "text", "text": '<resource uri="file:///home/user/a.txt">\nalpha\n</resource>'},
]


async def _prompt(conn: object, session: str, blocks: list[object]) -> str:
    response = await asyncio.wait_for(conn.prompt(session_id=session, prompt=blocks), TIMEOUT)  # type: ignore[attr-defined]
    return str(response.stop_reason)


async def test_image_and_audio_prompts_are_advertised_and_reach_the_model_as_parts(
    wire: WireServer, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    wire.queue(text_reply("Same topic."))
    client = RecordingClient()
    async with spawn(client, wire, "--store", store) as (conn, _):
        capabilities = (await conn.initialize(protocol_version=1)).agent_capabilities
        assert capabilities is not None and capabilities.prompt_capabilities is not None
        assert capabilities.prompt_capabilities.image is True
        assert capabilities.prompt_capabilities.audio is True
        assert capabilities.prompt_capabilities.embedded_context is True
        session = await new_session(conn)
        assert await _prompt(conn, session, BLOCKS) == "end_turn"
        assert client.text(session) == "Same topic."
        assert wire.requests[0].json["messages"] == [{"role": "user", "content": CHAT_CONTENT}]

    replaying = RecordingClient()
    async with spawn(replaying, wire, "--store", store) as (conn, _):
        await conn.load_session(cwd=str(ROOT), session_id=session, mcp_servers=[])
        user = [u.content for u in replaying.of(session) if u.session_update == "user_message_chunk"]
        assert [block.type for block in user] == ["text", "image", "audio", "resource", "text"]
        assert (user[1].data, user[1].mime_type) == (PNG, "image/png")
        assert (user[2].data, user[2].mime_type) == (WAV, "audio/wav")
        assert (user[3].resource.blob, user[3].resource.mime_type) == (PDF, "application/pdf")
        assert user[3].resource.uri == "attachment:report.pdf"


def _anthropic(wire: WireServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": wire.url, "ANTHROPIC_API_KEY": "sk-ant-test"}


async def test_audio_is_not_advertised_and_refused_where_the_model_takes_none(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "A square."}]))
    client = RecordingClient()
    async with spawn(client, wire, "--model", f"anthropic:{aw.MODEL}", **_anthropic(wire)) as (conn, _):
        prompts = (await conn.initialize(protocol_version=1)).agent_capabilities.prompt_capabilities  # type: ignore[union-attr]
        assert prompts is not None and (prompts.image, prompts.audio) == (True, False)
        session = await new_session(conn)
        with pytest.raises(RequestError) as refused:
            await _prompt(conn, session, [BLOCKS[0], BLOCKS[2]])
        assert refused.value.code == -32602
        assert refused.value.data["details"] == (
            "audio content (audio/wav) is not accepted: the model takes text, document, image; "
            "this agent advertises text, image, resource_link, resource"
        )
        assert wire.requests == []
        # the session goes on: an image is taken
        assert await _prompt(conn, session, BLOCKS[:2]) == "end_turn"
        (message,) = aw.uncached(wire.requests[0].json)["messages"]
        assert message["content"] == [
            {"type": "text", "text": "Compare these."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]
