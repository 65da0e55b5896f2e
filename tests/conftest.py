"""Shared fixtures. The network is off: every server a test talks to runs on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.wire import WireServer, serve


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A scripted provider server on 127.0.0.1 (see tests/support/wire.py)."""
    yield from serve()
