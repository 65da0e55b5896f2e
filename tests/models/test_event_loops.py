"""One agent, many event loops: ``run_sync`` twice (each call runs its own loop) works on every adapter.

An SDK client's connections belong to the loop that opened them; the adapters keep one client per
loop, so a second ``asyncio.run`` does not reuse a pool whose loop is closed.
"""

from __future__ import annotations

import threading

import pytest

from tests.models import anthropic_wire
from tests.models.test_gemini import reply as gemini_reply
from tests.models.test_openai_responses import message, response
from tests.support.wire import Reply, WireServer, json_reply
from tooloop import Agent, get_model


def _openai_chat(text: str) -> Reply:
    return json_reply(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    )


def _replies(provider: str, text: str) -> Reply:
    if provider == "openai":
        return _openai_chat(text)
    if provider == "anthropic":
        return anthropic_wire.plain([{"type": "text", "text": text}])
    if provider == "google":
        return gemini_reply([{"text": text}])
    return json_reply(response([message(text)]))


BASE = {"openai": "/v1", "anthropic": "", "google": "", "openai-responses": "/v1"}
MODEL = {
    "openai": "gpt-4.1",
    "anthropic": "claude-haiku-4-5",
    "google": "gemini-2.5-flash",
    "openai-responses": "gpt-4.1",
}


@pytest.mark.parametrize("provider", list(BASE))
def test_run_sync_twice_and_from_another_thread(wire: WireServer, provider: str) -> None:
    wire.queue(*(_replies(provider, f"answer {i}") for i in range(3)))
    model = get_model(
        f"{provider}:{MODEL[provider]}", base_url=wire.url + BASE[provider], api_key="k", max_retries=0, max_tokens=1024
    )
    agent = Agent(model)

    assert agent.run_sync("one").text == "answer 0"
    assert agent.run_sync("two").text == "answer 1"
    answers: list[str] = []
    thread = threading.Thread(target=lambda: answers.append(agent.run_sync("three").text))
    thread.start()
    thread.join(30)
    assert answers == ["answer 2"]
