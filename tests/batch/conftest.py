from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.rollout_server import RolloutServer, serve_in_thread
from tooloop.transport.perloop import close_loop_clients


@pytest.fixture
def rollout(monkeypatch: pytest.MonkeyPatch) -> Iterator[RolloutServer]:
    """A rollout server on 127.0.0.1; ``ROLLOUT_URL`` names it for agents built in worker processes."""
    with serve_in_thread() as server:
        monkeypatch.setenv("ROLLOUT_URL", server.url)
        yield server


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    """Each test's event loop closes the HTTP clients its runs opened."""
    yield
    await close_loop_clients()
