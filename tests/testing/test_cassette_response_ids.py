"""A cassette replays a response's id and stop sequence as recorded."""

from __future__ import annotations

from pathlib import Path

from tooloop.messages import ModelResponse, Usage, UserMessage
from tooloop.models.base import ModelRequest
from tooloop.testing.cassette import Cassette

from .helpers import ListModel


async def test_a_replayed_response_keeps_its_id_and_stop_sequence(tmp_path: Path) -> None:
    path = tmp_path / "ids.json"
    original = ModelResponse("1, 2, 3", usage=Usage(4, 5), response_id="msg_01", stop_sequence="\n\nHuman:")
    request = ModelRequest([UserMessage("count")])
    await Cassette(path, "record").wrap(ListModel([original])).respond(request)
    replayed = await Cassette(path).model().respond(request)
    assert (replayed.response_id, replayed.stop_sequence) == ("msg_01", "\n\nHuman:")
    assert replayed == original
