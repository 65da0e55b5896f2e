"""Fixtures for adapter tests: models pointed at the wire server, closed when the test ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.billing import close_served_models
from tests.support.wire import WireServer
from tooloop.models import get_model
from tooloop.models.openai_chat import OpenAIChatModel


@pytest.fixture
async def models() -> AsyncIterator[list[OpenAIChatModel]]:
    """Models made in a test, closed at its end (their connection pools belong to its event loop)."""
    made: list[OpenAIChatModel] = []
    yield made
    for model in made:
        await model.aclose()


@pytest.fixture
def make_model(wire: WireServer, models: list[OpenAIChatModel]) -> Callable[..., OpenAIChatModel]:
    def make(spec: str = "openai:gpt-4.1-mini", **options: Any) -> OpenAIChatModel:
        options.setdefault("max_retries", 0)
        options.setdefault("base_url", wire.url + "/v1")
        options.setdefault("api_key", "sk-test-key")
        model = get_model(spec, **options)
        assert isinstance(model, OpenAIChatModel)
        models.append(model)
        return model

    return make


@pytest.fixture
async def served_models() -> AsyncIterator[None]:
    """Closes, when the test ends, the models ``tests.models.billing.served_model`` made in it."""
    yield
    await close_served_models()
