"""Store fixtures: SQLite files under tmp_path, and a real PostgreSQL server started for the session.

PostgreSQL: when ``TOOLOOP_TEST_POSTGRES_URL`` is set, tests use that server (each test gets its
own database). Otherwise ``initdb`` and ``pg_ctl`` (found on PATH or under
/usr/lib/postgresql/*/bin) start a throwaway server on a free 127.0.0.1 port, as the ``postgres``
user when running as root. When no server can be started, PostgreSQL tests are skipped with the
reason, and a line in the summary says so.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tooloop.store import BaseStore, open_store

_PG_PROBLEM: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for problem in _PG_PROBLEM:
        terminalreporter.write_sep("!", f"PostgreSQL store tests were SKIPPED: {problem}", yellow=True, bold=True)


def _pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(base: Path) -> tuple[str, list[str]]:
    url, start, stop = _init_server(base)
    subprocess.run(start, check=True, capture_output=True, text=True, timeout=90)
    return url, stop


def _init_server(base: Path) -> tuple[str, list[str], list[str]]:
    """A new cluster under ``base``: its URL and the commands that start and stop it."""
    bindir = _pg_bin()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (pg_ctl) found; apt-get install postgresql")
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = base / "data", _free_port()
    run = lambda *args: subprocess.run([*as_user, *args], check=True, capture_output=True, text=True, timeout=90)  # noqa: E731
    run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    start = [*pg_ctl, "-o", options, "-l", str(base / "log"), "-w", "-t", "60", "start"]
    stop = [*pg_ctl, "-m", "immediate", "-w", "stop"]
    return f"postgresql://postgres@127.0.0.1:{port}/postgres", start, stop


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a running PostgreSQL server's maintenance database."""
    url = os.environ.get("TOOLOOP_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    base = Path(tempfile.mkdtemp(prefix="tooloop-pg-"))
    try:
        url, stop = _start_server(base)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        problem = f"could not start a PostgreSQL server: {exc} {detail}".strip()
        _PG_PROBLEM.append(problem[:300])
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(problem)
    try:
        yield url
    finally:
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@dataclass
class Cluster:
    """A PostgreSQL server a test owns: it may stop it (as a crash would) and start it again."""

    url: str
    start_command: list[str]
    stop_command: list[str]

    def start(self) -> None:
        subprocess.run(self.start_command, check=True, capture_output=True, text=True, timeout=90)

    def stop(self) -> None:
        """Stop at once (``-m immediate``): clients see their connections dropped."""
        subprocess.run(self.stop_command, check=True, capture_output=True, text=True, timeout=90)


@pytest.fixture
def own_postgres() -> Iterator[Cluster]:
    """A PostgreSQL server of this test alone (skipped when none can be started)."""
    base = Path(tempfile.mkdtemp(prefix="tooloop-pg-own-"))
    try:
        url, start, stop = _init_server(base)
        cluster = Cluster(url, start, stop)
        cluster.start()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"could not start a PostgreSQL server: {exc}")
    try:
        yield cluster
    finally:
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server, dropped afterwards."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[BaseStore]:
    """An open store on each backend, closed afterwards."""
    async with open_store(store_url) as opened:
        yield opened


def execute_raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run SQL (``?`` placeholders) on the store's database, bypassing the store."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            with conn:
                rows = conn.execute(sql, params).fetchall()
        finally:
            conn.close()
        return rows
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        cursor = pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []
