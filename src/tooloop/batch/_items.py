"""What a batch runs: items with stable ids, and where each process gets its agent from."""

from __future__ import annotations

import importlib
import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass
from typing import Any

from ..agent import Agent
from ..errors import ConfigurationError

__all__ = [
    "AgentSource",
    "BatchItem",
    "Feed",
    "ItemLike",
    "coerce_items",
    "load_agent_source",
    "pending_items",
    "portable_source",
]


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One conversation of a batch.

    ``id`` names it in the results file: a rerun skips ids already there, so it must be stable
    (the same input item always gets the same id). ``metadata`` (JSON-compatible) is copied to
    its record, e.g. the reference answer an evaluation compares against.
    """

    id: str
    prompt: str
    metadata: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ConfigurationError(f"BatchItem.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.prompt, str) or not self.prompt:
            raise ConfigurationError(f"BatchItem {self.id!r}: prompt must be a non-empty str, got {self.prompt!r}")
        try:
            json.dumps(self.metadata)
        except (TypeError, ValueError) as exc:  # checked before the item runs: its record must be writable
            raise ConfigurationError(
                f"BatchItem {self.id!r}: metadata must be JSON-compatible (it is copied to the record): {exc}"
            ) from None


ItemLike = BatchItem | str | Mapping[str, Any]
"""A :class:`BatchItem`, a prompt (its id is its position), or a mapping with ``id`` and ``prompt``."""

AgentSource = Agent | Callable[[], Agent] | str
"""An :class:`Agent`, a function returning one, or the import path ``"package.module:name"`` of either."""


def coerce_item(position: int, item: ItemLike) -> BatchItem:
    """The :class:`BatchItem` for one input item."""
    if isinstance(item, BatchItem):
        return item
    if isinstance(item, str):
        return BatchItem(str(position), item)
    if isinstance(item, Mapping):
        if "prompt" not in item:
            raise ConfigurationError(f"batch item {position} has no 'prompt' key: {sorted(item)}")
        item_id = item.get("id", str(position))
        return BatchItem(item_id if isinstance(item_id, str) else str(item_id), item["prompt"], item.get("metadata"))
    raise ConfigurationError(
        f"batch item {position} is a {type(item).__name__}; give a BatchItem, a prompt str or a mapping"
    )


def coerce_items(items: Iterable[ItemLike]) -> Iterable[BatchItem]:
    """Each input item as a :class:`BatchItem`, lazily (a generator of a million items stays lazy).

    Two items with one id are a :class:`~tooloop.errors.ConfigurationError`: the second would
    write a second record, or be skipped as done. A prompt's id is its position, so a prompt at
    position 0 and an item with id ``"0"`` collide too.
    """
    if isinstance(items, str | bytes | Mapping):
        raise ConfigurationError("items must be an iterable of items, not a single str or mapping")
    return _unique(items)


def _unique(items: Iterable[ItemLike]) -> Iterator[BatchItem]:
    seen: dict[str, tuple[int, bool]] = {}  # id -> (position, whether its id came from its position)
    for position, item in enumerate(items):
        coerced = coerce_item(position, item)
        positional = isinstance(item, str) or (isinstance(item, Mapping) and "id" not in item)
        first = seen.setdefault(coerced.id, (position, positional))
        if first[0] != position:
            hint = (
                " (an item without an id gets its position as id: give every item an id, or none)"
                if positional or first[1]
                else ""
            )
            raise ConfigurationError(f"batch items {first[0]} and {position} both have the id {coerced.id!r}{hint}")
        yield coerced


def pending_items(items: Iterable[ItemLike], done: Mapping[str, bool]) -> Iterable[BatchItem]:
    """The items whose id is not in ``done``. A sized input (a list) is checked whole before
    anything runs; a lazy one as it is read (:class:`Feed` stops a batch cleanly at a bad item)."""
    coerced = (item for item in coerce_items(items) if item.id not in done)
    return list(coerced) if isinstance(items, Sized) else coerced


class Feed:
    """The items of a batch shared by its workers; a bad item ends the feed (in-flight conversations
    finish and are recorded) and :meth:`raise_error` raises it once the workers have stopped."""

    __slots__ = ("_items", "error")

    def __init__(self, items: Iterable[BatchItem]):
        self._items = iter(items)
        self.error: Exception | None = None

    def __iter__(self) -> Feed:
        return self

    def __next__(self) -> BatchItem:
        if self.error is not None:
            raise StopIteration
        try:
            return next(self._items)
        except StopIteration:
            raise
        except Exception as exc:
            self.error = exc
            raise StopIteration from None

    def raise_error(self) -> None:
        """Raise the error that ended the feed, if one did."""
        if self.error is not None:
            raise self.error


def load_agent_source(source: AgentSource) -> Agent:
    """The agent a source names."""
    value: Any = source
    if isinstance(source, str):
        value = _import(source)
    if not isinstance(value, Agent) and callable(value):
        value = value()
    if not isinstance(value, Agent):
        raise ConfigurationError(f"the agent source {source!r} gave a {type(value).__name__}, not an Agent")
    return value


def _import(path: str) -> Any:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"agent import path {path!r} must look like 'package.module:name'")
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r} for agent {path!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ConfigurationError(f"{module_name!r} has no attribute {attribute!r} (agent {path!r})") from None
    return value


def portable_source(source: AgentSource) -> AgentSource:
    """``source`` checked to reach another process: a string, or something that pickles."""
    if isinstance(source, str):
        return source
    try:
        pickle.dumps(source)
    except Exception as exc:
        raise ConfigurationError(
            "processes > 1 needs an agent other processes can rebuild: pass its import path "
            "('package.module:agent') or a module-level function that returns it "
            f"({type(source).__name__} cannot be pickled: {exc})"
        ) from exc
    return source
