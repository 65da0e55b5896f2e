"""Worker processes, databases and the effects log for the durable tests."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.store.conftest import Cluster, own_postgres, postgres_server, postgres_url  # noqa: F401  (fixtures reused here)

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Workers:
    """Starts, kills and restarts DBOS worker processes; reads the effects log they share."""

    db: str
    store: str
    effects: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    kills: int = 0

    def start(
        self,
        executor: str,
        *,
        recover: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        sweep: float = 0,
        options: tuple[str, ...] = (),
    ) -> None:
        args = [sys.executable, "-m", "tests.durable.worker", "--db", self.db, "--store", self.store]
        args += ["--executor", executor, "--effects", str(self.effects), "--sweep", str(sweep), *options]
        for dead in recover:
            args += ["--recover", dead]
        ready = self.lines("ready")
        self.procs[executor] = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}", **(env or {})},
            stderr=subprocess.DEVNULL,
        )
        self.wait(lambda: len(self.lines("ready")) > len(ready), 90, f"worker {executor} to launch")

    def kill(self, executor: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[executor]
        proc.send_signal(sig)
        if sig == signal.SIGKILL:
            proc.wait()
            self.kills += 1

    def lines(self, kind: str | None = None) -> list[list[str]]:
        if not self.effects.exists():
            return []
        text = self.effects.read_text()
        # only whole lines: a read while a worker appends may see the start of its line alone
        rows = [line.split() for line in text[: text.rfind("\n") + 1].splitlines()]
        return [r for r in rows if kind is None or r[2] == kind]

    @staticmethod
    def wait(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.05)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()


EFFECTS_TABLE = "CREATE TABLE effects (key TEXT PRIMARY KEY)"
"""Where the test tool's side effects go, one row per idempotency key (made before workers start:
concurrent CREATE TABLE IF NOT EXISTS races in PostgreSQL)."""


@pytest.fixture
def sqlite_workers(tmp_path: Path) -> Iterator[Workers]:
    workers = Workers(f"sqlite:///{tmp_path}/dbos.sqlite", f"sqlite:///{tmp_path}/store.db", tmp_path / "effects.log")
    conn = sqlite3.connect(tmp_path / "store.db")
    conn.execute(EFFECTS_TABLE)
    conn.close()
    try:
        yield workers
    finally:
        workers.stop_all()


@pytest.fixture
def pg_workers(postgres_url: str, tmp_path: Path) -> Iterator[Workers]:  # noqa: F811
    import psycopg

    workers = Workers(postgres_url, postgres_url, tmp_path / "effects.log")
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute(EFFECTS_TABLE)
    try:
        yield workers
    finally:
        workers.stop_all()


@pytest.fixture
def outage_workers(own_postgres: Cluster, tmp_path: Path) -> Iterator[tuple[Workers, Cluster]]:  # noqa: F811
    """Workers on a PostgreSQL server the test owns, so it can stop and restart it under them."""
    import psycopg

    workers = Workers(own_postgres.url, own_postgres.url, tmp_path / "effects.log")
    with psycopg.connect(own_postgres.url, autocommit=True) as pg:
        pg.execute(EFFECTS_TABLE)
    try:
        yield workers, own_postgres
    finally:
        workers.stop_all()


async def outage(cluster: Cluster, seconds: float) -> float:
    """Stop the server at once, keep it down for ``seconds``, start it; returns how long it was down."""
    import asyncio

    started = time.monotonic()
    await asyncio.to_thread(cluster.stop)
    await asyncio.sleep(seconds)
    await asyncio.to_thread(cluster.start)
    return time.monotonic() - started
