"""Counting a batch as it goes: progress on stderr, event-loop lag, and the final summary."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

from ..messages import Usage

__all__ = ["BatchSummary", "LagMonitor", "Tally"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSummary:
    """What a batch did: counts, stop reasons, tokens, time and throughput."""

    total: int
    """Items given (including those skipped because they were already in the results)."""
    skipped: int
    """Items already in the results file, not run again."""
    finished: int
    """Conversations run to an end by this call (errors included)."""
    errors: int
    """Conversations that ended with an error (their records carry it)."""
    stop_reasons: Mapping[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    elapsed_s: float = 0.0
    max_loop_lag_s: float = 0.0
    """The longest the event loop of any process was late: above ~0.1 s, use more processes."""
    processes: int = 1

    @property
    def conversations_per_second(self) -> float:
        """Finished conversations per second of wall time."""
        return self.finished / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def __str__(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.stop_reasons.items())) or "none"
        return (
            f"{self.finished} conversations in {self.elapsed_s:.1f} s "
            f"({self.conversations_per_second:.1f}/s, {self.processes} process(es)); "
            f"{self.errors} errors; {self.skipped} skipped as already done; stop reasons: {reasons}; "
            f"tokens in {self.usage.input_tokens} out {self.usage.output_tokens}; "
            f"max event-loop lag {self.max_loop_lag_s * 1000:.0f} ms"
        )


class Tally:
    """Running counts of a batch, optionally drawn as a progress line on a stream."""

    def __init__(self, total: int | None, skipped: int, *, show: bool | None, stream: TextIO | None = None):
        self.total = total
        self.skipped = skipped
        self.finished = 0
        self.errors = 0
        self.reasons: Counter[str] = Counter()
        self.usage = Usage()
        self.max_lag = 0.0
        self._stream = stream or sys.stderr
        self._live = self._stream.isatty()
        self._show = self._live if show is None else show
        self._start = time.perf_counter()
        self._drawn = 0.0

    def add(self, stop_reason: str, ok: bool, usage: Usage) -> None:
        """Count one finished conversation."""
        self.finished += 1
        self.errors += not ok
        self.reasons[stop_reason] += 1
        self.usage = self.usage + usage
        self._draw()

    def _draw(self, final: bool = False) -> None:
        if not self._show:
            return
        now = time.perf_counter()
        if not final and now - self._drawn < (0.2 if self._live else 10.0):
            return
        self._drawn = now
        elapsed = now - self._start
        done = self.finished + self.skipped
        rate = self.finished / elapsed if elapsed > 0 else 0.0
        of = f"/{self.total}" if self.total is not None else ""
        line = f"{done}{of} done, {rate:.1f} conv/s, {self.errors} errors, {elapsed:.0f} s"
        end = "\n" if final or not self._live else ""
        self._stream.write(("\r" if self._live else "") + line + end)
        self._stream.flush()

    def summary(self, processes: int) -> BatchSummary:
        """The final :class:`BatchSummary` (and the last progress line)."""
        self._draw(final=True)
        return BatchSummary(
            total=self.total if self.total is not None else self.finished + self.skipped,
            skipped=self.skipped,
            finished=self.finished,
            errors=self.errors,
            stop_reasons=dict(self.reasons),
            usage=self.usage,
            elapsed_s=time.perf_counter() - self._start,
            max_loop_lag_s=self.max_lag,
            processes=processes,
        )


class LagMonitor:
    """Measures how late the event loop wakes up: the sign that one process has too much to do."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.max_lag = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.max_lag = max(self.max_lag, time.perf_counter() - start - self.interval)

    def start(self) -> None:
        """Begin measuring on the running loop."""
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> float:
        """Stop and return the largest lag seen, in seconds."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        return self.max_lag
