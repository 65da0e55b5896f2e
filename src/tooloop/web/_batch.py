"""A ``run_many`` results file summarised: stop reasons, rewards, cost, the slowest and the failed."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..errors import CorruptDataError
from ..messages import Message
from ..transcript import Transcript

__all__ = ["BatchFile", "read_batch", "transcript_of"]

_MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BatchFile:
    """What the page shows of one results file."""

    path: Path
    records: tuple[dict[str, Any], ...]
    problems: tuple[str, ...]
    stop_reasons: tuple[tuple[str, int], ...]
    rewards: tuple[float, ...]
    costs: tuple[Decimal, ...]
    errors: tuple[dict[str, Any], ...]
    slowest: tuple[dict[str, Any], ...]
    reward_buckets: tuple[tuple[str, int], ...] = field(default=())

    @property
    def total_cost(self) -> Decimal | None:
        """The sum of the known costs; None when no record has one."""
        return sum(self.costs, Decimal(0)) if self.costs else None

    def reward_summary(self) -> dict[str, float] | None:
        """Min, mean, median and max of the rewards, or None without any."""
        if not self.rewards:
            return None
        return {
            "min": min(self.rewards),
            "mean": statistics.fmean(self.rewards),
            "median": statistics.median(self.rewards),
            "max": max(self.rewards),
        }

    def record(self, item_id: str) -> dict[str, Any] | None:
        """The record of conversation ``item_id``."""
        return next((r for r in self.records if str(r.get("id")) == item_id), None)


def read_batch(name: str | Path) -> BatchFile:
    """Read a results file; a line that cannot be read is reported and the others are kept."""
    path = Path(name).expanduser()
    if path.suffix != ".jsonl":
        raise CorruptDataError(f"{path} is not a .jsonl results file")
    if path.stat().st_size > _MAX_BYTES:
        raise CorruptDataError(f"{path} is over {_MAX_BYTES // 2**20} MB: too large to open here")
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                problems.append(f"line {number} cannot be read: {exc}")
                continue
            if not isinstance(record, dict) or "id" not in record:
                problems.append(f"line {number} is not a conversation record (no id)")
                continue
            records.append(record)
    return _summarise(path, records, problems)


def _summarise(path: Path, records: list[dict[str, Any]], problems: list[str]) -> BatchFile:
    rewards = [r for r in (_reward(rec) for rec in records) if r is not None]
    costs = [c for c in (_cost(rec) for rec in records) if c is not None]
    slowest = sorted(records, key=lambda r: _number(r.get("elapsed_s")) or 0.0, reverse=True)[:10]
    return BatchFile(
        path=path,
        records=tuple(records),
        problems=tuple(problems),
        stop_reasons=tuple(Counter(str(r.get("stop_reason")) for r in records).most_common()),
        rewards=tuple(rewards),
        costs=tuple(costs),
        errors=tuple(r for r in records if r.get("error")),
        slowest=tuple(slowest),
        reward_buckets=_buckets(rewards),
    )


def _buckets(values: list[float], count: int = 10) -> tuple[tuple[str, int], ...]:
    if not values:
        return ()
    low, high = min(values), max(values)
    if low == high:
        return ((f"{low:g}", len(values)),)
    width = (high - low) / count
    tally = Counter(min(int((v - low) / width), count - 1) for v in values)
    return tuple((f"{low + i * width:.3g} to {low + (i + 1) * width:.3g}", tally.get(i, 0)) for i in range(count))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _reward(record: dict[str, Any]) -> float | None:
    metadata = record.get("metadata")
    found = metadata.get("reward") if isinstance(metadata, dict) else None
    return _number(record.get("reward", found))


def _cost(record: dict[str, Any]) -> Decimal | None:
    usage = record.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    if cost is None:
        return None
    try:
        return Decimal(str(cost))
    except InvalidOperation:
        return None


def transcript_of(record: dict[str, Any]) -> list[Message]:
    """The conversation of a record (CorruptDataError when it cannot be read)."""
    data = record.get("transcript")
    if not isinstance(data, dict):
        raise CorruptDataError(f"conversation {record.get('id')!r} has no transcript")
    try:
        return list(Transcript.from_json(data))
    except CorruptDataError as exc:
        raise CorruptDataError(f"conversation {record.get('id')!r}: {exc}") from exc
