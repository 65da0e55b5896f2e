"""Images in tool results reach the providers that take them natively; the others get the text form."""

from __future__ import annotations

import base64
from typing import Any

from tests.models import anthropic_wire as aw
from tests.models.test_anthropic import body as anthropic_body
from tests.models.test_anthropic import make as anthropic_model
from tests.models.test_gemini import model as gemini_model
from tests.models.test_gemini import reply as gemini_reply
from tests.models.test_openai_responses import message, response
from tests.models.test_openai_responses import model as responses_model
from tests.support.wire import WireServer, json_reply
from tooloop.messages import AudioContent, ImageContent, TextContent, ToolCallMessage, UserMessage
from tooloop.models import ModelRequest, get_model
from tooloop.outcome import render_parts

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
PARTS = (TextContent("Here it is."), ImageContent(PNG, "image/png"), AudioContent("AAAA", "audio/wav"))
CALL = ToolCallMessage(tool_name="draw", tool_call_id="call_1", content=render_parts(PARTS), parts=PARTS)
HISTORY = [UserMessage("Draw it."), CALL]


def sent(wire: WireServer) -> Any:
    return wire.requests[-1].json


async def test_anthropic_tool_result_content_blocks(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "Nice."}]))
    await anthropic_model(wire).respond(ModelRequest(HISTORY), lambda event: None)
    (result,) = [b for b in anthropic_body(wire)["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == [
        {"type": "text", "text": "Here it is."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "[audio: audio/wav, 3 bytes]"},
    ]


async def test_openai_responses_function_call_output_items(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("Nice.")])))
    await responses_model(wire, stream=False).respond(ModelRequest(HISTORY))
    (output,) = [i for i in sent(wire)["input"] if i.get("type") == "function_call_output"]
    assert output["output"] == [
        {"type": "input_text", "text": "Here it is."},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
        {"type": "input_text", "text": "[audio: audio/wav, 3 bytes]"},
    ]


async def test_gemini_function_response_parts(wire: WireServer) -> None:
    wire.queue(gemini_reply([{"text": "Nice."}]))
    await gemini_model(wire, stream=False).respond(ModelRequest(HISTORY))
    contents = sent(wire)["contents"]
    (response_part,) = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    function_response = response_part["functionResponse"]
    assert function_response["response"] == {"result": CALL.content}
    # the SDK sends a function response with its field names (the API reads both spellings)
    assert function_response["parts"] == [{"inline_data": {"mime_type": "image/png", "data": PNG}}]


async def test_openai_chat_gets_the_text_form(wire: WireServer) -> None:
    wire.queue(
        json_reply(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4.1",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Nice."}, "finish_reason": "stop"}
                ],
            }
        )
    )
    model = get_model("openai:gpt-4.1", base_url=f"{wire.url}/v1", api_key="sk-test", stream=False)
    try:
        await model.respond(ModelRequest(HISTORY))
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    (tool_message,) = [m for m in sent(wire)["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == "Here it is.\n[image: image/png, 32 bytes]\n[audio: audio/wav, 3 bytes]"
