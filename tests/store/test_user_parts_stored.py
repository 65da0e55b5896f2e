"""A prompt's images, audio and documents are stored with the session and sent again after a reload."""

from __future__ import annotations

import base64

from tooloop import Agent, AudioContent, DocumentContent, ImageContent, ModelRequest, TextContent, UserMessage
from tooloop.store import open_store
from tooloop.testing import FunctionModel

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
PARTS = (
    TextContent("Keep these."),
    ImageContent(PNG, "image/png"),
    AudioContent("UklGRg==", "audio/wav"),
    DocumentContent("JVBERi0=", "application/pdf", "a.pdf"),
)


async def test_user_parts_are_stored_and_reach_the_model_after_a_reload(store_url: str) -> None:
    requests: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        requests.append(request)
        return "Kept."

    await Agent(FunctionModel(answer), store=store_url).run(list(PARTS), session_id="s", turn_id="t1")
    async with open_store(store_url) as store:
        stored = await store.load("s")
    assert stored[0] == UserMessage(turn_id="t1", parts=PARTS)
    # a new agent (another process) continues the session: the first prompt goes with its parts
    await Agent(FunctionModel(answer), store=store_url).run("And?", session_id="s")
    assert requests[-1].messages[0] == UserMessage(turn_id="t1", parts=PARTS)
