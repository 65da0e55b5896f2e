"""A request body holds no more memory than its JSON: it is kept until the answer comes, a thousand at a burst."""

from __future__ import annotations

import tracemalloc

import pytest

from tooloop.transport.client import dumps, loads


@pytest.mark.parametrize("length", [300, 3000, 30000])
def test_an_encoded_body_holds_about_its_length(length: int) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * length}]}
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [dumps(body) for _ in range(50)]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename")) / len(kept)
    assert loads(kept[0]) == body
    assert held < len(kept[0]) + 512  # the bytes object itself, not the buffer the encoder grew
