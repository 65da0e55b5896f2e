"""A DBOS worker process for the durable tests: ``python -m tests.durable.worker --help``.

It serves the agent ``chaos``: each turn asks for three ``work`` calls at once, then one more,
then answers ``done <prompt>`` (a prompt starting with ``poison`` gets a broken stream every
time). Every tool execution and model request is appended (fsync'd) to the effects log;
``work`` also inserts one row per ``idempotency_key`` into the store database, as a tool with
side effects should. ``TOOLOOP_TEST_KILL=<point>:<prompt>`` makes the worker kill itself at one
point of one turn (``after_prompt``, ``after_tool``, ``mid_stream``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sqlite3
import time
from typing import Any

from tooloop import (
    Agent,
    ModelRequest,
    ModelResponse,
    ProviderConnectionError,
    TextDelta,
    ToolCall,
    ToolCallMessage,
    ToolContext,
    UserMessage,
    tool,
)
from tooloop.durable.dbos import DurableAgents

OPTIONS: Any = None


def log(line: str) -> None:
    fd = os.open(OPTIONS.effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{time.time():.6f} {os.getpid()} {line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def kill_point(point: str, prompt: str) -> None:
    if os.environ.get("TOOLOOP_TEST_KILL") == f"{point}:{prompt}" and not os.path.exists(OPTIONS.effects + f".{point}"):
        open(OPTIONS.effects + f".{point}", "w").close()  # once: the restarted worker goes on
        log(f"kill {point} {prompt}")
        os.kill(os.getpid(), signal.SIGKILL)


def record_effect(key: str) -> None:
    if OPTIONS.store.startswith("sqlite"):
        conn = sqlite3.connect(OPTIONS.store.removeprefix("sqlite:///"), timeout=30)
        with conn:
            conn.execute("INSERT INTO effects (key) VALUES (?) ON CONFLICT (key) DO NOTHING", (key,))
        conn.close()
        return
    import psycopg

    deadline = time.monotonic() + 120
    while True:  # a tool with a side effect in a database that may be restarting tries again
        try:
            with psycopg.connect(OPTIONS.store, autocommit=True, connect_timeout=5) as pg:
                pg.execute("INSERT INTO effects (key) VALUES (%s) ON CONFLICT (key) DO NOTHING", (key,))
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@tool
async def work(step: str, context: ToolContext) -> str:
    """Do one step of work with a side effect.

    Args:
        step: The step.
    """
    prompt = step.rsplit("-", 1)[0]
    log(f"tool-start {step}")
    await asyncio.to_thread(record_effect, context.idempotency_key)
    await asyncio.sleep(random.uniform(OPTIONS.tool_min, OPTIONS.tool_max))
    kill_point("after_tool", prompt)
    log(f"tool-end {step}")
    return f"{step} ok"


class ChaosModel:
    """Three calls, one call, an answer; text is streamed when the loop listens."""

    name = "chaos"
    provider = "test"

    async def respond(self, request: ModelRequest, on_event: Any = None) -> ModelResponse:
        last_user = max(i for i, m in enumerate(request.messages) if isinstance(m, UserMessage))
        prompt = request.messages[last_user].text  # type: ignore[union-attr]
        done = sum(isinstance(m, ToolCallMessage) for m in request.messages[last_user:])
        log(f"model {prompt} {done}")
        kill_point("after_prompt", prompt)
        if prompt.startswith("poison"):  # a model that never answers properly
            raise ProviderConnectionError("the stream ended before the response was complete", provider="test")
        if done == 0:
            return ModelResponse(
                tool_calls=[ToolCall(f"{prompt}-c{i}", "work", {"step": f"{prompt}-c{i}"}) for i in (1, 2, 3)]
            )
        if done == 3:
            return ModelResponse(tool_calls=[ToolCall(f"{prompt}-c4", "work", {"step": f"{prompt}-c4"})])
        text = f"done {prompt}"
        if on_event is not None:
            on_event(TextDelta(text[:3]))
            kill_point("mid_stream", prompt)
            await asyncio.sleep(0.05)
            on_event(TextDelta(text[3:]))
        return ModelResponse(text)


async def main() -> None:
    global OPTIONS
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True, help="DBOS system database URL")
    parser.add_argument("--store", required=True, help="tooloop store URL")
    parser.add_argument("--executor", required=True)
    parser.add_argument("--effects", required=True)
    parser.add_argument("--recover", action="append", default=[])
    parser.add_argument("--worker-concurrency", type=int, default=4)
    parser.add_argument("--tool-min", type=float, default=0.1)
    parser.add_argument("--tool-max", type=float, default=0.4)
    parser.add_argument("--sweep", type=float, default=0.0, help="run the sweeper: dead after this many seconds")
    OPTIONS = parser.parse_args()
    durable = DurableAgents(worker_concurrency=OPTIONS.worker_concurrency, polling_interval=0.2)
    durable.register("chaos", Agent(ChaosModel(), tools=[work], store=OPTIONS.store))  # type: ignore[arg-type]
    await durable.launch(system_database_url=OPTIONS.db, executor_id=OPTIONS.executor, application_version="test-1")
    if OPTIONS.recover:
        await durable.recover(OPTIONS.recover)
    if OPTIONS.sweep:
        durable.start_sweeper(interval=OPTIONS.sweep / 4, dead_after=OPTIONS.sweep)
    log(f"ready {OPTIONS.executor}")
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
