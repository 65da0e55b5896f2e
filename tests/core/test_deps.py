"""Dependencies: ``run(..., deps=value)`` reaches tools and hooks, typed, checked, and never stored."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tooloop import Agent, ArgumentTypeError, ArgumentValueError, Hooks, ModelResponse, StepContext, ToolContext
from tooloop.messages import ToolCall
from tooloop.testing import ScriptedModel

from ._support import call


@dataclass
class Database:
    """What an application hands its tools: a handle that must never be pickled or stored."""

    name: str
    rows: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def add(item: str, amount: int, ctx: ToolContext[Database]) -> int:
    """Add an amount to an item."""
    db = ctx.deps
    with db.lock:
        db.rows[item] = db.rows.get(item, 0) + amount
        return db.rows[item]


async def count(ctx: ToolContext[Database]) -> int:
    """How many items there are."""
    return len(ctx.deps.rows)


def calls(*items: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=items)


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            calls(
                call("add", {"item": "apples", "amount": 3}, "c1"), call("add", {"item": "pears", "amount": 2}, "c2")
            ),
            calls(call("count", {}, "c3")),
            "done",
        ]
    )


async def test_tools_and_hooks_receive_the_runs_deps() -> None:
    seen: list[str] = []

    def after(step: StepContext[Database]) -> None:
        seen.append(f"{step.deps.name}:{step.result.tool_name if step.result else '-'}")

    db = Database("shop")
    agent = Agent(script(), tools=[add, count], deps_type=Database, hooks=Hooks(after_tool_call=after))
    result = await agent.run("stock up", deps=db)
    assert db.rows == {"apples": 3, "pears": 2}
    assert [m.result for m in result.transcript.tool_invocations] == [3, 2, 2]
    assert sorted(seen) == ["shop:add", "shop:add", "shop:count"]
    # the schema the model sees has no trace of the context parameter
    assert agent.tools[0].parameters["properties"].keys() == {"item", "amount"}


async def test_each_run_gets_its_own_deps_from_one_agent() -> None:
    agent = Agent(
        ScriptedModel([calls(call("add", {"item": "x", "amount": 1})), "ok"]), tools=[add], deps_type=Database
    )
    first, second = Database("a"), Database("b")
    await agent.run("go", deps=first)
    again = agent.with_model(ScriptedModel([calls(call("add", {"item": "x", "amount": 5})), "ok"]))
    await again.run("go", deps=second)
    assert first.rows == {"x": 1} and second.rows == {"x": 5}


async def test_stream_and_conversation_carry_deps() -> None:
    db = Database("s")
    agent = Agent(script(), tools=[add, count], deps_type=Database)
    async with agent.stream("go", deps=db) as stream:
        async for _ in stream:
            pass
    assert db.rows == {"apples": 3, "pears": 2}
    other = Database("c")
    conversation = agent.with_model(script()).conversation("go", deps=other)
    async for _ in conversation:
        pass
    assert other.rows == {"apples": 3, "pears": 2}


async def test_deps_are_never_stored(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    db = Database("secret-handle-7f3a")
    agent = Agent(script(), tools=[add, count], deps_type=Database, store=f"sqlite:///{path}", session_id="s1")
    result = await agent.run("stock up", deps=db)
    assert result.transcript.final_text == "done"
    with sqlite3.connect(path) as connection:
        tables = [row[0] for row in connection.execute("select name from sqlite_master where type = 'table'")]
        dump = "\n".join(connection.iterdump())
    assert tables and "secret-handle-7f3a" not in dump


async def test_a_wrong_or_missing_deps_is_refused_where_given() -> None:
    agent = Agent(script(), tools=[add, count], deps_type=Database)
    with pytest.raises(ArgumentTypeError, match="deps must be a Database"):
        await agent.run("go", deps={"name": "shop"})
    with pytest.raises(ArgumentValueError, match="deps_type=Database"):
        await agent.run("go")
    with pytest.raises(ArgumentTypeError, match="deps_type"):
        Agent(script(), deps_type="Database")
    assert agent.deps_type is Database


async def test_without_deps_type_any_deps_or_none_is_accepted() -> None:
    def where(ctx: ToolContext) -> object:
        """Where the run is."""
        return ctx.deps

    agent = Agent(ScriptedModel([calls(call("where")), "ok", calls(call("where")), "ok"]), tools=[where])
    result = await agent.run("go")
    assert result.transcript.tool_invocations[0].result is None
    result = await agent.run("go", deps="here")
    assert result.transcript.tool_invocations[0].result == "here"
