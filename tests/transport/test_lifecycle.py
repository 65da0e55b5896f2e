"""A model outlives event loops, and the SDK path never shows a bad key, on both transports."""

from __future__ import annotations

import asyncio

import pytest

from tests.transport.conftest import KEY
from tests.transport.servers import Upstream
from tests.transport.test_parity import ask, everything
from tooloop.errors import ProviderError
from tooloop.models import get_model


@pytest.mark.parametrize("streamed", [False, True])
def test_aclose_after_asyncio_run_twice(transport: str, upstream: Upstream, token: str, streamed: bool) -> None:
    options = {} if transport == "default" else {"transport": transport}
    model = get_model("openai:gpt-4.1-mini", base_url=upstream.url("ok", token), api_key=KEY, **options)
    for _ in range(2):
        assert asyncio.run(ask(model, streamed)).text == "pong from ok"
    asyncio.run(model.aclose())  # the pools of both finished loops are let go, nothing raised
    assert upstream.seen[token].hits == 2


async def test_sdk_client_with_a_bad_key_never_shows_it(upstream: Upstream, token: str) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key=KEY + "\n", base_url=upstream.url("ok", token), max_retries=0)
    model = get_model("openai:gpt-4.1-mini", client=client)
    try:
        with pytest.raises(ProviderError) as caught:
            await ask(model, False)
        assert KEY not in everything(caught.value)
    finally:
        await client.close()
