"""``tooloop web`` timings (not a test): ``python bench/web_bench.py [--sessions N] [postgresql://...]``.

Builds a store with one 10,000-message session and N (default 100,000) small sessions, starts
``tooloop web`` on it as a real server, and times full page loads over HTTP (median of 7):

* the session list (newest first, sorted by tokens and by cost, a full-text search, a filter);
* the 10,000-message session (its first and its last page) and its live fragment.

The small sessions are written in bulk with SQL in one transaction for speed; the store's own
triggers index them exactly as they index what ``append`` writes. Without a PostgreSQL URL only
SQLite is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tooloop.messages import AssistantMessage, Message, ToolCallMessage, UserMessage
from tooloop.store import open_store
from tooloop.transcript import message_to_dict

WORDS = ("invoice", "weather", "refactor", "translate", "summarise", "schedule", "deploy", "lighthouse")


def turn(i: int) -> list[Message]:
    return [
        UserMessage(f"question {i} about {WORDS[i % len(WORDS)]} " + "x" * 120),
        ToolCallMessage(
            tool_name="lookup", tool_call_id=f"c{i}", batch_id=f"b{i}", arguments={"q": i}, content="r" * 200
        ),
        AssistantMessage(f"answer {i} " + "y" * 120),
    ]


async def build(url: str, sessions: int) -> None:
    async with open_store(url) as store:
        messages = [m for i in range(3334) for m in turn(i)][:10_000]
        for start in range(0, len(messages), 1000):
            await store.append("big", messages[start : start + 1000])
        await store.set_metadata("big", title="The 10,000-message session")
    rows = _small_sessions(sessions)
    if url.startswith("sqlite"):
        _bulk_sqlite(url, rows)
    else:
        _bulk_postgres(url, rows)


def _small_sessions(count: int) -> list[tuple[str, str, list[str], str]]:
    now = time.time()
    sessions = []
    for n in range(count):
        data = [json.dumps(message_to_dict(m), separators=(",", ":")) for m in turn(n)]
        cost = f"0.{(n * 7919) % 100000:05d}"
        usage = json.dumps(
            {"input_tokens": n % 997, "output_tokens": n % 89, "requests": 1, "tool_calls": 1, "cost": cost}
        )
        sessions.append((f"s{n:06d}", f"{now - n:.3f}", data, usage))
    return sessions


def _tokens(usage: str) -> int:
    data = json.loads(usage)
    return int(data["input_tokens"] + data["output_tokens"])


def _bulk_sqlite(url: str, sessions: list[tuple[str, str, list[str], str]]) -> None:
    import sqlite3

    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    with conn:
        conn.executemany(
            "INSERT INTO tooloop_sessions (id, title, model, created_at, updated_at, version, message_count, usage, "
            "tokens, tool_calls, cost) VALUES (?, ?, 'bench:model', ?, ?, 3, 3, ?, ?, 1, ?)",
            [
                (sid, f"session {sid}", float(at), float(at), usage, _tokens(usage), json.loads(usage)["cost"])
                for sid, at, _, usage in sessions
            ],
        )
        conn.executemany(
            "INSERT INTO tooloop_messages (session_id, seq, pos, tool_call_id, status, format, data) "
            "VALUES (?, ?, ?, ?, ?, 1, ?)",
            [
                (sid, i, i, "c" if i == 1 else None, "ok" if i == 1 else None, text)
                for sid, _, data, _ in sessions
                for i, text in enumerate(data)
            ],
        )
    conn.close()


def _bulk_postgres(url: str, sessions: list[tuple[str, str, list[str], str]]) -> None:
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO tooloop_sessions (id, title, model, created_at, updated_at, version, message_count, usage, "
            "tokens, tool_calls, cost) VALUES (%s, %s, 'bench:model', %s, %s, 3, 3, %s, %s, 1, %s)",
            [
                (sid, f"session {sid}", float(at), float(at), usage, _tokens(usage), json.loads(usage)["cost"])
                for sid, at, _, usage in sessions
            ],
        )
        cur.executemany(
            "INSERT INTO tooloop_messages (session_id, seq, pos, tool_call_id, status, format, data) "
            "VALUES (%s, %s, %s, %s, %s, 1, %s)",
            [
                (sid, i, i, "c" if i == 1 else None, "ok" if i == 1 else None, text)
                for sid, _, data, _ in sessions
                for i, text in enumerate(data)
            ],
        )


def timed(url: str, repeat: int = 7) -> tuple[float, int]:
    """Median seconds to fetch ``url`` whole, and the page's size in bytes."""
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            size = len(response.read())
        times.append(time.perf_counter() - started)
    return statistics.median(times), size


def measure(url: str, label: str) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "tooloop", "web", "--store", url, "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        found = re.search(r"http://\S+?/", server.stdout.readline())
        assert found, "tooloop web did not print its address"
        base = found.group(0).rstrip("/")
        pages = {
            "sessions, newest first": "/",
            "sessions, by tokens": "/?order=tokens",
            "sessions, by tokens, fewest first": "/?order=tokens&dir=asc",
            "sessions, by cost": "/?order=cost",
            "sessions, by cost, page 100": "/?order=cost&page=100",
            "sessions, page 100": "/?page=100",
            "sessions, search 'lighthouse'": "/?q=lighthouse",
            "sessions, stop reason filter": "/?stop=end_turn&model=bench%3Amodel",
            "10,000-message session, first page": "/s/big",
            "10,000-message session, last page": "/s/big?page=50",
            "10,000-message session, live fragment": "/s/big/live?page=50",
        }
        print(f"\n{label}")
        for name, path in pages.items():
            seconds, size = timed(base + path)
            print(f"  {name:42s} {seconds * 1000:8.1f} ms  ({size / 1024:.0f} KiB)")
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("postgres", nargs="?", help="a PostgreSQL URL (an empty database) to measure too")
    parser.add_argument("--sessions", type=int, default=100_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        started = time.perf_counter()
        asyncio.run(build(url, options.sessions))
        print(f"SQLite store built in {time.perf_counter() - started:.0f} s")
        measure(url, f"SQLite, {options.sessions:,} sessions + one of 10,000 messages")
    if options.postgres:
        started = time.perf_counter()
        asyncio.run(build(options.postgres, options.sessions))
        print(f"PostgreSQL store built in {time.perf_counter() - started:.0f} s")
        measure(options.postgres, f"PostgreSQL, {options.sessions:,} sessions + one of 10,000 messages")


if __name__ == "__main__":
    main()
