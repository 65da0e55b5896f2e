"""Cassettes: record a run against a real model once, replay it offline and deterministically.

A :class:`Cassette` works at the :class:`~tooloop.models.base.Model` seam. Recording wraps a real
model, forwards every request to it and writes the request (neutral form, secrets scrubbed), the
response and the streamed deltas to a readable JSON file, saved atomically after each request.
Replaying needs no model: each request is compared with the recorded one, and the recorded
response is returned (its deltas re-emitted when the caller streams).

Tool call ids come from the recorded responses, so on replay the next request carries exactly the
ids that were recorded and they are compared like any other field. Only ``batch_id`` values, which
the loop may generate, are compared by their grouping (first batch, second batch...), not by value.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from ..errors import ConfigurationError, UserError
from ..events import EventHandler, ModelEvent
from ..messages import ModelResponse
from ..models.base import Model, ModelRequest
from ._codec import (
    event_from_dict,
    event_to_dict,
    events_for,
    request_to_dict,
    response_from_dict,
    response_to_dict,
)

__all__ = ["DEFAULT_MATCH", "Cassette", "CassetteError", "CassetteMismatchError", "CassetteModel"]

CASSETTE_VERSION = 1
"""Version of the cassette file format; newer files are refused."""

REQUEST_PARTS = ("messages", "tools", "settings", "output", "tool_choice")
DEFAULT_MATCH = frozenset(REQUEST_PARTS)
"""Parts of a request compared on replay: all of them."""

Mode = Literal["replay", "record", "auto"]


class CassetteError(UserError):
    """A cassette cannot be used: the file is missing, unreadable, or of a newer format."""


class CassetteMismatchError(CassetteError):
    """On replay the run sent a request the cassette did not record (or made too many or too few)."""


class Cassette:
    """A file of recorded model requests and responses.

    ``mode`` is ``"replay"`` (the file must exist), ``"record"`` (call the real model and write a
    new file, replacing an old one) or ``"auto"`` (replay when the file exists, else record).
    ``match`` names the request parts compared on replay (default: all of
    ``messages, tools, settings, output, tool_choice``); ``ignore_fields`` names message fields left
    out of the comparison (e.g. ``{"content", "result"}`` when a tool returns the current time).

    Use one cassette per run: requests are matched in order. As a context manager it checks on a
    clean exit that every recorded request was played.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Mode = "replay",
        *,
        match: Iterable[str] = DEFAULT_MATCH,
        ignore_fields: Iterable[str] = (),
    ) -> None:
        if mode not in ("replay", "record", "auto"):
            raise ConfigurationError(f"cassette mode must be 'replay', 'record' or 'auto', not {mode!r}")
        self.path = Path(path)
        self.match = frozenset(match)
        unknown = self.match - DEFAULT_MATCH
        if unknown:
            raise ConfigurationError(
                f"unknown cassette match part(s) {sorted(unknown)}; choose from {list(REQUEST_PARTS)}"
            )
        self.ignore_fields = frozenset(ignore_fields)
        self.recording = mode == "record" or (mode == "auto" and not self.path.exists())
        self.model_name: str | None = None
        self._entries: list[dict[str, Any]] = []
        self._played = 0
        if not self.recording:
            self._load()

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The recorded entries (``request``, ``response``, ``events``), as in the file."""
        return list(self._entries)

    @property
    def played(self) -> int:
        """How many requests were replayed (or recorded) so far."""
        return self._played

    def wrap(self, model: Model | Callable[[], Model] | None) -> CassetteModel:
        """A model that records ``model``'s answers, or replays them (``model`` may then be None).

        ``model`` may also be a function returning the model, called only when recording, so a
        replay never builds a real model (and never needs its API key).
        """
        if model is not None and not isinstance(model, Model):
            model = model() if self.recording else None
        if self.recording and model is None:
            raise ConfigurationError(f"recording cassette {str(self.path)!r} needs the real model to call")
        return CassetteModel(self, model)

    def model(self) -> CassetteModel:
        """A model that replays this cassette without a real model."""
        return self.wrap(None)

    def assert_all_played(self) -> None:
        """Raise :class:`CassetteMismatchError` when the run made fewer requests than were recorded."""
        if not self.recording and self._played < len(self._entries):
            raise CassetteMismatchError(
                f"cassette {str(self.path)!r} recorded {len(self._entries)} requests but the run made only "
                f"{self._played}; the next unplayed request starts with "
                f"{_describe_request(self._entries[self._played]['request'])}"
            )

    def __enter__(self) -> Cassette:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.assert_all_played()

    async def _respond(
        self, model: Model | None, request: ModelRequest, on_event: EventHandler | None
    ) -> ModelResponse:
        if self.recording:
            assert model is not None  # checked by wrap()
            return await self._record(model, request, on_event)
        return self._replay(request, on_event)

    async def _record(self, model: Model, request: ModelRequest, on_event: EventHandler | None) -> ModelResponse:
        request_data = request_to_dict(request)
        events: list[ModelEvent] = []
        handler: EventHandler | None = None
        if on_event is not None:

            def handler(event: ModelEvent) -> None:
                events.append(event)
                on_event(event)

        response = await model.respond(request, handler)
        self.model_name = model.name
        self._entries.append(
            {
                "request": request_data,
                "response": response_to_dict(response),
                "events": [event_to_dict(event) for event in events],
            }
        )
        self._played += 1
        self.save()
        return response

    def _replay(self, request: ModelRequest, on_event: EventHandler | None) -> ModelResponse:
        number = self._played + 1
        if self._played >= len(self._entries):
            raise CassetteMismatchError(
                f"the run made request {number} but cassette {str(self.path)!r} recorded only "
                f"{len(self._entries)}; the extra request ends with {_describe_request(request_to_dict(request))}"
            )
        entry = self._entries[self._played]
        try:
            recorded = _comparable(entry["request"], self.match, self.ignore_fields)
            response = response_from_dict(entry["response"])
            events = [event_from_dict(e) for e in entry.get("events") or ()]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CassetteError(f"entry {number} of cassette {str(self.path)!r} cannot be read: {exc!r}") from exc
        actual = _comparable(request_to_dict(request), self.match, self.ignore_fields)
        difference = _first_difference(recorded, actual, "")
        if difference is not None:
            raise CassetteMismatchError(_mismatch_text(self.path, number, entry["request"], *difference))
        self._played += 1
        if on_event is not None:
            for event in events or events_for(response):
                on_event(event)
        return response

    def save(self) -> None:
        """Write the cassette atomically (a temporary file renamed over the old one)."""
        data = {"version": CASSETTE_VERSION, "model": self.model_name, "interactions": self._entries}
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def _load(self) -> None:
        where = str(self.path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(
                f"cassette {where!r} does not exist; record it first with mode='record' or mode='auto'"
            ) from None
        except (OSError, ValueError) as exc:
            raise CassetteError(f"cassette {where!r} cannot be read: {exc}") from exc
        if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
            raise CassetteError(f"cassette {where!r} is not a cassette file (no 'interactions' list)")
        version = data.get("version")
        if not isinstance(version, int) or version > CASSETTE_VERSION:
            raise CassetteError(
                f"cassette {where!r} has format version {version!r}; this tooloop reads {CASSETTE_VERSION}"
            )
        self.model_name = data.get("model")
        self._entries = list(data["interactions"])


class CassetteModel:
    """The model a :class:`Cassette` hands out: records through the real model or replays."""

    def __init__(self, cassette: Cassette, model: Model | None) -> None:
        self.cassette = cassette
        self._model = model

    @property
    def name(self) -> str:
        """The real model's name, or the name recorded in the cassette."""
        if self._model is not None:
            return self._model.name
        return self.cassette.model_name or "cassette"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Record or replay one request."""
        return await self.cassette._respond(self._model, request, on_event)


def _comparable(request: Mapping[str, Any], match: frozenset[str], ignore_fields: frozenset[str]) -> dict[str, Any]:
    """The parts of a request dict that replay compares, with batch ids replaced by their order."""
    comparable = {part: request.get(part) for part in REQUEST_PARTS if part in match}
    if "messages" in comparable:
        batches: dict[str, str] = {}
        messages = []
        for message in comparable["messages"] or ():
            message = {key: value for key, value in message.items() if key not in ignore_fields}
            if "batch_id" in message:
                message["batch_id"] = batches.setdefault(message["batch_id"], f"batch {len(batches) + 1}")
            messages.append(message)
        comparable["messages"] = messages
    return comparable


_MISSING = object()


def _first_difference(recorded: Any, actual: Any, path: str) -> tuple[str, Any, Any] | None:
    """The path and both values of the first place where two JSON values differ."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in [*recorded, *(k for k in actual if k not in recorded)]:
            child = f"{path}.{key}" if path else str(key)
            found = _first_difference(recorded.get(key, _MISSING), actual.get(key, _MISSING), child)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for index in range(max(len(recorded), len(actual))):
            left = recorded[index] if index < len(recorded) else _MISSING
            right = actual[index] if index < len(actual) else _MISSING
            found = _first_difference(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if recorded is actual or (type(recorded) is type(actual) and recorded == actual):
        return None
    if isinstance(recorded, int | float) and isinstance(actual, int | float) and recorded == actual:
        return None
    return path, recorded, actual


def _mismatch_text(path: Path, number: int, request: Mapping[str, Any], where: str, recorded: Any, actual: Any) -> str:
    context = ""
    if where.startswith("messages["):
        index = int(where[len("messages[") : where.index("]")])
        messages = request.get("messages") or []
        if index < len(messages):
            context = f" ({_describe_message(messages[index])})"
    return (
        f"request {number} does not match cassette {str(path)!r} at {where}{context}:\n"
        f"  recorded: {_show(recorded)}\n"
        f"  actual:   {_show(actual)}\n"
        "If the change is intended, record again (mode='record', or delete the file with mode='auto'); "
        "to compare less, pass match= or ignore_fields= to Cassette."
    )


def _describe_message(message: Mapping[str, Any]) -> str:
    kind = message.get("kind", "?")
    if kind == "tool_call":
        return f"tool_call {message.get('tool_name')} id={message.get('tool_call_id')}"
    return f"{kind} message"


def _describe_request(request: Mapping[str, Any]) -> str:
    messages = request.get("messages") or []
    if not messages:
        return "no messages"
    last = messages[-1]
    text = last.get("text", last.get("content", ""))
    return f"{_describe_message(last)} {_show(text)}"


def _show(value: Any, limit: int = 200) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
